-- enqueue.lua: add jobs to one partition.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of jobs n
-- ARGV[10]: their fields, packed as one list of strings (lib_pack.lua
--   unpack_args), in n groups. Each starts with
--   id, kind, payload, where the ID comes from ('c': the caller chose it,
--   so check for an existing job; 'f': a follow-up relayed from an outbox
--   or a child spawned by a parent's step, like 'c' but remembered for
--   RELAY_KEEP ms by a marker once its enqueue settles it (added, or
--   folded into a unique key's holder), so that a relay or a spawn
--   repeated after the job was deleted adds nothing; 't': a schedule's
--   tick, like 'f' with a marker kept TICK_KEEP ms; else a fresh
--   random ID: 'g', or the
--   creation time in ms it carries (keys.LocalTime), which saves storing
--   the created time when it agrees with the store's to CT_SLACK ms), and
--   'x' when 24 more fields follow (else '': a plain job, every one of them
--   at its default): run_at (absolute ms, 0 = none), delay (ms),
--   max_attempts, timeout (ms, 0 = none), deadline (absolute ms, 0 = none),
--   priority (0..9), headers (opaque bytes, may be empty), and for a job
--   spawned by a parent (else empty): the parent's job ID, the parent's
--   key prefix, the spawning step, the parent's ID in its partition; then
--   flow control (lib_limits.lua): concurrency key and limit, rate class, jobs,
--   period (ms) and burst (empty/0: none); then uniqueness: unique key
--   (empty: none), how long it is held (ms, 0: until the job finishes), and
--   what a duplicate does to a job that has not started ('', 'replace' its
--   payload, 'debounce' its run time); then sticky routing: preferred
--   worker (empty: none), fallback ('w' wait, 'a' any worker after, 'f'
--   fail after) and its delay (ms); then the quarantine hold: the job's
--   fingerprint (kind and arguments; empty: no hold). A job with a
--   fingerprint whose twin (lib.lua qh:) is quarantined is added held:
--   scheduled at HOLD_AT, never due, until that job is released or deleted
--   (lib_lifecycle.lua free_held); one with a deadline is due at its
--   deadline instead (lib_ready.lua held_due), archived then
--   (deadline_exceeded) by the claim that meets it. Most jobs are plain, and their five fields are
--   all Lua copies.
-- Returns: n, the number of jobs, when every job was added (the common
--   case: an integer costs both sides less than a status per job); else
--   one status per job, in order:
--   'new'       the job was added
--   'exists'    a job with this ID and the same kind and payload exists (no-op)
--   'conflict'  a job with this ID exists with another kind or payload
--   'unique ' .. id  job id holds the unique key: nothing added
--   'held ' .. id    added, held behind quarantined job id (same fingerprint)
--   'malformed' a key the job's options need (its unique key, rate class
--               bucket or quarantine hold list) holds another type than
--               Sluice wrote: nothing written for it
--   'taken'     the ID was a fresh random one ('0' above) but a job has it
--               (two producers drew the same ID): nothing added; the
--               caller retries with another ID
--   'past_deadline ' .. deadline .. ' ' .. due  the job's delay makes it
--               due (NOW + delay, ms) at or after its deadline: it could
--               never run, and nothing is written for it (a job's run
--               time the caller checks: it knows it, not the store's NOW);
--               a job of its ID already there is answered 'exists' or
--               'conflict' as ever (a repeat, not a job refused)
--   'retired'   (for every job) the partition went away in a shrink of
--               its queue (pause.lua 'r'): nothing added
--   A paused flag of another type (corrupt data) fails the call with an
--   error naming its key, nothing added (store: ErrMalformed).
-- A plain job may instead be leased at once to an idle worker that left
-- an offer in the partition's idle flag, and published to it
-- (lib_offer.lua): a pick-up in one hop.
-- Transitions: (none) -> available | scheduled (held jobs included);
--   (none) -> running (a plain job pushed to an idle worker's offer);
--   available -> scheduled (debounce: a duplicate moves the run time of
--   the unique job holding its key).
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local n = tonumber(ARGV[9])
local out = {}
local paused = redis.pcall('GET', PAUSED)
if type(paused) == 'table' then
  -- another type (a hand-written value, another tool's): Redis's bare
  -- WRONGTYPE would name no key; this names it, and nothing is added
  return redis.error_reply('ERR sluice: malformed key: ' .. PAUSED ..
    ' is of another type than the flag pause.lua writes: nothing was added (resuming the partition deletes it)')
end
if paused == 'r' then
  for i = 1, n do out[i] = STATUS.retired end
  return out
end
-- CT_SLACK (ms): a job whose generated ID carries a time this close to
-- the store's has no created-time field ('ct'): readers take the ID's.
local CT_SLACK = 50

-- the job fields written per job, and list 0's key, looked up once
local fk, fs, fct, ak0 = F.kind, F.state, F.created, avail_key(0)
-- One EXISTS for all the call's job keys: almost always none exists (IDs
-- are fresh), and then no job needs its own. added marks the IDs this call
-- adds, for a second job under one of them.
local A = unpack_args(ARGV[10])
local jks, b = {}, 1
for i = 1, n do
  jks[i] = job_key(A[b])
  if A[b + 4] == 'x' then b = b + 29 else b = b + 5 end
end
local any = 0
for i = 1, n, 1000 do any = any + redis.call('EXISTS', unpack(jks, i, math.min(i + 999, n))) end
local added = {}
local fresh = 0 -- jobs answered STATUS.new
-- listed: a job went to a list or the schedule, which idle workers are
-- woken for; no later job of the call is pushed past it (lib_offer.lua).
-- A debounce that moves a unique key's holder wakes them itself.
local listed = false
local plain_listed = 0 -- plain jobs listed: counted available once, after the loop
b = 1
for i = 1, n do
  local id, kind, payload, origin = A[b], A[b + 1], A[b + 2], A[b + 3]
  local o = PLAIN -- o[k]: optional field k of this job
  if A[b + 4] == 'x' then
    o = { unpack(A, b + 5, b + 28) }
    b = b + 29
  else
    b = b + 5
  end
  local jk = jks[i]
  local tick = origin == 't'
  local relayed = origin == 'f' or tick
  local keep = tick and TICK_KEEP or RELAY_KEEP
  if relayed then origin = 'c' end
  local marked = relayed and redis.call('EXISTS', followup_key(id)) == 1
  local old = false -- { kind, payload } of an existing job with this ID
  local taken = false -- a fresh random ID that another job already has
  if added[id] or (any > 0 and redis.call('EXISTS', jk) == 1) then
    if origin == 'c' then
      local h = pending_fields(id) or field_map(jk)
      -- not a hash: the ID is taken by something else (a conflict)
      old = h and { h[fk], payload_of(h, id) } or { '', false }
    else
      taken = true
    end
  end
  -- a job still there is compared as any chosen ID's (a repeat, or a
  -- conflict when its content changed); the marker speaks for one gone.
  -- A tick's marker speaks for its job there too: a tick's job is the
  -- same on every enqueue of it, so one there with the marker set is the
  -- tick's own, its arguments changed since by a unique key's replace (a
  -- scheduler that stalled after its claim, the tick enqueued by another
  -- meanwhile): a repeat, not a conflict. (Not so for origin 'f': a
  -- Spawn run again with other items is a real conflict; a relayed
  -- follow-up, which shares the origin, is told apart by relayFollowUp.)
  if old and old[1] and not tick then marked = false end
  if o == PLAIN and not relayed and not old and not taken then
    -- A plain job, most jobs: available now in list 0. This is what the
    -- general path below does for it, without parsing its options or
    -- building a field table for a short payload (bench/model: about 1
    -- µs of Redis time per job less).
    local id_ms = tonumber(origin)
    local ct = not id_ms or NOW - id_ms > CT_SLACK or id_ms - NOW > CT_SLACK
    -- a payload kept in its own key is not pushed: a burst of big pushes
    -- to a worker that stalls a moment would pass Redis's limit of a
    -- subscriber's output buffer, which drops the subscription and with
    -- it every job pushed
    local offered = not paused and not listed and #payload <= BODY_MIN and offer_open()
    local pushed = false
    if #payload <= CHUNK and not ct and not offered then
      redis.call('HSET', jk, fk, kind, fs, SCODE.available, F.payload, payload)
    else
      local f = { fk, kind, fs, SCODE.available }
      if ct then f[5], f[6] = fct, NOW_S end
      put_payload(f, id, payload)
      if offered then
        -- an idle worker's offer: leased to it, written by push_sent
        -- (lib_offer.lua)
        push_job(id, kind, f)
        pushed = true
      else
        redis.call('HSET', jk, unpack(f))
      end
    end
    added[id] = true
    if not pushed then
      push_later(ak0, id)
      plain_listed = plain_listed + 1
      listed = true
    end
    out[#out + 1] = STATUS.new
    fresh = fresh + 1
  else
    local due = 0 -- 0: now
    local run_at, delay = tonumber(o[1]), tonumber(o[2])
    local doomed = false -- its deadline, when its delay makes it due then or after
    if delay > 0 then
      due = NOW + delay
      local dl = tonumber(o[5]) or 0 -- not a number: none, as the claim reads it (and no raise mid-batch)
      if dl > 0 and dl <= due then doomed = dl end
    elseif run_at > 0 then
      due = run_at
    end
    local uk, holder, corrupt = o[18], nil, false
    if uk ~= '' and not (old and old[1]) and not taken then holder, corrupt = unique_holder(uk) end
    if marked then
      out[#out + 1] = STATUS.exists -- relayed before: the follow-up may be gone since
    elseif doomed and not (old and old[1]) then
      -- it would be archived deadline_exceeded when due, never run: bad
      -- input, refused before it is added, folded into a unique key's
      -- holder or marked as relayed (a repeat is refused again). A job
      -- of its ID already there is answered as below (exists, conflict):
      -- added when it was due before its deadline, it runs, and the same
      -- job enqueued again later (a Spawn run again) is a repeat
      out[#out + 1] = STATUS.past_deadline .. num_s(doomed) .. ' ' .. num_s(due)
    elseif taken then
      out[#out + 1] = STATUS.taken
    elseif corrupt or (not (old and old[1]) and corrupt_limits(o[14], o[24])) then
      out[#out + 1] = STATUS.malformed
    elseif holder then
      -- a debounce moves the holder's run time and wakes the workers
      -- itself (schedule_at); a replace lists nothing
      on_duplicate(holder, o[20], payload, due, kind, o[24], uk)
      -- folded into the holder: a repeat must not add it once the holder
      -- is gone, nor fold it in again
      if relayed then redis.call('SET', followup_key(id), '1', 'PX', keep) end
      out[#out + 1] = STATUS.unique .. holder
    elseif old and old[1] then
      if old[1] == kind and old[2] == payload then
        out[#out + 1] = STATUS.exists
      else
        out[#out + 1] = STATUS.conflict
      end
    else
      local held_by = false
      if o[24] ~= '' then
        held_by = quarantined_twin(o[24])
        if held_by then due = held_due(o[5]) end -- due at its deadline, if any, to be archived then
      end
      local state = 'available'
      if due > NOW then state = 'scheduled' end
      -- attempt, crash_attempt and fence start absent, meaning 0
      local f = { fk, kind, fs, SCODE[state] }
      local id_ms = tonumber(origin)
      if not id_ms or math.abs(NOW - id_ms) > CT_SLACK then f[5], f[6] = fct, NOW_S end
      put_payload(f, id, payload)
      if o ~= PLAIN then
        local function opt(field, v, none)
          if v ~= none then
            f[#f + 1] = field
            f[#f + 1] = v
          end
        end
        opt(F.max_attempts, o[3], DEFAULT_MAX_ATTEMPTS)
        opt(F.timeout, o[4], '0')
        opt(F.deadline, o[5], '0')
        opt(F.priority, o[6], '0')
        if o[7] ~= '' then put_chunked(f, F.headers, o[7]) end
        if o[8] ~= '' then
          for k, field in ipairs(PARENT) do opt(field, o[7 + k], nil) end
        end
        if state == 'scheduled' then opt(F.run_at, due, nil) end
        if o[12] ~= '' then
          for k, field in ipairs(CONCURRENCY) do opt(field, o[11 + k], nil) end
        end
        if o[14] ~= '' then
          opt(F.rate_class, o[14], nil)
          rate_define(o[14], o[15], o[16], o[17])
        end
        if uk ~= '' then
          opt(F.unique, uk, nil)
          local ttl = tonumber(o[19])
          if ttl > 0 then
            redis.call('SET', unique_key(uk), id, 'PX', ttl)
          else
            redis.call('SET', unique_key(uk), id)
          end
        end
        if o[21] ~= '' then
          for k, field in ipairs(STICKY) do opt(field, o[20 + k], nil) end
        end
        if o[24] ~= '' then
          opt(F.hold_fingerprint, o[24], nil)
          if held_by then
            opt(F.held_by, held_by, nil)
            redis.call('RPUSH', held_key(o[24]), id)
          end
        end
      end
      redis.call('HSET', jk, unpack(f))
      added[id] = true
      if state == 'scheduled' then
        sched_add(id, due)
      else
        local sw = o[21]
        if sw == '' then sw = nil end
        push_ready(id, false, o[6], sw, o[22], o[23], nil, o[5])
      end
      count(nil, state)
      listed = true
      if relayed then redis.call('SET', followup_key(id), '1', 'PX', keep) end
      if held_by then
        out[#out + 1] = STATUS.held .. held_by
      else
        out[#out + 1] = STATUS.new
        fresh = fresh + 1
      end
    end
  end
end
-- jobs listed (or scheduled): the idle flag and any offer go, and idle
-- workers are woken; else the offer stays, less what it gave (a job that
-- exists already, or was refused, wakes nobody)
count(nil, 'available', plain_listed)
if push_sent() then listed = true end
if listed then wake() else offer_kept() end
flush()
if fresh == n then return remember(n) end
return remember(out)
