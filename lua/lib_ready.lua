-- lib_ready.lua: the prelude's ready lists: putting an available job
-- where claims find it, and scheduling one for later.

-- priority_of is the ready list a job's priority field names: a whole
-- number 0..MAX_PRIORITY. Anything else (absent, '1.5', 'nan', '12',
-- written by hand or an older release) is 0, as a job with no priority
-- is, so that the job still runs: avail_key of any other number is no
-- key (nil), and the push would raise after the call's earlier writes.
local function priority_of(p)
  p = tonumber(p) or 0
  if not (p >= 0 and p <= MAX_PRIORITY and p % 1 == 0) then p = 0 end
  return p
end

-- PIN_WORKERS indexes the workers whose pin lists hold entries (a zset,
-- every score 0, so that list.lua pages through it by name), for
-- listings: no command finds a partition's pin lists otherwise, and a
-- job pinned to a worker that is gone would be counted and never shown.
-- push_ready adds a worker as it pins a job to it (the unpinned path
-- pays nothing); whoever takes entries out of a pin list calls pin_left,
-- which drops the worker once its list is gone. Both are idempotent.
-- Pin lists made by an earlier release, before the index, are indexed by
-- the first maintenance pass over the partition (maintain.lua, from a
-- scan), which marks the index complete with the member '' (no worker).
-- A zset of another type (corrupt data) is set aside (call_aside).
local function pin_left(worker)
  if redis.call('EXISTS', pin_key(worker)) == 0 then call_aside('ZREM', PIN_WORKERS, nil, worker) end
end
-- PIN_INDEXED holds the workers this call indexed (push_ready): one ZADD
-- per worker per call, not per job, for a batch pinned to one worker
local PIN_INDEXED = {}

