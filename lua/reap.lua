-- reap.lua: reclaim jobs whose lease expired (crashed, stalled or
-- partitioned workers).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: the most jobs to reap in this call.
-- Returns: flat list of id, new state, previous holder for each reaped job.
-- Transitions (each frees the job's concurrency slot, if it has one):
--   running -> available (crash_attempt+1, at the back of its
--   priority list: suspect demotion) or running -> quarantined at the crash
--   limit. Orphan provenance is recorded on the job: the previous holder
--   ('oh'), when its lease expired ('oe') and how often this happened ('on').
local expired = redis.call('ZRANGEBYSCORE', K_RUN, '-inf', NOW, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[9]))
local out = {}
for i = 1, #expired, 2 do
  local id, expiry = expired[i], expired[i + 1]
  local jk = job_key(id)
  local s, holder, ck = unpack(redis.call('HMGET', jk, 's', 'w', 'ck'))
  s = state_of(s)
  clear_lease(id)
  if s == 'running' then
    if ck then cc_release(ck) end
    holder = holder or ''
    redis.call('HSET', jk, 'oh', holder, 'oe', expiry)
    redis.call('HINCRBY', jk, 'on', 1)
    record_error(jk, id, 'lease_expired', 'lease expired while held by ' .. holder, '')
    out[#out + 1] = id
    out[#out + 1] = crash(jk, id, 'running')
    out[#out + 1] = holder
  end
end
flush()
return out
