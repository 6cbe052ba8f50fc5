-- relay.lua: apply one effect relayed from another slot's outbox, exactly
-- once. It runs alone, without lib.lua: its keys live in the target's slot.
--
-- KEYS[1] the effect's dedup marker (in the same slot as KEYS[2])
-- KEYS[2] the key the effect writes
-- ARGV[1] how long to remember the marker (ms)
-- ARGV[2] op; ARGV[3...] its arguments
-- Returns: 'applied', 'duplicate' (applied before: nothing written), or
--   'error: ' .. message (the write failed: nothing written).
-- Transitions: none.
local ALLOWED = {
  INCRBY = true, SET = true, HINCRBY = true, HSET = true, SADD = true,
  ZADD = true, XADD = true, RPUSH = true, PEXPIRE = true,
}
local op = ARGV[2]
if not ALLOWED[op] then return 'error: unsupported effect ' .. tostring(op) end
if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end
local args = {}
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
local ok = redis.pcall(op, KEYS[2], unpack(args))
if type(ok) == 'table' and ok.err then return 'error: ' .. ok.err end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 'applied'