-- push_ready puts an available job where claims find it: the list of its
-- priority or, for a job that prefers a worker (F.sticky_worker), that
-- worker's pin list, with the time it is due in pinx: its fallback
-- (F.sticky_mode is 'a' to hand it to any worker, 'f' to fail it, after
-- F.sticky_delay ms; 'w' waits for ever) or its deadline, whichever is
-- sooner.
-- A job is pinned only with a worker that is no empty string and a mode:
-- enqueue and reroute write both, or neither, so an empty worker, or one
-- without a mode (corrupt data), pins nothing; every reader of the
-- routing (unlist, requeue_front, reroute.lua, claim.lua) reads it so.
-- keep (a claim listing anew a job whose place it doubts) keeps a
-- fallback deadline already running (ZADD NX) rather than start it over.
-- dl is the job's deadline field (F.deadline), which its callers read
-- with its routing: a job that waits for its worker alone is listed in
-- pinx at it.
local function push_ready(id, front, prio, sw, sm, sd, keep, dl)
  local key
  if sw == '' or not sm then sw = nil end
  if sw then
    redis.call('HDEL', job_key(id), F.sticky_fallback) -- pinned again (a retry, a reroute): its fallback starts over
    key = pin_key(sw)
    if not PIN_INDEXED[sw] then
      call_aside('ZADD', PIN_WORKERS, nil, 0, sw)
      PIN_INDEXED[sw] = true
    end
    -- at: when its fallback falls due, or its deadline, if it has one
    -- and that is sooner (a job that waits for its worker alone, 'w', has
    -- no fallback): a claim of any worker archives it then
    -- (promote_pinned), where only its own worker's claim, which may
    -- never come, would look at it before its fallback (an After or
    -- FailAfter past its deadline kept it available past its deadline)
    -- (count_of: 'nan' or 'inf', corrupt data, which tonumber takes,
    -- would be refused by ZADD after the call's writes)
    local at
    if sm == 'a' or sm == 'f' then at = NOW + (count_of(sd) or 0) end
    local d = count_of(dl) -- (none, '0' or corrupt data: nil or 0, no deadline)
    if d and d > 0 and not (at and at <= d) then at = d end
    if at then
      if keep then
        call_aside('ZADD', PIN_DEADLINES, nil, 'NX', at, id)
      else
        call_aside('ZADD', PIN_DEADLINES, nil, at, id)
      end
    end
  else
    local p = priority_of(prio)
    key = avail_key(p)
    mark_priority(p)
  end
  if front then
    call_aside('LPUSH', key, true, id) -- a corrupt list is set aside, not raised on
  else
    push_later(key, id)
  end
end

-- The scheduled index. Jobs due within SCHED_HORIZON ms of now are in the
-- sched zset (K_SCHED) by due time. A job due later waits in a bucket of
-- SCHED_BUCKET ms: bucket b is a list of job IDs (later_key(b)), listed in
-- the zset K_LATER by its start, b * SCHED_BUCKET. A list entry costs a
-- fifth of a zset entry's memory, and most delayed jobs and sleeping
-- workflows are due far ahead. Once a bucket's start comes within the
-- horizon, claims and maintenance move its jobs into sched (sched_near),
-- so that a job is in sched, at its exact due time, before it is due.
-- A bucket entry is not removed when its job leaves the bucket early (a
-- cancel, a run-now, a delete): sched_near skips an entry whose job is
-- no longer scheduled or retryable in that bucket (F.run_at), so a stale
-- entry costs its bytes until then and changes nothing. A job that
-- comes back to that bucket before it comes due (woken by a signal, then
-- asleep on the same timer) is listed there by its stale entry, which
-- F.later_left names (note_left, sched_add): a second entry would
-- list it twice, and a job woken and put back many times would fill the
-- bucket. The note is a hint only: sched_add finds the entry in the
-- bucket (LPOS, paid only by a job coming back) before it trusts it, as
-- the entry may be gone (the bucket came due by a clock since gone back,
-- or its value was set aside as corrupt data). A job indexed nowhere
-- would never run.
-- A due time that cannot be read as a finite number (absent, 'x', or
-- 'nan', 'inf', '1e400', which Lua's tonumber takes: corrupt data, never
-- written by Sluice for a scheduled or retryable job) names no place in
-- the index: each entry of the job is taken as its own, due at the
-- entry's time (a bucket's start), so that the job runs then rather
-- than being dropped as stale and lost. promote, sched_near, list.lua and
-- bulkdelete.lua read it so; Go's store.SchedIndex mirrors them.
local SCHED_BUCKET, SCHED_HORIZON = 5000, 5000
-- FAR is the due time of a job suspended on signals only (lib_waits.lua):
-- only a signal (or an operator) wakes it. It stays in sched.
local FAR = 4503599627370496 -- 2^52 ms
-- HOLD_AT: the due time of a held job (lib_enqueue.lua), never reached
-- (14 digits, which Lua writes as an integer). It stays in sched too,
-- and so does any due time at or past it (the year 5138): its release
-- (free_held) gives it a new score there, where a bucket would keep its
-- entry for ever, one more for each job ever held.
local HOLD_AT = 99999999999999

-- held_due is the due time of a held job with deadline dl (its field as
-- read, or enqueue's argument; '0' or absent: none, and so is one that is
-- no finite number, as claim reads it): its deadline, so that the claim
-- that meets it then archives it (deadline_exceeded) whether or not its
-- twin was released (a deadline bounds the job's useful life; at HOLD_AT
-- it stayed scheduled for ever, and a parent joining it waited for ever);
-- HOLD_AT when it has none.
local function held_due(dl)
  dl = tonumber(dl)
  if dl and dl > 0 and dl < HOLD_AT then return dl end
  return HOLD_AT
end

-- sched_bucket is the bucket of due time at, or nil when at belongs in
-- the sched zset.
local function sched_bucket(at)
  if at >= HOLD_AT then return nil end
  local b = math.floor(at / SCHED_BUCKET)
  if b * SCHED_BUCKET <= NOW + SCHED_HORIZON then return nil end
  return b
