-- enqueue.lua: add jobs to one partition.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of jobs n; then n groups of 27 fields:
--   id, kind, payload, run_at (absolute ms, 0 = none), delay (ms),
--   max_attempts, timeout (ms, 0 = none), deadline (absolute ms, 0 = none),
--   priority (0..9), headers (opaque bytes, may be empty), where the ID
--   comes from ('c': the caller chose it, so check for an existing job;
--   else a fresh random ID: 'g', or the creation time in ms it carries
--   (keys.LocalTime), which saves storing the created time when it agrees
--   with the store's to CT_SLACK ms), and for a job spawned by a parent
--   (else empty): the
--   parent's job ID, the parent's key prefix, the spawning step, the
--   parent's ID in its partition; then flow control (lib.lua): concurrency
--   key and limit, rate class, jobs, period (ms) and burst (empty/0: none);
--   then uniqueness: unique key (empty: none), how long it is held (ms, 0:
--   until the job finishes), and what a duplicate does to a job that has
--   not started ('', 'replace' its payload, 'debounce' its run time); then
--   sticky routing: preferred worker (empty: none), fallback ('w' wait,
--   'a' any worker after, 'f' fail after) and its delay (ms)
-- Returns: one status per job, in order:
--   'new'       the job was added
--   'exists'    a job with this ID and the same kind and payload exists (no-op)
--   'conflict'  a job with this ID exists with another kind or payload
--   'unique ' .. id  job id holds the unique key: nothing added
--   'taken'     the ID was a fresh random one ('0' above) but a job has it
--               (two producers drew the same ID): nothing added; the
--               caller retries with another ID
-- Transitions: (none) -> available | scheduled.
local n = tonumber(ARGV[9])
local out = {}
-- CT_SLACK (ms): a job whose generated ID carries a time this close to
-- the store's has no created-time field ('ct'): readers take the ID's.
local CT_SLACK = 50

-- due_of is the due time of the job at ARGV[b]: 0 for now.
local function due_of(b)
  local run_at, delay = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  if delay > 0 then return NOW + delay end
  if run_at > 0 then return run_at end
  return 0
end

-- unique_holder returns the ID of the job holding unique key uk, if one
-- does (a key left by a deleted job is free).
local function unique_holder(uk)
  local holder = redis.call('GET', PFX .. 'uq:' .. uk)
  if holder and redis.call('EXISTS', job_key(holder)) == 1 then return holder end
  return nil
end

-- on_duplicate applies a duplicate's policy to the holder, if it has not
-- started.
local function on_duplicate(holder, policy, payload, due)
  local jk = job_key(holder)
  local s = redis.call('HGET', jk, 's')
  if s ~= 'available' and s ~= 'scheduled' then return end
  if policy == 'replace' then
    local stale = chunk_fields(field_map(jk), 'p')
    if #stale > 0 then redis.call('HDEL', jk, unpack(stale)) end
    local f = {}
    put_chunked(f, 'p', payload)
    redis.call('HSET', jk, unpack(f))
  elseif policy == 'debounce' and due > NOW then
    redis.call('ZREM', K_SCHED, holder)
    schedule(jk, holder, s, 'scheduled', due) -- its available entry is now stale
  end
end
for i = 0, n - 1 do
  local b = 10 + i * 27
  local id, kind, payload = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local jk = job_key(id)
  local old = false -- { kind, payload } of an existing job with this ID
  local taken = false -- a fresh random ID that another job already has
  if redis.call('EXISTS', jk) == 1 then
    if ARGV[b + 10] == 'c' then
      local h = field_map(jk)
      old = { h.k, joined(h, 'p') }
    else
      taken = true
    end
  end
  local uk, holder = ARGV[b + 21], nil
  if uk ~= '' and not (old and old[1]) and not taken then holder = unique_holder(uk) end
  if taken then
    out[#out + 1] = 'taken'
  elseif holder then
    on_duplicate(holder, ARGV[b + 23], payload, due_of(b))
    out[#out + 1] = 'unique ' .. holder
  elseif old and old[1] then
    if old[1] == kind and old[2] == payload then
      out[#out + 1] = 'exists'
    else
      out[#out + 1] = 'conflict'
    end
  else
    local due = due_of(b)
    local state = 'available'
    if due > NOW then state = 'scheduled' end
    -- attempt, crash_attempt and fence start absent, meaning 0
    local f = { 'k', kind, 's', state }
    local id_ms = tonumber(ARGV[b + 10])
    if not id_ms or math.abs(NOW - id_ms) > CT_SLACK then f[5], f[6] = 'ct', NOW_S end
    if ARGV[b + 5] ~= DEFAULT_MAX_ATTEMPTS then f[#f + 1], f[#f + 2] = 'ma', ARGV[b + 5] end
    put_chunked(f, 'p', payload)
    local function opt(field, v, none)
      if v ~= none then
        f[#f + 1] = field
        f[#f + 1] = v
      end
    end
    opt('to', ARGV[b + 6], '0')
    opt('dl', ARGV[b + 7], '0')
    opt('pr', ARGV[b + 8], '0')
    if ARGV[b + 9] ~= '' then put_chunked(f, 'h', ARGV[b + 9]) end
    if ARGV[b + 11] ~= '' then
      for k, field in ipairs({ 'pa', 'pp', 'ps', 'pl' }) do opt(field, ARGV[b + 10 + k], nil) end
    end
    if state == 'scheduled' then opt('rt', due, nil) end
    if ARGV[b + 15] ~= '' then
      for k, field in ipairs({ 'ck', 'cn' }) do opt(field, ARGV[b + 14 + k], nil) end
    end
    if ARGV[b + 17] ~= '' then
      opt('rk', ARGV[b + 17], nil)
      rate_define(ARGV[b + 17], ARGV[b + 18], ARGV[b + 19], ARGV[b + 20])
    end
    if uk ~= '' then
      opt('uk', uk, nil)
      local ttl = tonumber(ARGV[b + 22])
      if ttl > 0 then
        redis.call('SET', PFX .. 'uq:' .. uk, id, 'PX', ttl)
      else
        redis.call('SET', PFX .. 'uq:' .. uk, id)
      end
    end
    local sw = ARGV[b + 24]
    if sw ~= '' then
      for k, field in ipairs({ 'sw', 'sm', 'sd' }) do opt(field, ARGV[b + 23 + k], nil) end
    else
      sw = nil
    end
    redis.call('HSET', jk, unpack(f))
    if state == 'scheduled' then
      redis.call('ZADD', K_SCHED, due, id)
    else
      push_ready(id, false, ARGV[b + 8], sw, ARGV[b + 25], ARGV[b + 26])
    end
    count(nil, state)
    out[#out + 1] = 'new'
  end
end
if #out > 0 then wake() end
flush()
return out
