-- enqueue.lua: add jobs to one partition.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of jobs n; then n groups of 14 fields:
--   id, kind, payload, run_at (absolute ms, 0 = none), delay (ms),
--   max_attempts, timeout (ms, 0 = none), deadline (absolute ms, 0 = none),
--   priority (0..9), headers (opaque bytes, may be empty), and for a job
--   spawned by a parent (else empty): the parent's job ID, the parent's key
--   prefix, the spawning step, the parent's ID in its partition
-- Returns: one status per job, in order:
--   'new'       the job was added
--   'exists'    a job with this ID and the same kind and payload exists (no-op)
--   'conflict'  a job with this ID exists with another kind or payload
-- Transitions: (none) -> available | scheduled.
local n = tonumber(ARGV[9])
local out = {}
for i = 0, n - 1 do
  local b = 10 + i * 14
  local id, kind, payload = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local run_at, delay = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local jk = job_key(id)
  local old = redis.call('HMGET', jk, 'k', 'p')
  if old[1] then
    if old[1] == kind and old[2] == payload then
      out[#out + 1] = 'exists'
    else
      out[#out + 1] = 'conflict'
    end
  else
    redis.call('HSET', jk, 'k', kind, 'p', payload, 'ma', ARGV[b + 5], 'a', 0, 'c', 0, 'f', 0, 'ct', NOW)
    if ARGV[b + 6] ~= '0' then redis.call('HSET', jk, 'to', ARGV[b + 6]) end
    if ARGV[b + 7] ~= '0' then redis.call('HSET', jk, 'dl', ARGV[b + 7]) end
    if ARGV[b + 8] ~= '0' then redis.call('HSET', jk, 'pr', ARGV[b + 8]) end
    if ARGV[b + 9] ~= '' then redis.call('HSET', jk, 'h', ARGV[b + 9]) end
    if ARGV[b + 10] ~= '' then
      redis.call('HSET', jk, 'pa', ARGV[b + 10], 'pp', ARGV[b + 11], 'ps', ARGV[b + 12], 'pl', ARGV[b + 13])
    end
    local due = 0
    if run_at > 0 then due = run_at end
    if delay > 0 then due = NOW + delay end
    if due > NOW then
      schedule(jk, id, nil, 'scheduled', due)
    else
      make_available(jk, id, nil, false)
    end
    out[#out + 1] = 'new'
  end
end
return out