end

-- LEFT_NOTES bounds F.later_left: the last buckets of later jobs that a
-- job left early. A job that left more (woken and put off again and
-- again, each time to another bucket) may be listed twice in the oldest
-- should it come back to it: a listing shows it twice, and nothing else
-- changes. Notes of buckets come due since are not dropped by the
-- clock, which may go back (a failover) and make the bucket ahead again:
-- the LPOS in sched_add tells them.
-- (A note field is read to its first 256 bytes, room for all of them:
-- corrupt data must not cost a long scan.)
local LEFT_NOTES = 4

-- note_left notes in the job's F.later_left the bucket of due time at
-- (the job's F.run_at), which the job leaves before the bucket comes due
-- (run now, a signal, a join, a debounce, a cancel) leaving its entry
-- there (see the scheduled index, above); nothing when at is in sched.
local function note_left(jk, at)
  at = tonumber(at)
  if not (at and at > -math.huge and at < math.huge) then return end
  local b = sched_bucket(at)
  if not b then return end
  local bs, notes = string.format('%d', b), {}
  for w in string.gmatch(string.sub(redis.call('HGET', jk, F.later_left) or '', 1, 256), '%S+') do
    if w ~= bs and tonumber(w) then notes[#notes + 1] = w end
  end
  notes[#notes + 1] = bs
  while #notes > LEFT_NOTES do table.remove(notes, 1) end
  redis.call('HSET', jk, F.later_left, join(notes, ' '))
end

-- make_available puts a job at the back of its priority list (or pin list),
-- or at the front when it is handed back untouched (shutdown release).
local function make_available(jk, id, from, front)
  local h
  if from == 'scheduled' or from == 'retryable' then
    h = redis.call('HMGET', jk, F.priority, F.sticky_worker, F.sticky_mode, F.sticky_delay, F.deadline, F.run_at)
    redis.call('HSET', jk, F.state, SCODE.available)
    note_left(jk, h[6])
    redis.call('HDEL', jk, F.run_at)
  else
    redis.call('HSET', jk, F.state, SCODE.available)
    h = redis.call('HMGET', jk, F.priority, F.sticky_worker, F.sticky_mode, F.sticky_delay, F.deadline)
  end
  push_ready(id, front, h[1], h[2], h[3], h[4], nil, h[5])
  count(from, 'available')
  wake()
end

-- sched_add indexes the job id as due at at (ms). A bucket whose key
-- holds no list (corrupt data) is set aside as sched_near sets it aside,
-- and starts anew with this job: raising would fail the call after its
-- writes (an enqueue or ack batch's earlier jobs, their pushes deferred
-- to flush, listed nowhere). So is a sched or later zset of another type
-- (lib_batch.lua call_aside: a pcall here, call_aside only when it fails).
local function sched_add(id, at, jk)
  local b = sched_bucket(at)
  if not b then
    if type(redis.pcall('ZADD', K_SCHED, at, id)) == 'table' then call_aside('ZADD', K_SCHED, nil, at, id) end
    return
  end
  local bs = string.format('%d', b)
  -- a job that left this bucket early has its entry there still (the
  -- bucket is not due: none of it was popped), and K_LATER lists it
  local kept, notes = false, jk and redis.call('HGET', jk, F.later_left)
  if notes then
    local rest, back = {}, false
    for w in string.gmatch(string.sub(notes, 1, 256), '%S+') do
      if w == bs then back = true else rest[#rest + 1] = w end
    end
    if back then
      if #rest == 0 then
        redis.call('HDEL', jk, F.later_left)
      else
        redis.call('HSET', jk, F.later_left, join(rest, ' '))
      end
      -- unless the entry went with the bucket's value, set aside as
      -- corrupt (sched_add, sched_near), or with the bucket, come due by
      -- a clock since gone back: only a job coming back pays this lookup
      kept = type(redis.pcall('LPOS', later_key(bs), id)) == 'number'
    end
  end
  if not kept then call_aside('RPUSH', later_key(bs), 'later:' .. bs, id) end
  -- K_LATER lists the bucket even when the entry stands: the index may
  -- have been set aside (corrupt data) since, and a ZADD of it is a no-op
  if type(redis.pcall('ZADD', K_LATER, b * SCHED_BUCKET, bs)) == 'table' then
    call_aside('ZADD', K_LATER, nil, b * SCHED_BUCKET, bs)
  end
end

-- sched_near moves the jobs of the buckets whose start is within the
-- horizon into sched, up to limit entries; it returns how many it looked
-- at.
local function sched_near(limit)
  local moved = 0
  local fs, fr = F.state, F.run_at
  while moved < limit do
    local head = redis.call('ZRANGEBYSCORE', K_LATER, '-inf', NOW + SCHED_HORIZON, 'LIMIT', '0', '1')
    if #head == 0 then break end
    local bs = head[1]
    local b, lk = tonumber(bs), later_key(bs)
    local ids = redis.pcall('LPOP', lk, limit - moved)
    if type(ids) == 'table' and ids.err then
      -- the bucket's key holds no list (corrupt data): its jobs cannot be
      -- read; the value is set aside, and the bucket leaves the index, so
      -- that the bucket no longer fails every claim and maintenance pass
      set_aside(lk, 'later:' .. bs)
      redis.call('ZREM', K_LATER, bs)
      ids = false
    end
    if ids then
      moved = moved + #ids
      for _, id in ipairs(ids) do
        -- pcall: the entries are popped, and a key that is not a job hash
        -- must not raise now; it goes to sched at the bucket's start, for
        -- promote to meet as it would any other entry, and so does a
        -- scheduled or retryable job whose due time cannot be read
        local h = redis.pcall('HMGET', job_key(id), fs, fr)
        local s, at = 'scheduled', nil
        if not h.err then s, at = state_of(h[1]), tonumber(h[2]) end
        if at and not (at > -math.huge and at < math.huge) then at = nil end
        -- (and so does one whose state no release writes, at the bucket's
        -- start, for promote to archive: popped here, it would be on no
        -- index)
        if s == 'scheduled' or s == 'retryable' or s and not SCODE[s] then
          -- the bucket is popped: a sched of another type is set aside
          -- (call_aside), not raised on
          local score = false
          if not at or not SCODE[s] then
            score = b * SCHED_BUCKET
          elseif math.floor(at / SCHED_BUCKET) == b then
            score = at
          end
          if score and type(redis.pcall('ZADD', K_SCHED, score, id)) == 'table' then
            call_aside('ZADD', K_SCHED, nil, score, id)
          end
        end
      end
    end
    if redis.call('EXISTS', lk) == 0 then redis.call('ZREM', K_LATER, bs) end
  end
  return moved
end

-- schedule_at makes a job scheduled or retryable (state), due at at (ms),
-- or at its deadline when that is sooner: a retry's backoff, a snooze, a
-- rate limit's or a crash's delay past it would leave it pending past its
-- useful life (a parent joining it not told) until the claim that met it
-- archived it anyway (deadline_exceeded); at its deadline that claim
-- comes then. A deadline that is no finite number (corrupt data) is
-- none, as claim reads it. dl is the deadline when the caller read it
-- already (false: none); nil to read it here.
-- Not named schedule: schedule.lua says that word, which would make it
-- take this definition (prelude.go).
local function schedule_at(jk, id, from, state, at, dl)
  if dl == nil then dl = tonumber(redis.call('HGET', jk, F.deadline)) end
  if dl and dl > 0 and dl < at then at = dl end
  redis.call('HSET', jk, F.state, SCODE[state], F.run_at, at)
  sched_add(id, at, jk)
  count(from, state)
  wake()
end
