-- claim.lua: lease up to n ready jobs of one partition to a worker.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  n, the most jobs to claim
-- ARGV[10] default lease duration (ms)
-- ARGV[11] worker identity (recorded as the lease holder)
-- ARGV[12] lease nonce, fresh per claim: lease IDs are
--          worker .. '/' .. NOW_S .. '/' .. nonce .. '.' .. i (lease_of,
--          lib.lua: the holder and lease start, which the job's hash then
--          needs no field for), then PLAIN_LEASE for a job with no parent,
--          unique key or concurrency key, BARE_LEASE for such a job with
--          no body key (lib.lua)
-- ARGV[13] how many due scheduled jobs to promote first
-- ARGV[14] m, then m pairs (kind, lease ms) overriding the default lease
-- ARGV[15 + 2m] '1' when the worker runs no suspect (a job with a crash on
--          record): this claim may lease one; '0' (or absent) when it
--          runs one already
-- ARGV[16 + 2m] k > 0: when this claim runs dry, leave an offer of up to
--          k jobs (at most the n it did not fill) to be pushed to the
--          worker (lib_offer.lua); 0 (or absent): none
-- ARGV[17 + 2m] how long the offer holds (ms)
-- ARGV[18 + 2m] the rest of the offer as lib_offer.lua writes it, from
--          its lease on
-- Returns: { next_due, archived[, jobs] }
--   next_due  when fewer than n jobs were claimed (the partition ran dry):
--             how long after NOW (ms, 0 when due already) the first thing
--             becomes claimable (next_due in lib_lifecycle.lua: a scheduled
--             job, a rate token, a sticky fallback, a bucket of later
--             jobs), or -1 when nothing is scheduled; -2 when n jobs were
--             claimed; -3 when suspects were passed over (claim again
--             soon). A delay, not a time: the worker adds it to the time
--             it sent the claim by its own clock, which may be off from
--             Redis's (a due time compared with that clock made an idle
--             worker ahead of Redis claim without pause); 0 too when
--             archiving a job let a concurrency key's waiter go
--             (lib_limits.lua cc_release), which is ready then
--   archived  flat list of id, reason for jobs moved to archived instead
--             of being claimed (deadline passed, malformed hash)
--   jobs      present when a job was leased: the leased jobs packed as
--             one msgpack string (lib_pack.lua), a list of one list per
--             job: id, lease ID, lease expiry, fence, steps, fields, body.
--             fence is the new fence; steps the job's step checkpoints
--             (flat HGETALL, empty when none); fields its hash as it was
--             before the claim (flat HGETALL), whose fence and lease
--             fields the claim has since replaced; body a payload kept in
--             its own key (lib_chunks.lua, put_payload), or false
-- Suspect isolation: a claim leases at most one job with a crash on
-- record ('c' > 0), and none for a worker that runs one already. Others
-- it meets stay where they were, at the front of their lists, for another
-- worker; a claim passes over at most HELD_MAX of them (then it stops
-- popping that list), and when that leaves it short it answers next_due
-- -3, so the worker looks again soon. A job that takes its process down
-- thus runs beside healthy jobs only, and its innocent victims, which are
-- suspects after one crash, never run beside it again: only the culprit
-- reaches the crash limit.
-- Sticky jobs wait on their preferred worker's pin list, which only that
-- worker's claims read; when a fallback deadline passes, After hands the
-- job to every worker (the shared list) and FailAfter archives it
-- ('sticky_unavailable'). An entry whose job is routed elsewhere is
-- stale when a reroute left it (F.sticky_left names the pin list; on the
-- shared list, a pinned job not handed by its fallback) and is dropped;
-- else its routing changed without a reroute (corrupt data), the entry
-- is its only one, and it goes to the front of the list its routing
-- names (push_ready, a fallback deadline already running kept), never
-- dropped; unless it waits on its concurrency key's or rate class's
-- wait list (a reroute by an older release records no F.sticky_left:
-- the entry is stale, the wait list its place). A pinned job its
-- worker's claim leases has its fallback deadline removed (else the
-- deadline stayed, the job long done, and kept the partition's claims
-- promoting until it passed). One its worker's claim sets waiting
-- on its concurrency key or rate class waits for that, not for its
-- worker: its fallback deadline goes (else After would list it a second
-- time, FailAfter archive it with its wait-list entry left behind), and
-- starts over when the key or class lets it go to its worker's list
-- (lib_ready.lua push_ready). Any job a claim sets waiting with a
-- deadline is listed in pinx at it (wait_dated): archived then by the
-- first claim of the partition, off its wait list, not when its key or
-- class lets it go.
-- Transitions: scheduled|retryable -> available (promotion), scheduled
--   -> archived ('malformed': promotion meets a state field that names no
--   state),
--   available -> running (claim), available -> archived
--   ('deadline_exceeded', 'malformed' for a job it cannot read or whose
--   state field names no state,
--   'sticky_unavailable' when a FailAfter fallback is due). A job whose
--   concurrency key is at its limit, or whose rate class has no token,
--   stays available but moves to that key's or class's wait list
--   (lib_limits.lua, flow control) instead of being claimed.
-- A list it pops (its pin list, a shared one) whose key holds another
-- type (corrupt data) is set aside under x:list:<key> and taken as empty.
-- Each claim increments the job's fence and draws a new lease ID; the pair
-- is the attempt's identity. When the partition runs dry the idle flag is
-- set so the next enqueue publishes a wake-up, or (ARGV[16 + 2m]) an
-- offer, by which the next enqueues may lease plain jobs to this worker
-- themselves (lib_offer.lua).
-- A paused partition (keys.Partition.Paused, set by pause.lua) claims and
-- promotes nothing: it answers { -1, {} } and sets the idle flag, so that
-- resuming it publishes a wake-up.
-- A re-sent claim (lib_replay.lua) answers the jobs its first run leased
-- that still run under those leases, unexpired by store time (a lapsed
-- one is the reaper's: started now, its handler would run on a lease
-- that every write of it finds over), and what it archived (a first run
-- that made an offer is recorded too: a second run would make it again,
-- its lease IDs given twice); when the first
-- run ran dry and the idle flag has gone since (a job was listed), its
-- next_due is 0, claim again now. Its record
-- holds next_due, the archived list and the leased IDs in lease order,
-- not the jobs' data, which is read again. next_due is answered as the
-- first run computed it, a delay from that run's NOW: the worker adds it
-- to the time it first sent the call, which that run is the closer to (a
-- delay from the re-send's NOW would be short by the re-send's lag).
do local refused = model_error() if refused then return refused end end
local record = redis.call('GET', CALL_KEY)
if record then
  record = unpack_record(record)
  local jobs = {}
  for k = 3, #record do
    local id = record[k]
    local jk = job_key(id)
    local h = redis.call('HMGET', jk, F.state, F.lease_id, F.fence, F.has_steps, F.payload_body)
    -- the lease ID the first run gave it: this worker's, ending with this
    -- call's nonce and the job's place, then its mark; that run's store
    -- time between (lease_of's shape, written out: claim's function has
    -- room for no more of the library's names, TestUpvalueHeadroom)
    local lease, tail = h[2] or '', '/' .. ARGV[12] .. '.' .. (k - 2)
    local mark = string.sub(lease, -1)
    local core = (mark == PLAIN_LEASE or mark == BARE_LEASE) and string.sub(lease, 1, -2) or lease
    if string.sub(core, -#tail) ~= tail or string.sub(core, 1, #ARGV[11] + 1) ~= ARGV[11] .. '/' then lease = nil end
    -- count_of: a fence or expiry that tonumber reads as inf or nan
    -- (corrupt data) would not pack as an integer; such a job is left out
    local expiry, fence = redis.call('ZSCORE', K_RUN, id), count_of(h[3])
    expiry = expiry and count_of(expiry)
    if (SNAME[h[1]] or h[1]) == 'running' and h[2] == lease and expiry and expiry > NOW and fence then
      local steps = {}
      if h[4] then steps = redis.call('HGETALL', steps_key(id)) end
      jobs[#jobs + 1] = { id, lease, expiry, fence, steps, redis.call('HGETALL', jk),
        h[5] and redis.call('GET', body_key(id)) or false }
    end
  end
  -- the first run found the partition dry: if a job was listed since,
  -- its wake deleted the idle flag (and any offer), and the wake-up it
  -- published may have reached the worker before this answer, which
  -- would tell it to sleep; it is told to claim again at once instead
  local nd = record[1]
  if nd ~= STATUS.claimed_all and redis.call('EXISTS', K_IDLE) == 0 then nd = 0 end
  if #jobs == 0 then return { nd, record[2] } end
  return { nd, record[2], pack_value(jobs) }
end
if redis.call('EXISTS', PAUSED) == 1 then
  redis.call('SET', K_IDLE, '1')
  return { STATUS.no_due, {} }
end
local n = tonumber(ARGV[9])
local lease_ms = tonumber(ARGV[10])
local worker = ARGV[11]
-- what every lease ID of this call starts with (ARGV[12])
local pre = worker .. '/' .. NOW_S .. '/' .. ARGV[12] .. '.'
-- The four timed indexes (buckets of later jobs, sched, rate wake-ups,
-- pin deadlines) and this worker's pin list are empty in most partitions:
-- one EXISTS spares their five reads here (when none exists nothing is
-- due, and nothing promoted can be pinned here) and next_due's four (an
-- idle worker's claim, on the path of every pick-up, ran 21 commands, 9
-- of them these).
local quiet = redis.call('EXISTS', K_LATER, K_SCHED, K_RWAKE, PIN_DEADLINES, pin_key(worker)) == 0
local unpinned = {}
if not quiet then
  promote(ARGV[13])
  promote_rated()
  unpinned = promote_pinned()
end
local kind_lease = {}
local m = tonumber(ARGV[14])
for i = 0, m - 1 do kind_lease[ARGV[15 + 2 * i]] = tonumber(ARGV[16 + 2 * i]) end
local suspect_ok = ARGV[15 + 2 * m] == '1'
-- HELD_MAX: the most suspects a claim passes over in one list; then it
-- pops no more of that list (what follows stays there, in order) and goes
-- on to the next, so suspects at the head of one list hide no other's jobs
local HELD_MAX = 64
-- held: suspects this claim passed over, { list, id, priority }, put back
-- at the front of their lists after the pops
local held = {}

local jobs, archived = {}, {}
local longest = 0 -- the longest lease made (ms)
local NO_STEPS = {}
-- seen: the IDs this claim has acted on. A job can be listed twice (a
-- stale entry left by a cancel, a debounce or a reroute, and a fresh one),
-- and both copies can come in one pop, where the hashes read before either
-- is handled would let the second pass as available too: a second lease.
-- An entry dropped as stale changes nothing and is not counted: the job's
-- live entry, perhaps further on in this claim, must still be taken.
local seen = {}

-- passes: per concurrency key (ck) of an available job this claim
-- archived or set waiting on its rate class, the highest limit among them
-- and how many: each may be a waiter a freed slot let go, whose turn no
-- other waiter takes until that slot is freed again. Once the pops are
-- done, a next waiter goes for each of them when the key has room
-- (lib_limits.lua cc_release). Not at once: a waiter this claim set
-- waiting would meet its entry again in this claim, where it would be
-- dropped as a repeat.
local passes = {}
local function pass_on(ck, limit)
  if not ck then return end
  local ps = passes[ck] or { 0, 0 }
  passes[ck] = { math.max(ps[1], tonumber(limit) or 1), ps[2] + 1 }
end
-- wait_dated indexes a job this claim sets waiting on its concurrency key
-- or rate class: with a deadline (dl, its field), in pinx at it, where
-- the first claim of the partition then archives it (promote_pinned),
-- its wait-list entry taken with it (before, it stayed waiting until its
-- key or class let it go and a claim met it, hours late behind long
-- jobs); with none, a pinned one (met on its worker's pin list) loses
-- its fallback time there, as it waits for its key or class, not for its
-- worker (see the header). A job with neither pays nothing. Its entry
-- leaves with it when it leaves the wait list otherwise (requeue_front,
-- let_go, unlist; reroute.lua lists it at its deadline still).
local function wait_dated(id, dl, pinned)
  local d = count_of(dl) -- (none, '0' or corrupt data: nil or 0, no deadline)
  if d and d > 0 then
    call_aside('ZADD', PIN_DEADLINES, nil, d, id)
  elseif pinned then
    call_aside('ZREM', PIN_DEADLINES, nil, id)
  end
end
-- rate_limited takes a token from the job's rate class, or parks the job
-- until there is one and reports true (lib_limits.lua rate_take); its
-- concurrency key ck (limit) then passes its turn on. dl and pinned are
-- wait_dated's.
local function rate_limited(class, id, ck, limit, dl, pinned)
  if not rate_take(class, id) then return false end
  pass_on(ck, limit)
  wait_dated(id, dl, pinned)
  return true
end
-- key_wait sets the job waiting on its concurrency key ck. A job of a rate
-- class that its class let go gives its promised token back (unowe). dl
-- and pinned are wait_dated's.
local function key_wait(ck, id, class, dl, pinned)
  cc_wait(ck, id)
  unowe(class, id)
  wait_dated(id, dl, pinned)
end
-- park archives a job this claim met (reason); pinned, met on its
-- worker's pin list, its fallback time or deadline leaves pinx with it, as
-- a cancel's unlist takes it (left there, a Wait job's deadline days ahead
-- kept every claim of the partition reading the timed indexes)
local function park(jk, id, reason, ck, limit, class, pinned)
  if pinned then call_aside('ZREM', PIN_DEADLINES, nil, id) end
  finish(jk, id, 'available', 'archived', reason)
  unowe(class, id)
  archived[#archived + 1] = id
  archived[#archived + 1] = reason
  pass_on(ck, limit)
end

for i = 1, #unpinned, 2 do
  archived[#archived + 1] = unpinned[i]
  archived[#archived + 1] = unpinned[i + 1]
end

-- take claims from the list ak (of priority prio; nil for a pin list)
-- until n jobs are claimed or it is empty, and says whether it emptied it
-- and whether it took any entry from it.
-- From a pin list (pinned to worker), it skips jobs rerouted elsewhere.
local function take(ak, pinned_to, prio)
  -- the job fields read and written per job, looked up once per take
  local fs, fk, fp, fpb, fa, fc, ff = F.state, F.kind, F.payload, F.payload_body, F.attempt, F.crash_attempt, F.fence
  local fdl, fck, fcn, frk, fsw, fsf = F.deadline, F.concurrency_key, F.concurrency_limit, F.rate_class,
    F.sticky_worker, F.sticky_fallback
  local fsm, fsl = F.sticky_mode, F.sticky_left
  local fl, fsx = F.lease_id, F.has_steps
  local skipped, got = 0, false -- suspects of this list passed over; whether it popped any
  while #jobs < n and skipped < HELD_MAX do
    local want = n - #jobs
    local ids = redis.pcall('LPOP', ak, want)
    if type(ids) == 'table' and ids.err then
      -- the list's key holds another type (corrupt data, e.g. this
      -- worker's pin list): no entry can be read from it; raising would
      -- undo nothing promotion wrote and fail every claim of this worker,
      -- so the value is set aside as a push sets it aside (call_aside)
      set_aside(ak, 'list:' .. ak)
      return true, true
    end
    if not ids then return true, got end
    got = true
    local raws, hs, ckeys, jks = {}, {}, {}, {}
    for i, id in ipairs(ids) do
      local jk = job_key(id)
      jks[i] = jk
      local raw = redis.pcall('HGETALL', jk)
      raws[i] = raw
      if not raw.err then
        local h = {}
        for k = 1, #raw, 2 do h[raw[k]] = raw[k + 1] end
        local st = h[fs]
        h[fs] = SNAME[st] or st -- state_of, written out: a call per job
        hs[i], ckeys[i] = h, h[fck]
      end
    end
    cc_prefetch(ckeys)
    for i, id in ipairs(ids) do
      local jk = jks[i]
      local h = hs[i]
      -- sw: the worker it is pinned to, if any (push_ready: a worker that
      -- is no empty string, and a mode)
      local sw = h and h[fsw]
      if sw == '' or not (h and h[fsm]) then sw = nil end
      if seen[id] then
        -- this claim acted on the job already (leased, parked or set it
        -- waiting): a repeat entry, stale; drop it
      elseif not h then
        seen[id] = true
        -- the key holds something that is not a job hash: set it aside
        set_aside(jk, 'j:' .. id)
        redis.call('HSET', jk, fs, SCODE.available, fk, '', fp, '', F.created, NOW_S)
        park(jk, id, 'malformed', nil, nil, nil, pinned_to)
      elseif h[fs] == 'available' and pinned_to and (sw ~= pinned_to or h[fsf]) then
        -- rerouted since it was pinned here (the reroute recorded that it
        -- left this list), or handed to every worker by its fallback (its
        -- live entry is the shared list's): its entry on this list is
        -- stale. Pinned elsewhere, or not at all, with no such record, its
        -- routing changed without a reroute (corrupt data): this entry is
        -- its only one, and it goes where its routing says (to the front
        -- of that list; the shared list's, where this claim may take it),
        -- not dropped, which would leave it available on no list. A
        -- reroute by an older release records nothing either: the job
        -- may wait on its concurrency key's or rate class's wait list
        -- (its place then: not listed anew, waits_listed), or be listed
        -- on its new list with its fallback running (kept: push_ready's
        -- keep)
        if not h[fsf] and not string.find(' ' .. (h[fsl] or '') .. ' ', ' ' .. pinned_to .. ' ', 1, true)
          and not waits_listed(id, h[fck], h[frk]) then
          push_ready(id, true, h[F.priority], sw, h[fsm], h[F.sticky_delay], true, h[fdl])
          if sw then seen[id] = true end
        end
      elseif h[fs] == 'available' and not pinned_to and sw and not h[fsf] then
        -- pinned (rerouted) since it was listed here, and its fallback has
        -- not handed it to every worker: the entry is stale (a job is
        -- listed on the shared list while pinned only once its fallback
        -- handed it there; a pin with no mode, or to '', is none)
      elseif h[fs] == 'available' then
        seen[id] = true -- every branch below acts on the job
        local kind, ck, crashes = h[fk], h[fck], count_of(h[fc]) -- crashes: nil when corrupt
        local dl, fence = h[fdl] and tonumber(h[fdl]), count_of(h[ff])
        -- a body key that holds no string is corrupt data: no payload
        local body = h[fpb] and redis.pcall('GET', body_key(id)) or false
        if type(body) ~= 'string' then body = false end
        if not kind or kind == '' or not (h[fp] or body) or not fence or not count_of(h[fa])
          or not crashes then
          park(jk, id, 'malformed', ck, h[fcn], h[frk], pinned_to)
        elseif dl and (dl <= NOW or h[F.held_by]) then
          -- held behind a quarantined twin, it was listed at its deadline
          -- (lib_ready.lua held_due), which has passed though the clock
          -- may have gone back since (a failover): archived, not run while
          -- its twin is quarantined; held no more
          unhold(jk, id, h[F.held_by], h[F.hold_fingerprint])
          park(jk, id, 'deadline_exceeded', ck, h[fcn], h[frk], pinned_to)
        elseif crashes > 0 and not suspect_ok then
          held[#held + 1] = { ak, id, prio } -- a suspect, and this worker has one
          skipped = skipped + 1
          if pinned_to and (h[fsm] == 'a' or h[fsm] == 'f') then
            -- its worker came, and passed it over as a suspect: its
            -- fallback, for a worker that does not come, starts over (XX:
            -- one that already went stays gone), never past its deadline
            -- (push_ready's rule, written out: a shared helper would be
            -- one upvalue more than this function has room for,
            -- TestUpvalueHeadroom)
            local at = NOW + (count_of(h[F.sticky_delay]) or 0)
            if dl and dl > 0 and dl < at then at = dl end
            call_aside('ZADD', PIN_DEADLINES, nil, 'XX', at, id)
          end
        elseif ck and cc_running(ck) >= math.max(count_of(h[fcn]) or 1, 1) then
          key_wait(ck, id, h[frk], h[fdl], pinned_to) -- its key is at its limit
        elseif h[frk] and rate_limited(h[frk], id, ck, h[fcn], h[fdl], pinned_to) then
          -- parked on its rate class (rate_limited did it)
        else
          -- read only for a job it leases, before the lease is written: a
          -- checkpoints key that holds no hash (an error reply) is corrupt
          -- data too
          local steps = h[fsx] and redis.pcall('HGETALL', steps_key(id)) or NO_STEPS
          if steps.err then
            -- it does not run: the rate token taken for it goes back,
            -- to the class's next waiter
            rate_untake(h[frk])
            park(jk, id, 'malformed', ck, h[fcn], nil, pinned_to)
          else
            if ck then CC[ck] = cc_running(ck) + 1 end
            if crashes > 0 then suspect_ok = false end
            fence = fence + 1
            local mark = ''
            if not (ck or h[F.parent] or h[F.unique]) then mark = h[fpb] and PLAIN_LEASE or BARE_LEASE end
            local lease = pre .. (#jobs + 1) .. mark -- one string made, not two
            local ms = kind_lease[kind] or lease_ms
            if ms > longest then longest = ms end
            local expiry = NOW + ms
            redis.call('HSET', jk, fs, SCODE.running, ff, num_s(fence), fl, lease)
            -- the holder and start of an earlier lease, as an older
            -- release recorded them: that release's readers (its reaper,
            -- its inspection) read this lease's from them, and would name
            -- that worker and time; gone, they name none (a job leased by
            -- this release alone pays a table lookup)
            if h[F.worker] or h[F.lease_start] then redis.call('HDEL', jk, F.worker, F.lease_start) end
            -- its worker came (see the header)
            if pinned_to and (h[fsm] == 'a' or h[fsm] == 'f' or dl) then call_aside('ZREM', PIN_DEADLINES, nil, id) end
            lease_later(num_s(expiry), id)
            jobs[#jobs + 1] = { id, lease, expiry, fence, steps, raws[i], body }
          end
        end
      elseif #raws[i] > 0 and not SCODE[h[fs]] then
        -- a state no release writes, or none, in a hash (corrupt data):
        -- archived, not dropped as a stale entry (a deleted job's), which
        -- would leave it on no index
        seen[id] = true
        park(jk, id, 'malformed', h[fck], h[fcn], h[frk], pinned_to)
      end
      -- any other state: a stale list entry (the job moved on); drop it
    end
    if #ids < want then return true, got end
  end
  return false, got
end

-- This worker's pinned jobs first (sticky routing), then the shared lists
-- from the highest priority down (those the priority mask flags, and 0).
-- Other workers' pin lists are never touched, so a backlog pinned
-- elsewhere costs this claim nothing.
flush_pushes() -- promoted jobs are in their lists before the pops
local pin_taken = false
if not quiet then pin_taken = select(2, take(pin_key(worker), worker)) end
take_flagged(take, jobs, n)
if #jobs < n then take(avail_key(0), nil, 0) end
count('available', 'running', #jobs) -- every job leased, counted once
for i = #held, 1, -1 do
  redis.call('LPUSH', held[i][1], held[i][2])
  if held[i][3] then mark_priority(held[i][3]) end
end
-- once the suspects are back: a pin list this claim emptied leaves the
-- index of pin lists (a claim that took no entry from it pays nothing)
if pin_taken then pin_left(worker) end
rate_fronts()
local passed = false
for ck, ps in pairs(passes) do
  for _ = 1, ps[2] do
    if cc_release(ck, ps[1]) then passed = true end
  end
end

flush()
local nd, offered = STATUS.claimed_all, false
if #jobs < n then
  nd = next_due()
  if nd >= 0 then nd = math.max(nd - NOW, 0) end -- a delay: see Returns
  if #held > 0 then nd = STATUS.held_suspects end
  if passed then nd = 0 end -- a waiter let go is ready now
  -- an offer only while the lists are empty: not with suspects put back,
  -- nor with a waiter let go; and only until the first thing scheduled
  -- comes due (its promotion is a claim's, which the offer would skip)
  local k = math.min(tonumber(ARGV[16 + 2 * m]) or 0, n - #jobs)
  if k >= 1 and #held == 0 and not passed then
    offered = true
    redis.call('SET', K_IDLE, offer_text(k, ARGV[17 + 2 * m], nd, ARGV[18 + 2 * m]))
  else
    redis.call('SET', K_IDLE, '1')
  end
end
local leased = { nd, archived }
for i, job in ipairs(jobs) do leased[i + 2] = job[1] end
-- an offer is recorded too: a re-sent claim must not make it again, its
-- count and lease IDs afresh, beside the pushes it already gave
-- kept as long as the longest lease it made, when that is longer than
-- the call's keep: the worker may send it again for as long
-- (runtime's resendFor), for jobs of a kind with a long lease
local keep = nil
if longest > tonumber(CALL_KEEP) then keep = num_s(longest) end
if #jobs > 0 or #archived > 0 or offered then remember(leased, keep) end
if #jobs == 0 then return { nd, archived } end
return { nd, archived, pack_value(jobs) }
