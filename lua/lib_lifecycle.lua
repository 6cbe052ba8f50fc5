-- lib_lifecycle.lua: the prelude's job lifecycle: leases, deletion,
-- parents and children, terminal states and death reports, crashes,
-- reaping, sweeping, promotion.

-- clear_lease takes a job out of the running set. Its lease fields stay
-- until the next claim overwrites them; they mean nothing outside running.
local function clear_lease(id)
  -- zrem_later(K_RUN, id), written out: a call per ended attempt
  local l = ZREMS[K_RUN] or list_in(ZREMS, K_RUN)
  l[#l + 1] = id
end

-- Quarantine hold (flow.WithQuarantineHold): a job may carry a
-- fingerprint of its kind and arguments (F.hold_fingerprint). When it is
-- quarantined, PFX .. 'qh:' .. fingerprint names it, and a job enqueued
-- later with the same fingerprint is held (enqueue.lua: F.held_by names
-- the job it waits on,
-- and it waits on the list PFX .. 'qw:' .. fingerprint) until the
-- quarantined one is released or deleted. Mirrored by keys.Partition's
-- QuarantineHold and HeldOn.
-- free_held ends quarantined job id's hold (fingerprint qf): the jobs held
-- behind it become due now, unless another job of the fingerprint is
-- still quarantined (the first of hold_next_key's still so, which a
-- quarantine pushed there while id held): that one holds them in its
-- place. Entries of jobs no longer quarantined are dropped as met.
local function free_held(qf, id)
  local qh = hold_key(qf)
  local next_holder = false
  if redis.pcall('GET', qh) == id then
    while true do
      local n = redis.pcall('LPOP', hold_next_key(qf)) -- pcall: corrupt data names no job
      if type(n) ~= 'string' then break end
      local v = redis.pcall('HMGET', job_key(n), F.state, F.hold_fingerprint)
      if n ~= id and not v.err and state_of(v[1]) == 'quarantined' and v[2] == qf then
        next_holder = n
        break
      end
    end
    if next_holder then redis.call('SET', qh, next_holder) else redis.call('DEL', qh) end
  end
  local wk = held_key(qf)
  local fs, fq, fr = F.state, F.held_by, F.run_at
  local held = redis.pcall('LRANGE', wk, 0, -1) -- corrupt: none to free
  if held.err then held = {} end
  for _, h in ipairs(held) do
    local hk = job_key(h)
    local v = redis.pcall('HMGET', hk, fs, fq, fr) -- pcall: a corrupt key must not raise after a write
    if v.err then v = {} end
    if v[2] == id and next_holder then
      redis.call('HSET', hk, fq, next_holder)
    elseif v[2] == id or not v[2] then
      redis.call('LREM', wk, 1, h) -- held by id, or by none (gone, cancelled): the others stay held
      -- one held with a deadline and listed at it (held_due), for a claim
      -- to archive, is held no more: that claim checks its deadline as
      -- any job's (a claim archives a listed job still held though its
      -- deadline is ahead: the clock went back since its promotion)
      if v[2] == id and state_of(v[1]) == 'available' then redis.call('HDEL', hk, fq) end
      if v[2] == id and state_of(v[1]) == 'scheduled' then
        redis.call('HDEL', hk, fq)
        -- one held with a deadline was due then (held_due), perhaps in a
        -- bucket of later jobs, whose entry stays: noted, as any job's
        -- that leaves a bucket early, so that coming back there (a retry)
        -- does not list it twice
        note_left(hk, v[3])
        redis.call('HSET', hk, fr, NOW_S)
        call_aside('ZADD', K_SCHED, nil, NOW_S, h)
        wake()
      end
    end
  end
end

-- unhold ends the hold of job id (hash jk), held behind quarantined
-- held_by with fingerprint qf, when it finishes while still held: one
-- held with a deadline is archived at it (held_due) whether or not its
-- twin was released. Its entry on the held list goes (a pcall: a list of
-- another type, corrupt data, holds none), and so does the name of the
-- job it was held behind, which would show it held though archived.
local function unhold(jk, id, held_by, qf)
  if not held_by then return end
  redis.call('HDEL', jk, F.held_by)
  if qf then redis.pcall('LREM', held_key(qf), 1, id) end
end

-- kids_recorded marks the jobs this call recorded a child's end on
-- (deliver): a job read as plain before that (an ack reads its jobs
-- first) has its records of its children to delete.
local kids_recorded = {}

-- delete_job deletes job id, in state (a name), and every key it owns.
-- plain says it has none but its hash and perhaps a body key (no errors,
-- no checkpoints, no records of its children: deliver marks a job it
-- records a child on as having checkpoints, and kids_recorded one read
-- before that in this call), which saves the lookups; 'bare', that it
-- has no body key either (BARE_LEASE). It is deleted at
-- once, not with the call's other jobs at its end: an entry of the call that
-- failed later would leave it running under its lease, and the call's
-- re-send would apply its completion twice. Only an archived or
-- quarantined job can have a pending death report or hold other jobs
-- (free_held): a completed one, deleted at once in the hot path, skips
-- those lookups. A job deleted before it finished (an operator's delete)
-- may be watched (watch.lua): its waiters are told to look again.
-- A value set aside from its key (set_aside, x:j:<id> and on) is not
-- the job's to delete: a job of the ID before it may have left it (a
-- sweep sets aside and leaves no job), it may be one of several, and
-- finding them would cost every delete a lookup; the operator deletes
-- it once read. jk, when given, is job_key(id).
local function delete_job(id, plain, state, jk)
  if plain and not kids_recorded[id] then
    if plain == 'bare' then
      redis.call('DEL', jk or job_key(id))
    else
      redis.call('DEL', jk or job_key(id), body_key(id))
    end
    return
  end
  if not TERMINAL[state] and call_aside('SREM', WATCHING, nil, id) == 1 then
    redis.pcall('PUBLISH', DONE_CHANNEL, 'deleted ' .. id) -- see finish
  end
  if state == 'archived' or state == 'quarantined' then
    call_aside('ZREM', DEATHS, nil, id) -- its pending death report, if any
    if state == 'quarantined' then
      local qf = redis.call('HGET', job_key(id), F.hold_fingerprint)
      if qf then free_held(qf, id) end
    end
  end
  redis.call('DEL', job_key(id), body_key(id), err_key(id), steps_key(id), kids_key(id), kidcount_key(id))
