-- enqueue.lua: add jobs to one partition.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of jobs n; then n groups of 15 fields:
--   id, kind, payload, run_at (absolute ms, 0 = none), delay (ms),
--   max_attempts, timeout (ms, 0 = none), deadline (absolute ms, 0 = none),
--   priority (0..9), headers (opaque bytes, may be empty), whether the ID
--   was chosen by the caller ('1': check for an existing job; '0': a fresh
--   random ID), and for a job spawned by a parent (else empty): the
--   parent's job ID, the parent's key prefix, the spawning step, the
--   parent's ID in its partition
-- Returns: one status per job, in order:
--   'new'       the job was added
--   'exists'    a job with this ID and the same kind and payload exists (no-op)
--   'conflict'  a job with this ID exists with another kind or payload
-- Transitions: (none) -> available | scheduled.
local n = tonumber(ARGV[9])
local out = {}
for i = 0, n - 1 do
  local b = 10 + i * 15
  local id, kind, payload = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local jk = job_key(id)
  local old = false
  if ARGV[b + 10] == '1' then old = redis.call('HMGET', jk, 'k', 'p') end
  if old and old[1] then
    if old[1] == kind and old[2] == payload then
      out[#out + 1] = 'exists'
    else
      out[#out + 1] = 'conflict'
    end
  else
    local run_at, delay = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
    local due = 0
    if run_at > 0 then due = run_at end
    if delay > 0 then due = NOW + delay end
    local state = 'available'
    if due > NOW then state = 'scheduled' end
    -- attempt, crash_attempt and fence start absent, meaning 0
    local f = { 'k', kind, 'p', payload, 's', state, 'ma', ARGV[b + 5], 'ct', NOW }
    local function opt(field, v, none)
      if v ~= none then
        f[#f + 1] = field
        f[#f + 1] = v
      end
    end
    opt('to', ARGV[b + 6], '0')
    opt('dl', ARGV[b + 7], '0')
    opt('pr', ARGV[b + 8], '0')
    opt('h', ARGV[b + 9], '')
    if ARGV[b + 11] ~= '' then
      for k, field in ipairs({ 'pa', 'pp', 'ps', 'pl' }) do opt(field, ARGV[b + 10 + k], nil) end
    end
    if state == 'scheduled' then opt('rt', due, nil) end
    redis.call('HSET', jk, unpack(f))
    if state == 'scheduled' then
      redis.call('ZADD', K_SCHED, due, id)
    else
      redis.call('RPUSH', avail_key(priority(ARGV[b + 8])), id)
    end
    count(nil, state)
    out[#out + 1] = 'new'
  end
end
if #out > 0 then wake() end
flush()
return out
