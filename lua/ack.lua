-- ack.lua: record the outcomes of finished attempts in one partition.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of outcomes n
-- ARGV[10]: the n outcomes' fields, packed as one list of strings
--   (lib_pack.lua unpack_args): each outcome 9 fields, id, lease ID,
--   fence, code, delay (ms), message, data, reason, lease start; or, for
--   the most common outcome, a completion with no result and no effects,
--   only 5: id, lease ID, fence, 'k', lease start. The lease start (ms,
--   store time; the worker has it from its claim's reply) is the start of
--   the run time a completion tallies (the minute's 'rt:' buckets): the
--   job's own field is read only when it is '' (the argument costs a
--   no-op job's path about 1.3% fewer redis-server instructions than the
--   field's read: bench/RESULTS-3.md, 2026-12-05 12:35 UTC)
-- ARGV[11...]: the effects of each outcome of 8 fields, in order
--   (lib_effects.lua's read_effects; a count of 0 for none)
-- codes and their transitions (all from running):
--   ok        -> completed; data is the result (kept when non-empty); the
--             effects apply with the completion, all or nothing: when one
--             cannot apply, the attempt fails instead (attempt+1, retry
--             after delay, reason 'effect')
--   retry     attempt+1 -> retryable at now+delay, or archived
--             ('attempts_exhausted') when attempt reaches max_attempts;
--             reason names the error class ('error' or 'timeout'), data a stack
--   free      no counter -> available, or scheduled at now+delay (rate
--             limited / non-consuming errors)
--   snooze    no counter -> scheduled at now+delay
--   skip      -> archived ('skipped')
--   revoke    -> cancelled ('revoked')
--   deadline  -> archived ('deadline_exceeded')
--   crash     crash_attempt+1 -> retryable after delay, the crash delay
--             (lib_lifecycle.lua crash; available at once for 0), or
--             quarantined at the crash limit; data is the stack
--   expire    as crash, and the orphan provenance the reaper records
--             (lib_lifecycle.lua record_orphan): the worker gave the lease
--             up by its own clock (runtime giveBack), the reaper's work
--             done first; a handler's outcome is never this code
--   release   no counter -> available at the front (shutdown hand-back)
--   park      -> archived with the given reason (unknown kind, bad payload)
--   wait      no counter -> scheduled while the children spawned by step
--             (message) finish: data is the IDs (in the parent's records,
--             kids_key) of the children joined that had not finished, a
--             packed list (unpack_args), or for an older caller how many
--             of the step's children must have finished; reason the
--             policy ('f' wakes on the first failure, 'a' waits for all);
--             due again after delay as a safety net. When the wait is
--             already over (the children named finished since, or one
--             failed under 'f') the job goes straight back to available.
--             The children named are marked for the wait (deliver in
--             lib_lifecycle.lua): a child of the step outside the join
--             neither counts for it nor wakes it.
--   suspend   no counter -> scheduled until the first of its timers, or
--             a signal it waits for, wakes it (lib_waits.lua suspend);
--             data lists the waits, one per line ('t <name> d|a <ms>', 's
--             <name>'). Straight back to available when one is due or
--             there already.
-- Transitions: running -> completed | retryable | scheduled | available,
--   running -> archived ('attempts_exhausted', 'skipped',
--   'deadline_exceeded', the reason a park gives, or 'malformed' when a
--   retry or a crash finds its counter corrupt: that job is archived
--   rather than the call failing for every job in it),
--   running -> cancelled ('revoked'), running -> quarantined ('crash_limit').
-- Every outcome first checks the attempt's identity: the job must be
-- running under exactly this lease ID and fence, and its lease (the run
-- index's score) must not have run out by store time: a worker that
-- stalled past its lease is answered 'stale' even before a reaper ended
-- its attempt, which the reaper then does as a crash. Leaving running frees the
-- job's concurrency slot, if it has a concurrency key. A job that finishes and
-- was spawned by a parent notifies the parent (lib_lifecycle.lua notify_parent).
-- Deadline outcomes are checked in store time: a job whose deadline
-- ('dl') has not passed by Redis's clock (a worker's clock ran ahead) is
-- scheduled at its deadline instead, no counter charged, and archived
-- ('deadline_exceeded') by the claim that finds it due then.
-- Returns: one entry per outcome: the job's new state, 'malformed' for a
--   job archived as malformed (its state archived: the worker reports
--   the reason the store wrote, not the one its code would give), or
--   'stale' when the identity check failed (nothing was written for
--   it); then one more
--   entry: the number of outbox entries written. When every outcome
--   answers 'completed' (the common case), only that number, as an
--   integer: it costs both sides less than a state per job. A re-sent call answers
--   what its first run did (lib_replay.lua); an ack of an attempt that
--   has already ended (its lease ID and fence still on the job, which no
--   longer runs) answers the job's state rather than 'stale', and so does
--   a second outcome of one attempt in the same call: only the first
--   applies.
do local refused = model_error() if refused then return refused end end
do local again = replayed() if again then return again end end
local n = tonumber(ARGV[9])
local entries = {}
-- the outcomes, read in a block of their own: miniredis's Lua allows a
-- chunk about 200 locals, and the prelude uses most of them
do
  -- the codes an outcome may name, built at the first outcome that names
  -- one: most calls carry plain completions only ('k'), and building the
  -- table cost a one-job ack 2% of its time
  local CODES
  local A = unpack_args(ARGV[10])
  local a, b = 1, 11 -- the next outcome's fields in A, its effects in ARGV
  for _ = 1, n do
    local e, plain = nil, A[a + 3] == 'k'
    if plain then
      -- its delay, message, data and reason are nil, read as 0 and '' by
      -- the loop below: a table of five fields rather than ten costs a
      -- no-op job's path about 2% of its instructions
      e = { id = A[a], lease = A[a + 1], fence = A[a + 2], code = 'ok', ls = A[a + 4] }
      a = a + 5
    else
      e = { id = A[a], lease = A[a + 1], fence = A[a + 2], code = A[a + 3],
        delay = tonumber(A[a + 4]), msg = A[a + 5], data = A[a + 6], reason = A[a + 7], ls = A[a + 8] }
      a = a + 9
    end
    -- a list cut short (a hand-made call: the store sends every field)
    -- is refused before anything is written; the loop below would read
    -- its missing fields as a plain completion's
    if e.ls == nil then return redis.error_reply('ERR sluice: malformed outcome for job ' .. tostring(e.id)) end
    if not plain then
      CODES = CODES or {
        ok = true, retry = true, free = true, snooze = true, skip = true, revoke = true,
        deadline = true, crash = true, expire = true, release = true, park = true, wait = true, suspend = true,
      }
      if not CODES[e.code] then return redis.error_reply('ERR sluice: unknown ack code ' .. tostring(e.code)) end
      -- a delay that is no number (or nan) is refused here, before anything
      -- is written: the loop below reads a missing one as 0, which is a
      -- plain completion's (it carries none)
      if not e.delay or e.delay ~= e.delay then return redis.error_reply('ERR sluice: malformed delay for job ' .. tostring(e.id)) end
      if e.code == 'wait' then
        if string.byte(e.data, 1) == 221 then
          e.kids = unpack_args(e.data) -- a packed list (array 32)
        elseif not tonumber(e.data) then
          -- else a count, checked before anything is written: Redis does
          -- not roll back the outcomes before this one
          return redis.error_reply('ERR sluice: malformed wait for job ' .. e.id)
        end
      elseif e.code == 'suspend' then
        e.waits = parse_waits(e.data)
        if not e.waits then return redis.error_reply('ERR sluice: malformed suspend waits for job ' .. e.id) end
      end
      e.fx, b = read_effects(b)
    end
    entries[#entries + 1] = e
  end
end

-- the job fields read per outcome (each field read costs every job about
-- 0.2 µs: the deadline, which only a deadline outcome needs, is read by
-- it, and the lease start comes with the outcome), e.h[1] to e.h[8]: one
-- table rather than a local each, since this chunk's locals come near the
-- 200 registers a Lua function may use (gopher-lua, miniredis's Lua,
-- counts the temporaries of its expressions among them;
-- TestScriptsHaveRegisterHeadroom). A lease its claim marked plain
-- (PLAIN_LEASE, or BARE_LEASE: no body key either, e.bare) reads the
-- first five only: that job has no parent, unique key or concurrency
-- key, and e.h[6] to e.h[8] are nil. The mark is the
-- claim's word only when the job's lease ID is the one the outcome names,
-- which every outcome checks.
do
  local ckeys = {}
  local fs, fl, ff, fx, fe = F.state, F.lease_id, F.fence, F.has_steps, F.last_error
  local fp, fu, fc = F.parent, F.unique, F.concurrency_key
  for i, e in ipairs(entries) do
    -- the HMGET written out (not fields with unpack: -1.1% of a no-op
    -- job's instructions); a pcall as fields makes it
    local jk, mark, h = job_key(e.id), string.sub(e.lease, -1), nil
    if mark == PLAIN_LEASE or mark == BARE_LEASE then
      if mark == BARE_LEASE then e.bare = true end
      h = redis.pcall('HMGET', jk, fs, fl, ff, fx, fe)
    else
      h = redis.pcall('HMGET', jk, fs, fl, ff, fx, fe, fp, fu, fc)
    end
    if h.err then h = {} end -- a key of another type (corrupt data): answered stale
    e.h, e.jk = h, jk
    ckeys[i] = h[8]
  end
  cc_prefetch(ckeys)
  -- an attempt whose lease has run out by store time is over, reaped or
  -- not: its outcome is stale (the reaper ends it, as a crash)
  local lapsed = lapsed_among(function()
    local ids = {}
    for i, e in ipairs(entries) do ids[i] = e.id end
    return ids
  end)
  if next(lapsed) then
    for _, e in ipairs(entries) do e.lapsed = lapsed[e.id] end
  end
end

local out = {}
local outboxed = 0
local completed = 0 -- outcomes answered 'completed'
local ended = {} -- job ID -> the state an earlier outcome of this call left it in
local recount = false
for _, e in ipairs(entries) do
  local id, code, delay, msg, data, reason = e.id, e.code, e.delay or 0, e.msg or '', e.data or '', e.reason or ''
  local jk, h = e.jk, e.h
  local state = STATUS.stale
  if ended[id] then
    -- the job's fields were read before an earlier outcome of this call
    -- ended its attempt: a second outcome of that attempt is late (it
    -- answers the state the first left), any other is stale
    if h[2] == e.lease and h[3] == e.fence then state = ended[id] end
  -- (state_of, written out: a call per job)
  elseif (SNAME[h[1]] or h[1]) == 'running' and h[2] == e.lease and h[3] == e.fence and not e.lapsed then
    -- plain: no checkpoints, no errors to delete with the job; ls: a
    -- lease start that is no whole number of ms (corrupt data: 'nan',
    -- 'inf', '1e400', which tonumber takes) is an unknown run time, not
    -- tallied (a NaN run time would index a table and raise); only a
    -- completion tallies one
    local ls = e.ls
    if ls == '' and code == 'ok' then ls = lease_began(jk, e.lease) end
    local m = { pa = h[6] or false, uk = h[7], plain = not h[4] and not h[5] and (e.bare and 'bare' or true), ls = ls and count_of(ls) }
    clear_lease(id)
    if h[8] then
      -- a key that counts no running job is not the one its claim counted
      -- (corrupt data): the keys are recounted (cc_recount)
      if cc_running(h[8]) <= 0 then recount = true end
      cc_release(h[8])
    end
    if code == 'deadline' then
      local dl = tonumber(redis.call('HGET', jk, F.deadline))
      if dl and dl > NOW then
        code, delay = 'snooze', dl - NOW -- due at its deadline, archived by the claim then
      end
    end
    if code == 'ok' then
      local fx = e.fx -- none for a plain completion
      local bad = fx and check_effects(fx)
      if bad then
        code, reason, msg, data = 'retry', 'effect', 'completion effects failed: ' .. bad, ''
      else
        if fx then outboxed = outboxed + apply_effects(fx, jk) end
        if data ~= '' then redis.call('HSET', jk, F.result, data) end
        finish(jk, id, 'running', 'completed', '', m)
        state = 'completed'
      end
    end
    if code == 'retry' then
      local a = bump(jk, F.attempt)
      local ma = tonumber(redis.call('HGET', jk, F.max_attempts) or DEFAULT_MAX_ATTEMPTS)
      -- a count of nan (tonumber takes it) is no count: no attempt reaches it
      if not a or not ma or ma ~= ma then
        -- a corrupt counter: archived before anything else reads them
        finish(jk, id, 'running', 'archived', 'malformed', m)
        state = STATUS.malformed
      else
        record_error(jk, id, reason, msg, data)
        m.plain = false -- it has an error list now, to delete with it
        if a >= ma then
          finish(jk, id, 'running', 'archived', 'attempts_exhausted', m)
          state = 'archived'
        else
          schedule_at(jk, id, 'running', 'retryable', NOW + delay)
          state = 'retryable'
        end
      end
    elseif code == 'free' then
      if delay > 0 then
        schedule_at(jk, id, 'running', 'scheduled', NOW + delay)
        state = 'scheduled'
      else
        make_available(jk, id, 'running', false)
        state = 'available'
      end
    elseif code == 'snooze' then
      schedule_at(jk, id, 'running', 'scheduled', NOW + delay)
      state = 'scheduled'
    elseif code == 'skip' then
      if msg ~= '' then redis.call('HSET', jk, F.last_error, msg) end
      finish(jk, id, 'running', 'archived', 'skipped', m)
      state = 'archived'
    elseif code == 'revoke' then
      if msg ~= '' then redis.call('HSET', jk, F.last_error, msg) end
      finish(jk, id, 'running', 'cancelled', 'revoked', m)
      state = 'cancelled'
    elseif code == 'deadline' then
      record_error(jk, id, 'deadline', msg, '')
      m.plain = false
      finish(jk, id, 'running', 'archived', 'deadline_exceeded', m)
      state = 'archived'
    elseif code == 'crash' then
      state = crash(jk, id, 'running', delay, { reason, msg, data }) -- its error recorded once counted
      if state == 'archived' then state = STATUS.malformed end -- its crash counter corrupt
    elseif code == 'expire' then
      if not record_orphan(jk, lease_holder(jk, e.lease), NOW_S, e.lease) then
        finish(jk, id, 'running', 'archived', 'malformed', m) -- a corrupt orphan counter, as the reaper does
        state = STATUS.malformed
      else
        state = crash(jk, id, 'running', delay, { reason, msg, data })
        if state == 'archived' then state = STATUS.malformed end -- its crash counter corrupt
      end
    elseif code == 'release' then
      make_available(jk, id, 'running', true)
      state = 'available'
    elseif code == 'park' then
      record_error(jk, id, reason, msg, '')
      m.plain = false
      finish(jk, id, 'running', 'archived', reason, m)
      state = 'archived'
    elseif code == 'wait' then
      local left, failed, token
      if e.kids then
        left, failed, token = join_wait(id, e.kids, e.fence)
      else
        local counts = fields(kidcount_key(id), msg, msg .. ':f') -- corrupt: none counted
        left = tonumber(data) - (tonumber(counts[1]) or 0)
        failed = (tonumber(counts[2]) or 0) > 0
      end
      if left <= 0 or (failed and reason == 'f') then
        make_available(jk, id, 'running', false)
        state = 'available'
      else
        if token then
          redis.call('HSET', jk, F.wait_step, msg, F.wait_count, left, F.wait_policy, reason, F.wait_members, token)
        else
          redis.call('HSET', jk, F.wait_step, msg, F.wait_count, left, F.wait_policy, reason)
          redis.call('HDEL', jk, F.wait_members) -- an earlier wait's
        end
        -- its recheck, or its deadline when that is sooner (schedule_at):
        -- a join whose children stall is archived at its deadline
        -- (deadline_exceeded, by the claim that wakes it), as a suspended
        -- workflow is (lib_waits.lua), not at the recheck after it
        schedule_at(jk, id, 'running', 'scheduled', NOW + delay)
        state = 'scheduled'
      end
    elseif code == 'suspend' then
      -- suspend reads the checkpoints (signals taken, older timers): a key
      -- of another type is this job's corrupt data, not the call's
      local st = redis.call('TYPE', steps_key(id))['ok']
      if st ~= 'none' and st ~= 'hash' then
        finish(jk, id, 'running', 'archived', 'malformed', m)
        state = STATUS.malformed
      else
        state = suspend(jk, id, e.fence, e.waits)
      end
    end
  elseif h[1] and state_of(h[1]) ~= 'running' and h[2] == e.lease and h[3] == e.fence then
    state = state_of(h[1]) -- this attempt ended before (a late re-send)
  end
  if state ~= STATUS.stale then ended[id] = state end
  out[#out + 1] = state
  if state == 'completed' then completed = completed + 1 end
end
if recount then cc_recount() end
flush()
if completed == n then return remember(outboxed + notified) end
out[#out + 1] = outboxed + notified
return remember(out)