end

-- lapsed_among is the set of the jobs whose lease has run out by store
-- time, of those ids() lists (a function: the list is made only when
-- needed): the run index's head scored at or before NOW, up to 256 (usually
-- none), read with one ZRANGEBYSCORE near the index's head, one command
-- where a ZMSCORE would look up every job (a skiplist's dictionary, the
-- anchor keeps it one: lib_batch.lua RUN_ANCHOR); when more lapsed
-- (the reaper is behind), the listed jobs' own scores. A call that checks
-- attempts (ack, step, progress) reads it once.
local function lapsed_among(ids)
  local lapsed = {}
  local head = redis.call('ZRANGEBYSCORE', K_RUN, '-inf', NOW_S, 'LIMIT', '0', '256')
  for _, id in ipairs(head) do lapsed[id] = true end
  if #head == 256 then
    local list, ends = ids(), {}
    for c = 1, #list, 1000 do -- unpack takes a few thousand at most
      for k, v in ipairs(redis.call('ZMSCORE', K_RUN, unpack(list, c, math.min(c + 999, #list)))) do ends[c + k - 1] = v end
    end
    for k, id in ipairs(list) do lapsed[id] = (tonumber(ends[k]) or NOW + 1) <= NOW end
  end
  return lapsed
end

-- holds reports whether the job is running under exactly this lease ID and
-- fence (lease_matches: h holds its state, lease ID and fence, as holds reads them),
-- and its lease has not run out by store time (lapsed: lapsed_among lists
-- it): the identity check every write of an attempt starts with. A worker
-- that stalled past its lease writes nothing, even before a reaper ended
-- its attempt.
local function lease_matches(h, lease, fence, lapsed)
  return state_of(h[1]) == 'running' and h[2] == lease and h[3] == fence and not lapsed
end
local function holds(jk, lease, fence, lapsed)
  return lease_matches(fields(jk, F.state, F.lease_id, F.fence), lease, fence, lapsed)
end

-- of_another_parent says whether child was spawned by another job of the
-- ID parent than the one created at created (its F.created): a child's ID
-- names its parent's creation time (keys.ChildLocal: parent@<ms in base
-- 36>~step~i), and a job given the parent's ID once the parent was
-- deleted is another job. A job of a generated ID keeps no created field
-- (its ID carries the time), and a child of an older release names none:
-- those are taken as the parent's.
local function of_another_parent(parent, created, child)
  if not created or string.sub(child, 1, #parent + 1) ~= parent .. '@' then return false end
  local mark = string.sub(child, #parent + 2, #parent + 14) -- the time (11 digits at most), '~' and more
  local born = #mark <= 13 and tonumber(string.match(mark, '^([0-9a-z]+)~') or '', 36)
  return born and born ~= tonumber(created) or false
end

-- deliver records that child (of parent, spawned by step) finished, and
-- wakes the parent when it waits for that step and the wait is over. A
-- join's wait (ack.lua 'wait') names the children it waits for: each is
-- marked in kidcount_key, field 'w:<child>', with the wait's token
-- (F.wait_members: the waiting attempt's fence, which only a claim moves),
-- and only a child marked with it counts for the wait, or wakes a
-- FailFast one by failing, whatever step spawned it. A mark is
-- overwritten by the next wait that names its child and deleted with the
-- parent: a parent has one per child at most. A wait with no token, or
-- one that is not its fence (an older release ends a wait leaving the
-- token, and then its own wait counts), counts every child of its step.
--
-- dn is the child's count of redrives when it ended (F.redrives; '' or
-- nil: 0, an end told by an older release). A redrive withdraws the
-- child's end (withdraw) and marks the run it starts in kidcount_key,
-- field 'd:<child>': an end of an earlier run, told late (a relayer that
-- stalled, an entry revived from the dead stream), is not recorded.
local function deliver(parent, step, child, state, payload, dn)
  local pk = job_key(parent)
  -- every write to the parent's keys is a pcall that fails without
  -- writing: a parent whose data is corrupt is that parent's problem (its
  -- claim or its join's recheck meets it), not its child's, whose call
  -- has written already
  local h, corrupt = fields(pk, F.state, F.wait_step, F.wait_policy, F.wait_members, F.fence, F.created, F.has_steps)
  if corrupt or not h[1] then return end
  -- a job given the parent's ID once the parent was deleted never waits
  -- for this child. Recorded on it, the records would outlive it when it
  -- is deleted as a job of no steps (delete_job's plain)
  if of_another_parent(parent, h[6], child) then return end
  local kk = kids_key(parent)
  local ck = kidcount_key(parent)
  local failed = state ~= 'completed'
  local prev = redis.pcall('HGET', kk, child)
  if type(prev) == 'table' then return end -- not a hash: corrupt
  dn = tonumber(dn) or 0
  -- a parent whose join names its children (a token, its fence) counts
  -- this child only if it is marked with it: that mark is read with the
  -- run's, one command per delivery (nothing this call writes before it
  -- is read changes it)
  local named = state_of(h[1]) == 'scheduled' and h[4] and h[4] == h[5]
  local marks = named and redis.pcall('HMGET', ck, 'd:' .. child, 'w:' .. child)
    or { redis.pcall('HGET', ck, 'd:' .. child) }
  local run = tonumber(marks[1]) or 0 -- corrupt: none marked (an error reply is a table: no number)
  if dn < run then return end -- an end of a run withdrawn since (a redrive)
  if dn > run then redis.pcall('HSET', ck, 'd:' .. child, dn) end
  if prev then
    -- delivered before: this notification again (a relay repeated), or
    -- the child ran again after a redrive and finished anew. It was
    -- counted; its failure count follows its latest end, so that a
    -- FailFast parent whose failed child was redriven and completed
    -- waits for the others again instead of waking at once for ever.
    local was_failed = string.sub(prev, 1, (string.find(prev, '\n', 1, true) or #prev + 1) - 1) ~= 'completed'
    redis.pcall('HSET', kk, child, state .. '\n' .. payload)
    if was_failed and not failed then
      if (tonumber(redis.pcall('HINCRBY', ck, step .. ':f', -1)) or 0) < 0 then redis.pcall('HSET', ck, step .. ':f', 0) end
    elseif failed and not was_failed then
      redis.pcall('HINCRBY', ck, step .. ':f', 1)
    end
    return
  end
  if redis.pcall('HSET', kk, child, state .. '\n' .. payload) ~= 1 then return end
  -- a parent with records of its children is no job of no steps, deleted
  -- with its hash alone (delete_job's plain): one whose Spawn step is not
  -- checkpointed (yet, or ever: Spawn failed after adding some children,
  -- and the handler went on) would leave the records in Redis for good
  kids_recorded[parent] = true
  if not h[7] then redis.pcall('HSET', pk, F.has_steps, '1') end
  redis.pcall('HINCRBY', ck, step, 1)
  if failed then redis.pcall('HINCRBY', ck, step .. ':f', 1) end
  if state_of(h[1]) ~= 'scheduled' then return end
  if named then
    -- a child the join does not wait for (a counts key of another type: none)
    if marks[2] ~= h[4] then return end
  elseif h[2] ~= step then
    return
  end
  local left = redis.pcall('HINCRBY', pk, F.wait_count, -1)
  if type(left) ~= 'number' then return end
  if left <= 0 or (failed and h[3] == 'f') then
    redis.call('HDEL', pk, F.wait_step, F.wait_count, F.wait_policy, F.wait_members)
    call_aside('ZREM', K_SCHED, nil, parent)
    make_available(pk, parent, 'scheduled', false)
  end
end

-- withdraw takes back the end of child (of parent, spawned by step) that
-- the parent recorded (deliver), as a redrive or a release of the child
-- makes it run again (its count of redrives now dn): its record and its
-- counts are removed, and its next end is recorded as a first one. Only
-- an end of an earlier run (told with a lower count) is withdrawn, and
-- the run dn is marked ('d:<child>'), so that a withdrawal told again (a
-- re-send, two relayers) and one told after the new run's end change
-- nothing, and the earlier run's end, told late, is not recorded
-- (deliver). A wait that counted this end (its member, marked with the
-- wait's token) waits for it again; one that did not name it (a join
-- that read it finished before it waited) is woken by its own children,
-- and its join reads the child unfinished and waits for it. A parent
-- whose join returned already keeps what it collected: its later steps
-- are checkpointed. Writes are pcalls, as deliver's.
local function withdraw(parent, step, child, dn)
  local pk = job_key(parent)
  local h, corrupt = fields(pk, F.state, F.wait_step, F.wait_members, F.fence, F.created, F.has_steps)
  if corrupt or not h[1] then return end
  if of_another_parent(parent, h[5], child) then return end
  dn = tonumber(dn) or 0
  local kk, ck = kids_key(parent), kidcount_key(parent)
  local run = redis.pcall('HGET', ck, 'd:' .. child)
  if type(run) == 'table' or (tonumber(run) or 0) >= dn then return end -- corrupt, or withdrawn or ended since
  local prev = redis.pcall('HGET', kk, child)
  if type(prev) == 'table' then return end -- not a hash: corrupt
  if type(redis.pcall('HSET', ck, 'd:' .. child, dn)) ~= 'number' then return end
  -- the mark is a record of its children: the parent is no plain job
  kids_recorded[parent] = true
  if not h[6] then redis.pcall('HSET', pk, F.has_steps, '1') end
  if not prev then return end -- no end recorded yet: the earlier one, told late, is not
  redis.pcall('HDEL', kk, child)
  if (tonumber(redis.pcall('HINCRBY', ck, step, -1)) or 0) < 0 then redis.pcall('HSET', ck, step, 0) end
  if string.sub(prev, 1, (string.find(prev, '\n', 1, true) or #prev + 1) - 1) ~= 'completed' then
    if (tonumber(redis.pcall('HINCRBY', ck, step .. ':f', -1)) or 0) < 0 then redis.pcall('HSET', ck, step .. ':f', 0) end
  end
  if state_of(h[1]) == 'scheduled' and h[3] and h[3] == h[4] and redis.pcall('HGET', ck, 'w:' .. child) == h[3] then
    redis.pcall('HINCRBY', pk, F.wait_count, 1) -- its wait counted this end: it waits for the next
  end
end

-- join_wait starts the wait of parent id's join for the children kids
-- (IDs in its records, kids_key): those recorded since the join read them
-- have finished; the others are marked for the wait (deliver) with token,
-- the waiting attempt's fence, which no other wait of the parent has.
-- Returns how many are left, whether one of the joined children failed,
-- and the token; or no token when the marks could not all be written
-- (kidcount_key of another type: corrupt data), and the wait then counts
-- every child of its step, as an older release's does.
local function join_wait(id, kids, token)
  local kk, ck = kids_key(id), kidcount_key(id)
  local left, failed, marks, seen = 0, false, {}, {}
  for c = 1, #kids, 1000 do -- unpack takes a few thousand at most
    local last = math.min(c + 999, #kids)
    local recs = redis.pcall('HMGET', kk, unpack(kids, c, last))
    if recs.err then recs = {} end -- corrupt: none recorded
    for k = c, last do
      local kid, r = kids[k], recs[k - c + 1]
      if r then
        if string.sub(r, 1, (string.find(r, '\n', 1, true) or #r + 1) - 1) ~= 'completed' then failed = true end
      elseif not seen[kid] then
        seen[kid] = true
        left = left + 1
        marks[#marks + 1] = 'w:' .. kid
        marks[#marks + 1] = token
      end
    end
  end
  if left == 0 then return 0, failed end
  for c = 1, #marks, 1000 do
    if type(redis.pcall('HSET', ck, unpack(marks, c, math.min(c + 999, #marks)))) ~= 'number' then
      return left, failed
    end
  end
  return left, failed, token
end

-- notified counts the notifications notify_parent put in the outbox.
local notified = 0

-- notify_parent tells a spawned job's parent that it finished: at once when
-- the parent lives in this partition, else through the outbox. pa is the
-- job's parent field when the caller read it, nil to read it here; a
-- caller that read none (false) does not call (finish: a call per job).
local function notify_parent(jk, id, state, pa)
  if pa == nil and not redis.call('HGET', jk, F.parent) then return end
  local p = redis.call('HMGET', jk, F.parent, F.parent_prefix, F.parent_step, F.parent_local, F.result,
    F.last_error, F.redrives)
  local payload = p[6] or ''
  if state == 'completed' then payload = p[5] or '' end
  -- a link with a part gone (corrupt data) names no parent or no step to
  -- tell: the parent is not told (its join's recheck runs it again),
  -- rather than the call raising after its writes
  if not (p[1] and p[3]) then return end
  local dn = p[7] and #p[7] <= 15 and string.match(p[7], '^%d+$') or '0' -- the run that ended (deliver); corrupt: 0
  if p[2] == PFX then
    if p[4] then deliver(p[4], p[3], id, state, payload, dn) end
    return
  end
  -- an outbox of another type is set aside (call_aside), not raised on
  -- after the job's writes; the relay reads a fresh stream from its start
  if type(redis.pcall('XADD', K_OUTBOX, '*', 't', 'n', 'p', p[1], 's', p[3], 'c', id, 'st', state, 'r', payload,
    'dn', dn)) == 'table' then
    call_aside('XADD', K_OUTBOX, nil, '*', 't', 'n', 'p', p[1], 's', p[3], 'c', id, 'st', state, 'r', payload, 'dn', dn)
  end
  notified = notified + 1
end

-- withdraw_from_parent takes back, on a spawned job's parent, the end it
-- was told of (withdraw), as the job runs again after a redrive (its
-- count of redrives bumped): at once when the parent lives in this
-- partition, else through the outbox (entry 't' 'w', relayed as
-- notifications are: lua/notify.lua), so that it follows the end it takes
-- back and comes before the new run's. A link with a part gone tells
-- nothing, as notify_parent.
local function withdraw_from_parent(jk, id)
  local p = redis.call('HMGET', jk, F.parent, F.parent_prefix, F.parent_step, F.parent_local, F.redrives)
  if not (p[1] and p[3]) then return end
  local dn = p[5] and #p[5] <= 15 and string.match(p[5], '^%d+$') or '0' -- bumped: a whole number
  if p[2] == PFX then
    if p[4] then withdraw(p[4], p[3], id, dn) end
    return
  end
  if type(redis.pcall('XADD', K_OUTBOX, '*', 't', 'w', 'p', p[1], 's', p[3], 'c', id, 'dn', dn)) == 'table' then
    call_aside('XADD', K_OUTBOX, nil, '*', 't', 'w', 'p', p[1], 's', p[3], 'c', id, 'dn', dn)
  end
  notified = notified + 1
end

-- A job that reaches archived or quarantined (a death) has a pending death
-- report in PFX .. 'dd' until a worker's death handler has run for it
-- (deaths.lua 'done'): scored by when a sweep may deliver it, DEATH_GRACE
-- ms on (the worker that made the death reports it at once, unless it
-- dies first). Mirrored by keys.Partition.Deaths. A job with a pending
-- report is kept at least DEATH_KEEP ms (the grace, a taker's hold of a
-- minute, runtime deathHold, and as long again as the grace), even where
-- its retention is shorter: deleting it deletes its report (delete_job),
-- and a death whose worker died before its handler ran would never be
-- reported. Mirrored by store.DeathKeep.
local DEATH_GRACE = 30000
local DEATH_KEEP = 120000

-- Waiting on a job (flow.Client.Wait): watch.lua marks a job that has not
-- finished as watched (F.watched, and a member of WATCHING). When it
-- finishes, finish publishes '<state> <id>' on DONE_CHANNEL and drops the
-- mark, and keeps the job at least WATCH_KEEP ms, even where its
-- retention would delete it at once (completed jobs discarded), so that
-- its waiters can read it. A job nobody watches costs no command: finish
-- knows from what its caller read of the job (m.wt), or, when the caller
-- did not read F.watched, reads it only if the partition has watched
-- jobs at all (WATCHING exists: one EXISTS per script call). Mirrored by
-- store.WatchKeep.
local WATCH_KEEP = 60000
local watching_any = nil

-- is_watched says whether job jk, whose F.watched its caller did not
-- read, is watched (finish asks only while watching_any is not known
-- false: no call per job in a partition nobody waits on).
local function is_watched(jk)
  if watching_any == nil then watching_any = redis.call('EXISTS', WATCHING) == 1 end
  return watching_any and redis.call('HGET', jk, F.watched) ~= false
end

-- finish moves a job to a terminal state; reason may be ''. m is what the
-- caller read of the job ({ pa = parent or false, uk = unique key or
-- false, plain = as for delete_job, ls = lease start (a whole number of
-- ms: count_of) or nil, wt = F.watched or false, or nil when not read }),
-- or nil to read it here.
local function finish(jk, id, from, state, reason, m)
  if not m then
    local v = redis.call('HMGET', jk, F.parent, F.unique, F.watched)
    m = { pa = v[1], uk = v[2], plain = false, wt = v[3] }
  end
  TPUT[state] = (TPUT[state] or 0) + 1 -- the minute's tally (lib_batch.lua TPUT)
  if state == 'completed' and m.ls then tally_run(NOW - m.ls) end
  if m.pa ~= false then notify_parent(jk, id, state, m.pa) end -- no call for a job known to have no parent
  if m.uk then
    -- a unique key held while the job is active is free again
    local uq = unique_key(m.uk)
    if redis.pcall('GET', uq) == id and redis.call('PTTL', uq) < 0 then redis.call('DEL', uq) end -- pcall: a corrupt key holds no ID
  end
  local ret = RET[state]
  -- watched: the field as the caller read it (false: not set), else
  -- looked up unless the partition has no watched job
  local watched = m.wt
  if watched == nil and watching_any ~= false then watched = is_watched(jk) end
  if watched then
    redis.call('HDEL', jk, F.watched)
    call_aside('SREM', WATCHING, nil, id)
    -- a pcall: a channel an ACL refuses must not raise after the writes;
    -- the waiters' poll finds the end
    redis.pcall('PUBLISH', DONE_CHANNEL, state .. ' ' .. id)
    if ret < WATCH_KEEP then ret = WATCH_KEEP end
  end
  if (state == 'archived' or state == 'quarantined') and ret >= 0 and ret < DEATH_KEEP then ret = DEATH_KEEP end
  if ret < 0 then
    delete_job(id, m.plain, state, jk)
    count(from, nil)
    return
  end
  count(from, state)
  if reason ~= '' then
    redis.call('HSET', jk, F.state, SCODE[state], F.finished, NOW_S, F.reason, reason)
  else
    redis.call('HSET', jk, F.state, SCODE[state], F.finished, NOW_S)
  end
  zadd_later(TERMINAL[state], num_s(NOW + ret), id)
  if state == 'archived' or state == 'quarantined' then
    zadd_later(DEATHS, num_s(NOW + DEATH_GRACE), id)
  end
  if state == 'quarantined' then
    -- it holds its twins, unless one quarantined before it still does:
    -- then it is next (free_held)
    local qf = redis.call('HGET', jk, F.hold_fingerprint)
    if qf then
      local cur = redis.pcall('GET', hold_key(qf))
      if type(cur) ~= 'string' or state_of(fields(job_key(cur), F.state)[1]) ~= 'quarantined' then
        redis.call('SET', hold_key(qf), id)
      elseif cur ~= id then
        call_aside('RPUSH', hold_next_key(qf), true, id)
      end
    end
  end
end

-- park_unknown archives ('malformed') job jk, met in the index of state
-- from (its entry there taken already), when its hash holds a state no
-- release writes, or none (corrupt data), and says whether it did: taken
-- for a stale entry, it would be on no index. raw is its state field as
-- read (false or nil: none); a job with no hash (deleted) is not parked.
local function park_unknown(jk, id, raw, from)
  if raw and SCODE[state_of(raw)] then return false end
  if not raw then
    local n = redis.pcall('HLEN', jk)
    if type(n) ~= 'number' or n == 0 then return false end -- no job, or no hash
  end
  finish(jk, id, from, 'archived', 'malformed')
  return true
end

-- record_error keeps the last ERR_KEEP errors of a job, newest first.
-- A counter that is no count (corrupt data) is recorded as 0: tonumber
-- takes 'inf', 'nan' and '1e400', which cjson refuses to encode, and
-- raising here would fail the call after its other writes.
local function record_error(jk, id, kind, msg, stack)
  if #msg > MSG_MAX then msg = string.sub(msg, 1, MSG_MAX) end
  local a = count_of(redis.call('HGET', jk, F.attempt)) or 0
  local c = count_of(redis.call('HGET', jk, F.crash_attempt)) or 0
  redis.call('HSET', jk, F.last_error, msg)
  local ek = err_key(id)
  local entry = cjson.encode({ k = kind, t = NOW, a = a, c = c, m = msg, s = stack })
  if type(redis.pcall('LPUSH', ek, entry)) ~= 'number' then
    -- the key holds no list (corrupt data): raising here, after the
    -- call's other writes, would fail them all; the history starts anew
    redis.call('DEL', ek)
    redis.call('LPUSH', ek, entry)
  end
  redis.call('LTRIM', ek, 0, ERR_KEEP - 1)
end

-- crash charges crash_attempt and either quarantines the job at the
-- crash limit or retries it behind the work already waiting (suspect
-- demotion): retryable after delay ms (the worker's crash delay), doubling
-- with each crash up to CRASH_DELAY_MAX, so that a job that takes its
-- process down neither comes straight back nor comes back beside the jobs
-- it took down with it (claims also lease at most one job with a crash on
-- record per worker that runs none: claim.lua). A delay of 0 makes it
-- available at once, at the back of its list. rec, when given, is the
-- crash's error record ({ class, message, stack }: record_error), written
-- once the crash is counted: a record holds the counters with its own
-- failure counted, as a retry's does (ack.lua), so that the record of a
-- first crash reads crash 1, not the 0 of the error before it.
local CRASH_DELAY_MAX = 60000
-- bump adds 1 to the counter field f of job jk and returns it, or nil
-- when the field holds what HINCRBY refuses (corrupt data): HINCRBY would
-- raise, after the writes the call made for other jobs, and fail them
-- all; the caller archives this job as malformed instead.
local function bump(jk, f)
  local v = redis.pcall('HINCRBY', jk, f, 1)
  if type(v) ~= 'number' then return nil end
  return v
end
local function crash(jk, id, from, delay, rec)
  local c = bump(jk, F.crash_attempt)
  if rec then record_error(jk, id, rec[1], rec[2], rec[3]) end
  if not c then
    finish(jk, id, from, 'archived', 'malformed')
    return 'archived'
  end
  if c >= CRASH_LIMIT then
    finish(jk, id, from, 'quarantined', 'crash_limit')
    return 'quarantined'
  end
  if delay <= 0 then
    make_available(jk, id, from, false)
    return 'available'
  end
  schedule_at(jk, id, from, 'retryable', NOW + math.min(delay * 2 ^ (c - 1), math.max(delay, CRASH_DELAY_MAX)))
  return 'retryable'
end

-- lease_holder is the worker that holds lease, job jk's current lease:
-- named in it (lease_of), or, leased by an older release, in the job's
-- field ('' when none is).
local function lease_holder(jk, lease)
  local w = lease_of(lease)
  return w or redis.call('HGET', jk, F.worker) or ''
end

-- lease_began is the store time (ms, a string) at which job jk's current
-- lease began: named in it (lease_of), or, leased by an older release,
-- in the job's field (false when none is).
local function lease_began(jk, lease)
  local _, start = lease_of(lease)
  return start or redis.call('HGET', jk, F.lease_start)
end

-- record_orphan records on job jk, whose attempt (of lease ID lease,
-- held by holder) ended when its lease ran out, the orphan provenance:
-- the previous holder (F.orphan_holder), when its lease ended
-- (F.orphan_expired, expiry: digits) and how often this happened
-- (F.orphan_count). The attempt is over, not acked: its lease ID goes (a
-- late ack of it is stale, ack.lua) and stays as F.orphan_lease (stuck.lua:
-- its evidence still lands, a later incarnation's is told apart). The
-- reaper and a worker that gives a lease up by its own clock (ack.lua
-- 'expire') both record it. False, nothing
-- written but the lease ID's removal, when the counter is corrupt.
local function record_orphan(jk, holder, expiry, lease)
  redis.call('HDEL', jk, F.lease_id)
  if not bump(jk, F.orphan_count) then return false end
  redis.call('HSET', jk, F.orphan_holder, holder, F.orphan_expired, expiry, F.orphan_lease, lease or '')
  return true
end

-- cc_recount lowers each concurrency key's running count (K_CC) to the
-- jobs of the running index that hold it, letting a waiter go for each
-- slot freed (cc_release). A slot is freed by the call that ends its
-- job's attempt, which reads the key from the job; one whose job cannot be
-- read (its key holds no hash, or no job: corrupt data) would be held for
-- ever, and a key at its limit would strand its waiters. So the reaper
-- recounts when it ends such an attempt, and so does an ack or the
-- reaper that frees a key counting none (the job's key changed since its
-- claim, and the slot it took is another's). Not while another running job
-- cannot be read, whose slot may be one of those counted (the pass that
-- reaps it recounts), nor past 10,000 running jobs (a read each).
-- It runs only on such data, which no release writes.
local function cc_recount()
  local ids = call_aside('ZRANGE', K_RUN, nil, 0, 10001) -- and RUN_ANCHOR
  if #ids > 10001 then return end
  local ending = {}
  for _, id in ipairs(ZREMS[K_RUN] or {}) do ending[id] = true end
  local held = {}
  for _, id in ipairs(ids) do
    if id ~= RUN_ANCHOR and not ending[id] then
      local h, corrupt = fields(job_key(id), F.state, F.concurrency_key)
      if corrupt or state_of(h[1]) ~= 'running' then return end
      if h[2] then held[h[2]] = (held[h[2]] or 0) + 1 end
    end
  end
  local counts = redis.pcall('HKEYS', K_CC)
  if counts.err then return end -- set aside by the calls that write it
  for _, key in ipairs(counts) do
    -- a waiter goes per slot freed, up to 100 (a count of 1e9 is corrupt
    -- data too): those let go past the key's limit wait again at a claim
    local over = math.min(cc_running(key) - (held[key] or 0), 100)
    if over > 0 then
      CC[key] = (held[key] or 0) + over
      for _ = 1, over do cc_release(key) end
    end
  end
end

-- reap reclaims up to limit jobs whose lease expired (crashed, stalled or
-- partitioned workers) and returns a flat list of id, new state, previous
-- holder for each. Each frees its concurrency slot, if it has one, and is
-- charged a crash: running -> retryable (crash_attempt+1, after the crash
-- delay of crash(); available at once for a delay of 0: suspect demotion)
-- or running -> quarantined at the crash limit; a job whose key holds
-- something other than a job hash is archived ('malformed'), the value
-- set aside (set_aside: x:j:<id>, or x:j#2:<id> ... when that is taken).
-- Orphan provenance is recorded on the job (record_orphan). A job whose
-- state field names no state, or is missing, is archived ('malformed')
-- too, its slot freed. When an entry's job cannot say which concurrency
-- key it held (its key holds no hash, or no job), the pass recounts the
-- keys' running jobs (cc_recount).
local function reap(limit, delay)
  local expired = call_aside('ZRANGEBYSCORE', K_RUN, nil, '-inf', NOW_S, 'WITHSCORES', 'LIMIT', '0', limit)
  local out = {}
  local fs, fw, fk = F.state, F.worker, F.concurrency_key
  local unknown = false -- an entry whose job's concurrency key is unknown
  for i = 1, #expired, 2 do
    local id, expiry = expired[i], expired[i + 1]
    -- written as digits, as Go reads it: miniredis writes a score of
    -- 1767200000000 as '1.7672e+12' (a corrupt score is kept as it is)
    local e = count_of(expiry)
    if e then expiry = num_s(e) end
    local jk = job_key(id)
    local h, corrupt = fields(jk, fs, fw, fk, F.lease_id)
    local s, holder, ck, lease = h[1], h[2], h[3], h[4]
    holder = lease_of(lease) or holder -- F.worker: an older release's claim
    s = state_of(s)
    clear_lease(id)
    if corrupt then
      -- its key holds something that is not a job hash: set that aside
      -- and archive the job, out of the running count (as a claim does
      -- with an available one)
      set_aside(jk, 'j:' .. id)
      redis.call('HSET', jk, fs, SCODE.running, F.kind, '', F.payload, '', F.created, NOW_S)
      finish(jk, id, 'running', 'archived', 'malformed')
      out[#out + 1] = id
      out[#out + 1] = 'archived'
      out[#out + 1] = ''
      unknown = true
    elseif s ~= 'running' and park_unknown(jk, id, h[1], 'running') then
      -- its slot freed too
      if ck then cc_release(ck) end
      out[#out + 1] = id
      out[#out + 1] = 'archived'
      out[#out + 1] = holder or ''
    elseif s ~= 'running' then
      -- no job (its hash deleted by hand) or one that no longer runs,
      -- left in the index (corrupt data): nothing of it to end here
      unknown = true
    else
      if ck then
        -- a key that counts no running job is not the one its claim
        -- counted (corrupt data): that one is recounted
        if cc_running(ck) <= 0 then unknown = true end
        cc_release(ck)
      end
      holder = holder or ''
      out[#out + 1] = id
      if not record_orphan(jk, holder, expiry, lease) then
        -- a corrupt orphan counter: archived, as crash() does a corrupt
        -- crash counter, instead of raising after the pass's other writes
        finish(jk, id, 'running', 'archived', 'malformed')
        out[#out + 1] = 'archived'
      else
        out[#out + 1] = crash(jk, id, 'running', delay, { 'lease_expired', 'lease expired while held by ' .. holder, '' })
      end
      out[#out + 1] = holder
    end
  end
  if unknown then cc_recount() end
  return out
end

-- sweep deletes up to limit finished jobs per terminal state whose
-- retention has passed, with all their keys, and returns how many.
local function sweep(limit)
  local deleted = 0
  local fs = F.state
  for state, zk in pairs(TERMINAL) do
    local ids = call_aside('ZRANGEBYSCORE', zk, nil, '-inf', NOW_S, 'LIMIT', '0', limit)
    for _, id in ipairs(ids) do
      zrem_later(zk, id)
      local jk = job_key(id)
      local h, corrupt = fields(jk, fs)
      local s = state_of(h[1])
      if corrupt then
        -- its key holds no job hash: set the value aside (as a claim
        -- does) and drop the job from its state's count
        set_aside(jk, 'j:' .. id)
        count(state, nil)
      elseif s == state or not (s and SCODE[s]) and (s or redis.call('EXISTS', jk) == 1) then
        -- or its state is none a release writes (corrupt data): deleted
        -- as its index's state, not left on no index
        delete_job(id, false, state)
        count(state, nil)
        deleted = deleted + 1
      end
    end
  end
  return deleted
end

-- promote moves up to limit due scheduled/retryable jobs to available,
-- after moving up to SCHED_NEAR_MAX jobs of buckets coming due into sched.
local SCHED_NEAR_MAX = 256
local function promote(limit)
  if tonumber(limit) > 0 then sched_near(SCHED_NEAR_MAX) end
  -- sched_near may have written: a sched of another type is set aside
  local due = call_aside('ZRANGEBYSCORE', K_SCHED, nil, '-inf', NOW_S, 'LIMIT', '0', limit)
  local fs, fr = F.state, F.run_at
  for _, id in ipairs(due) do
    redis.call('ZREM', K_SCHED, id)
    local jk = job_key(id)
    local h, corrupt = fields(jk, fs, fr)
    local s, at = state_of(h[1]), tonumber(h[2])
    -- a job put off to a bucket of later jobs since (sched_add) has a
    -- stale entry here: it stays in its bucket. A due time that is no
    -- finite number ('nan', 'inf', '1e400', which tonumber takes: corrupt
    -- data) names no bucket: this entry is the job's, and it is due (as
    -- for one that is no number; lib_ready.lua, the scheduled index)
    if at and not (at > -math.huge and at < math.huge) then at = nil end
    if (s == 'scheduled' or s == 'retryable') and not (at and at > NOW) then
      -- a parent whose join wait timed out stops waiting
      if s == 'scheduled' then redis.call('HDEL', jk, F.wait_step, F.wait_count, F.wait_policy, F.wait_members) end
      make_available(jk, id, s, false)
    elseif not corrupt and s ~= 'scheduled' and s ~= 'retryable' then
      park_unknown(jk, id, h[1], 'scheduled') -- a state no release writes
    end
  end
  return #due
end

-- promote_pinned applies the fallback of pinned jobs whose preferred worker
-- did not claim them in time, and archives a job that waits for its worker
-- alone once its deadline passed (push_ready lists it in pinx at its
-- deadline), and one waiting on its concurrency key or rate class (a
-- claim listed it at its deadline: claim.lua wait_dated), off its wait
-- list (unlist); it returns the IDs it archived and why, in pairs.
local function promote_pinned()
  local failed = {}
  local left = {} -- workers whose pin lists this lost entries: pin_left once each
  local due = call_aside('ZRANGEBYSCORE', PIN_DEADLINES, nil, '-inf', NOW_S, 'LIMIT', '0', '100')
  local fs, fm, fp, fck, fcn, fw = F.state, F.sticky_mode, F.priority, F.concurrency_key, F.concurrency_limit,
    F.sticky_worker
  for _, id in ipairs(due) do
    call_aside('ZREM', PIN_DEADLINES, nil, id)
    local jk = job_key(id)
    local h = fields(jk, fs, fm, fp, fck, fcn, fw, F.deadline, F.held_by, F.hold_fingerprint)
    local dl = h[7] and count_of(h[7])
    local late = dl and dl <= NOW -- its deadline passed (it is listed at it when that is before its fallback)
    if state_of(h[1]) == 'available' then
      if h[2] == 'a' and not late then
        redis.call('HSET', jk, F.sticky_fallback, '1') -- handed to every worker: claims take it from the shared list
        local p = priority_of(h[3])
        call_aside('LPUSH', avail_key(p), true, id)
        -- its entry leaves its worker's pin list, which a worker that
        -- never comes back would keep for ever; from the head, where the
        -- oldest entries are (LREM is O(position)); a pcall: a key of
        -- another type holds no entry, and raising would fail the call
        if h[6] and h[6] ~= '' then
          local gone = redis.pcall('LREM', pin_key(h[6]), 1, id)
          if type(gone) == 'number' and gone > 0 then left[h[6]] = true end
        end
        mark_priority(p)
        wake()
      elseif h[2] == 'f' or late then
        -- its FailAfter fell due, or its worker did not come by its
        -- deadline (archived as a claim archives a job it meets then,
        -- before any fallback: a job past its deadline never runs). Its
        -- entry leaves its worker's pin list (or the wait list it is on),
        -- as a cancel's does: left there, it leaked on the list of a
        -- worker that never comes back, and a redrive listed it twice
        unlist(jk, id, true)
        -- one held behind a quarantined twin was promoted at its deadline
        -- (held_due), its entry here due then: held no more, as when a
        -- claim archives it (else it showed held though archived)
        unhold(jk, id, h[8], h[9])
        -- (each reason written out: TestReasonsAgreeWithCode reads them)
        if late then
          finish(jk, id, 'available', 'archived', 'deadline_exceeded')
          failed[#failed + 1], failed[#failed + 2] = id, 'deadline_exceeded'
        else
          finish(jk, id, 'available', 'archived', 'sticky_unavailable')
          failed[#failed + 1], failed[#failed + 2] = id, 'sticky_unavailable'
        end
        if h[4] then cc_release(h[4], h[5] or 1) end -- perhaps the waiter its key let go
      end
    end
  end
  for w in pairs(left) do pin_left(w) end
  return failed
end

-- timed_indexes says whether any of the partition's timed indexes (the
-- zsets next_due reads, which promotion pops) exists: one command, where
-- reading the four empty ones took four.
local function timed_indexes()
  return redis.call('EXISTS', K_SCHED, K_RWAKE, PIN_DEADLINES, K_LATER) > 0
end

-- next_due is the earliest time something becomes claimable: a scheduled
-- job, a rate token, a sticky fallback, or the time a bucket of later jobs
-- is to move into sched; STATUS.no_due (-1) when there is none.
local function next_due()
  local nd = STATUS.no_due
  if not timed_indexes() then return nd end
  for _, k in ipairs({ K_SCHED, K_RWAKE, PIN_DEADLINES, K_LATER }) do
    local first = redis.pcall('ZRANGE', k, '0', '0', 'WITHSCORES')
    if first.err then first = call_aside('ZRANGE', k, nil, '0', '0', 'WITHSCORES') end
    if #first > 0 then
      local t = tonumber(first[2])
      if k == K_LATER then t = t - SCHED_HORIZON end -- when its bucket moves into sched
      if nd < 0 or t < nd then nd = t end
    end
  end
  return nd
end
