-- heartbeat.lua: a worker tells the registry of live workers that it is
-- alive, what it serves and which jobs it runs; or that it stopped.
-- It runs alone: its keys share the registry's hash tag, not a partition's.
--
-- KEYS[1] the zset of workers by last heartbeat (keys.Workers.Live)
-- KEYS[2] this worker's hash (keys.Workers.Worker)
-- ARGV[1] now ms, or '' to use the store's TIME
-- ARGV[2] the worker's ID
-- ARGV[3] how long (ms) the worker counts as alive without a heartbeat;
--         '0' unregisters it
-- ARGV[4] the prefix of every worker's hash (keys.Workers.WorkerPrefix)
-- ARGV[5..] field, value pairs describing the worker (replace the hash);
--         to unregister, those naming the process that stops (host, pid,
--         started): a worker ID reused by a new process (a sticky
--         worker's stable ID, restarted) is registered by that process
--         once it beats, and the old one's stop leaves its entry, which
--         deleted would say a live worker is not (sluice workers, a
--         sticky.Wait reroute refused) until its next beat
-- Returns: the number of dead workers pruned from the zset.
-- Transitions: none. The hash expires ARGV[3] ms after the heartbeat; a
-- worker whose hash is gone is dead, and every heartbeat removes up to 16
-- of the dead whose last heartbeat is older than that from the zset.
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local ttl = tonumber(ARGV[3])
if ttl <= 0 then
  for i = 5, #ARGV - 1, 2 do
    -- a pcall: a key of another type (corrupt data) is no process's
    -- entry, and is deleted as before
    local v = redis.pcall('HGET', KEYS[2], ARGV[i])
    if type(v) == 'table' then break end
    if v and v ~= ARGV[i + 1] then return 0 end -- another process's now
  end
  redis.call('ZREM', KEYS[1], ARGV[2])
  redis.call('DEL', KEYS[2])
  return 0
end
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('DEL', KEYS[2])
if #ARGV >= 6 then redis.call('HSET', KEYS[2], unpack(ARGV, 5)) end
redis.call('HSET', KEYS[2], 'seen', now)
redis.call('PEXPIRE', KEYS[2], ttl)
local pruned = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - ttl, 'LIMIT', 0, 16)) do
  if redis.call('EXISTS', ARGV[4] .. id) == 0 then
    redis.call('ZREM', KEYS[1], id)
    pruned = pruned + 1
  end
end
return pruned
