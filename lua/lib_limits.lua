-- lib_limits.lua: the prelude's flow control: concurrency keys and rate
-- classes, decided inside the scripts so any number of workers together
-- never exceed them.

-- Flow control. A job may carry a concurrency key (F.concurrency_key) and
-- limit (F.concurrency_limit): at most that many jobs of the key run at
-- once in this partition; and a rate class (F.rate_class) whose token
-- bucket (PFX .. 'rl:' .. class, its parameters set by the latest
-- enqueue) allows n jobs per p ms with a burst of b. A job that cannot run
-- now leaves the available lists for the key's or the
-- class's wait list, so it never holds up other work, and it comes back to
-- the front of its priority when a slot or a token frees.
-- Counters and buckets are per partition (one slot).

local function cc_running(key)
  local n = CC[key]
  if n == nil then
    n = tonumber((call_aside('HGET', K_CC, nil, key))) or 0
    CC[key] = n
  end
  return n
end

-- Promises (docs/design/rate-waiters.md). A rate class that lets a
-- waiter go to a ready list promises it a token until its claim: the
-- zset ratego_key(class) holds each such job, scored with the time (ms)
-- until which the promise stands: the time the class takes to refill a
-- token after it went, at least PIN_GRACE and at most PROMISE_KEEP
-- (promise_keep), or PIN_GRACE for a job pinned to a worker, which may be
-- gone. A waiter not claimed by then (on a list the workers do not reach
-- while they have work of a higher priority) no longer holds the token
-- from the class's other waiters. A pass lets go only the tokens not
-- promised, and a newcomer's claim takes only those, so a second pass
-- before the claims (workers busy with other work, a cancel that wakes
-- the class) lets no more waiters go than there are tokens. Every token a
-- claim takes is still counted in the bucket, so a promise that outlives
-- its job (a script of an older release ended it) costs the class that
-- token until it lapses, never an extra one.
-- A promise scored past NOW + PROMISE_KEEP (corrupt data, or made before
-- the store's clock stepped back) stands for nothing.
-- Per call, and per class: PROMISED the promises standing, FIRST when the
-- first of them lapses (false: none), KEPT whether the key holds any
-- promise, lapsed ones too (a claim takes a lapsed one off: should the
-- store's clock step back, it would stand again); nil: not read yet.
-- DATED: the classes whose promises key this call has given its expiry
-- since it last removed promises (a removal may delete the key, and a
-- promise after it make it again, with none).
local PROMISE_KEEP, PIN_GRACE = 60000, 1000
local PROMISED, FIRST, KEPT, DATED = {}, {}, {}, {}
local function promised(class)
  local n = PROMISED[class]
  if n == nil then
    local key = ratego_key(class)
    -- the key expires PROMISE_KEEP after the last promise: most classes
    -- have none, and pay one EXISTS
    KEPT[class] = redis.call('EXISTS', key) == 1
    -- not a zset (corrupt data): no promise is read from it, and the
    -- next promise sets it aside (call_aside)
    n = KEPT[class] and tonumber((redis.pcall('ZCOUNT', key, '(' .. NOW, NOW + PROMISE_KEEP))) or 0
    PROMISED[class] = n
  end
  return n
end

-- first_lapse is when the first promise of class standing lapses, or nil
-- when none stands.
local function first_lapse(class)
  if FIRST[class] ~= nil then return FIRST[class] or nil end
  local at = nil
  if promised(class) > 0 then
    local first = redis.pcall('ZRANGEBYSCORE', ratego_key(class), '(' .. NOW, NOW + PROMISE_KEEP, 'WITHSCORES', 'LIMIT',
      '0', '1')
    at = type(first) == 'table' and first[2] and tonumber(first[2]) or nil
  end
  FIRST[class] = at or false
  return at
end

-- promise records that class let job id go, its token promised for ms (a
-- job already promised has its promise renewed).
local function promise(class, id, ms)
  local key = ratego_key(class)
  local n = promised(class)
  local added = call_aside('ZADD', key, nil, NOW + ms, id)
  if not DATED[class] then
    -- once per call: every promise of the call lapses by NOW + PROMISE_KEEP
    redis.pcall('PEXPIRE', key, PROMISE_KEEP)
    DATED[class] = true
  end
  KEPT[class] = true
  if added == 1 then PROMISED[class] = n + 1 end
  FIRST[class] = nil
end

-- promise_at is when the promise of class to job id lapses, or nil when
-- it has none; standing says whether it stands (not lapsed, nor scored
-- past NOW + PROMISE_KEEP).
local function promise_at(class, id)
  return tonumber((redis.pcall('ZSCORE', ratego_key(class), id)))
end
local function standing(at)
  return at and at > NOW and at <= NOW + PROMISE_KEEP or false
end

-- holds_promise says whether a promise of class to job id stands.
local function holds_promise(class, id)
  return promised(class) > 0 and standing(promise_at(class, id))
end

-- unpromise takes the promise to job id, which leaves its ready list
-- (claimed, or gone), and says whether one stood: its token is free again.
-- A lapsed one is taken too, and stood for nothing.
local function unpromise(class, id)
  promised(class)
  if not KEPT[class] then return false end
  local at = promise_at(class, id)
  if not at then return false end
  redis.pcall('ZREM', ratego_key(class), id)
  FIRST[class], DATED[class] = nil, nil
  if not standing(at) then return false end
  PROMISED[class] = PROMISED[class] - 1
  return true
end

-- unowe gives back the token promised to job id of rate class class (nil:
-- none), which leaves its ready list without spending it (cancelled,
-- deleted, archived, or set waiting on its concurrency key by a claim):
-- the class's waiters are looked at again now.
local function unowe(class, id)
  if class and unpromise(class, id) then RWAKE[class] = NOW end
end

-- dated_left takes out of pinx the entry of job id, whose deadline field
-- is dl, listed there at its deadline while it waited on its concurrency
-- key or rate class (claim.lua wait_dated), as it leaves the wait list
-- for a shared list, or goes (unlist). A job with no deadline pays
-- nothing.
local function dated_left(id, dl)
  local d = count_of(dl)
  if d and d > 0 then call_aside('ZREM', PIN_DEADLINES, nil, id) end
end

-- requeue_front puts back waiting jobs (still 'available') at the front of
-- their priority lists, keeping their order; stale entries are dropped. It
-- returns how many it put back, and how many of them on the shared lists.
-- A pinned job goes back to its worker's list, unless its fallback handed
-- it to every worker before it waited: it stays handed (its shared list),
-- not pinned again for another delay. listed, if given, is called with
-- each job put back and whether it went to a pin list.
local function requeue_front(ids, listed)
  local n, shared = 0, 0
  local fs, fp, fw, fm, fd, ff = F.state, F.priority, F.sticky_worker, F.sticky_mode, F.sticky_delay,
    F.sticky_fallback
  for i = #ids, 1, -1 do
    local h = fields(job_key(ids[i]), fs, fp, fw, fm, fd, ff, F.deadline)
    local s = state_of(h[1])
    -- a state no release writes (corrupt data) goes to a shared list too,
    -- where a claim archives it: popped here, it would be on no index
    if s == 'available' or s and not SCODE[s] then
      local sw = h[3]
      if h[6] or sw == '' or not h[4] or s ~= 'available' then sw = nil end -- handed to every worker, or not pinned (push_ready)
      push_ready(ids[i], true, h[2], sw, h[4], h[5], nil, h[7])
      -- a waiter with a deadline, listed in pinx at it while it waited
      -- (claim.lua wait_dated), leaves it for a shared list (a pin
      -- list's push_ready lists it anew): a claim meets it there, and
      -- the entry, left, would keep every claim reading the timed
      -- indexes, the job run and gone perhaps, until its deadline
      if not sw and h[7] then dated_left(ids[i], h[7]) end
      if listed then listed(ids[i], sw and true or false) end
      n = n + 1
      if not sw then shared = shared + 1 end
    end
  end
  if n > 0 then wake() end
  return n, shared
end

-- cc_waiting is how many jobs wait on key's wait list.
local function cc_waiting(key)
  local n = WAIT[key]
  if n == nil then
    n = tonumber((call_aside('HGET', CC_WAITING, nil, key))) or 0
    WAIT[key] = n
  end
  return n
end

-- cc_wait puts a job on key's wait list: its key is at its limit.
local function cc_wait(key, id)
  local n = cc_waiting(key)
  -- a wait list that holds no list is set aside (lib_batch.lua call_aside),
  -- with the others' entries: raising would fail the claim that set id
  -- waiting after it leased some of its batch
  if select(2, call_aside('RPUSH', ccwait_key(key), 'ccwait:' .. key, id)) then n = 0 end
  WAIT[key] = n + 1
  WAIT_DIRTY[key] = true
end

-- unlist takes available job id out of the list(s) that hold its entry,
-- when it leaves available other than by a claim (cancel, delete,
-- debounce): a stale entry left there would let the job, once available
-- again, be claimed from its old place, ahead of jobs queued before it.
-- A job on no ready list waits on its concurrency key or rate class:
-- it leaves that wait list, and a key's waiter count, so that the key's
-- turn or the class's token does not go to an entry whose job is gone
-- (cc_release with a pass hands the key's turn on); a job of a rate
-- class taken off a ready list gives back the token its class promised it
-- (unpromise), to the next waiter.
-- It
-- scans from the tail, where a recent job is (LREM is O(position)), or
-- from the head given oldest: a job whose sticky fallback fell due is
-- among the oldest of its pin list, behind which a gone worker's backlog
-- may be long (promote_pinned).
-- Every LREM is a pcall: a key that holds no list (corrupt data) holds
-- no entry to take out, and raising would fail the call after its
-- writes (a debounce in an enqueue batch: the batch's earlier jobs).
local function unlist(jk, id, oldest)
  -- a push this call deferred (the job enqueued earlier in the same call,
  -- its duplicate debounced now) lands first, and leaves with the rest
  flush_pushes()
  local h = redis.call('HMGET', jk, F.priority, F.sticky_worker, F.sticky_fallback, F.concurrency_key, F.rate_class,
    F.sticky_mode, F.deadline)
  if h[2] == '' or not h[6] then h[2] = false end -- not pinned (push_ready)
  -- its fallback time or deadline leaves pinx with it (push_ready lists
  -- it anew when it is available again): left there, a Wait job's
  -- deadline, days ahead perhaps, kept every claim of the partition
  -- reading and promoting the timed indexes for a job long gone
  if h[2] and not h[3] then call_aside('ZREM', PIN_DEADLINES, nil, id) end
  local n = 0
  -- a job its fallback handed to every worker left its pin list then
  -- (promote_pinned): a claim drops an entry found there all the same
  if h[2] and not h[3] then n = redis.pcall('LREM', pin_key(h[2]), oldest and 1 or -1, id) end
  if type(n) ~= 'number' then n = 0 end
  if n > 0 then pin_left(h[2]) end -- (its list's index, lib_ready.lua)
  if not h[2] or h[3] then
    local m = redis.pcall('LREM', avail_key(priority_of(h[1])), -1, id)
    if type(m) == 'number' then n = n + m end
  end
  if n > 0 then
    -- a job of a rate class on a ready list may be a waiter its class let
    -- go with a token promised: the token goes to the next waiter now
    unowe(h[5], id)
    return
  end
  -- a waiter with a deadline leaves pinx, where a claim listed it at it
  -- (claim.lua wait_dated; a pinned one left it above)
  if (h[4] or h[5]) and not (h[2] and not h[3]) then dated_left(id, h[7]) end
  if h[4] then
    local cw = ccwait_key(h[4])
    local gone = redis.pcall('LREM', cw, 0, id)
    if type(gone) == 'number' and gone > 0 then
      WAIT[h[4]] = math.max(cc_waiting(h[4]) - gone, 0)
      WAIT_DIRTY[h[4]] = true
    end
  end
  if h[5] then
    local rw = ratewait_key(h[5])
    redis.pcall('LREM', rw, 0, id)
  end
end

-- waits_listed says whether job id is listed on the wait list of its
-- concurrency key ck or of its rate class rc (nil or false: none), where
-- the key or class lets it go to its ready list (requeue_front). A
-- wait list that holds no list (corrupt data) holds no job either
-- (pcall: its callers have written). Listed anew on a ready list as
-- well, the job would be listed twice: a claim would set it waiting a
-- second time (the waiter count off by one), a rate token later spent
-- on the stale entry. Read only where a job's place is in doubt (a
-- reroute, a claim that meets a pin entry no reroute recorded).
local function waits_listed(id, ck, rc)
  if ck and type(redis.pcall('LPOS', ccwait_key(ck), id)) == 'number' then return true end
  return (rc and type(redis.pcall('LPOS', ratewait_key(rc), id)) == 'number') or false
end

-- cc_prefetch loads the running and waiting counts of keys (nil entries
-- skipped) in two calls, so a batch of jobs with distinct keys costs two
-- lookups, not two per job.
local function cc_prefetch(keys)
  local want = {}
  for _, key in pairs(keys) do
    if key and CC[key] == nil then
      CC[key] = false
      want[#want + 1] = key
    end
  end
  -- a thousand keys a read: unpack puts them all on Lua's stack, which
  -- holds about 8,000 values (gopher-lua's, miniredis's, about 5,100)
  for i = 1, #want, 1000 do
    local j = math.min(i + 999, #want)
    local run = call_aside('HMGET', K_CC, nil, unpack(want, i, j))
    local wait = call_aside('HMGET', CC_WAITING, nil, unpack(want, i, j))
    for k = i, j do
      CC[want[k]] = tonumber(run[k - i + 1]) or 0
      WAIT[want[k]] = tonumber(wait[k - i + 1]) or 0
    end
  end
end

-- cc_release frees a running job's slot of key and lets the job that waited
-- longest for it go again (waiters that moved on meanwhile are dropped).
-- A waiter pinned to a worker goes to that worker's list, which only it
-- reads, and the worker may never claim again: the next waiter goes too
-- (up to one that any worker may claim), so that pinned work does not
-- hold its key's turn from the others; those that find the key full at
-- their claims wait again.
-- Given pass (the F.concurrency_limit of an available job of key, or 1
-- when it has none), it frees no slot: that job leaves without a claim
-- leasing it (cancelled, deleted, debounced, archived by a claim), and it
-- may be the waiter a freed slot let go, which no other waiter follows
-- until that slot is taken and freed again, so when the key has room the
-- next waiter goes in its place (one let go needlessly only waits again
-- at its claim). It says whether a waiter went. (One function for both:
-- the library is near Lua's limit of locals.)
local function cc_release(key, pass)
  if pass then
    -- a limit that is no whole number of at least 1 (corrupt data: 'nan'
    -- would be none, '0' for ever) is 1, as a missing one
    if cc_running(key) >= math.max(count_of(pass) or 1, 1) then return false end
  else
    CC[key] = cc_running(key) - 1
  end
  local woke = false
  -- the list, not the count, says whether a waiter is left: a count set
  -- aside (corrupt data) reads 0, and must not strand the list's jobs.
  -- (One LPOP of an empty list per release of a key with no waiter; the
  -- count is written only when it changes.)
  while true do
    local id = redis.pcall('LPOP', ccwait_key(key))
    if type(id) == 'table' then
      -- the wait list holds no list (corrupt data): its jobs cannot be
      -- read; set aside, instead of raising after the call's writes
      set_aside(ccwait_key(key), 'ccwait:' .. key)
      id = false
    end
    if not id then
      if cc_waiting(key) ~= 0 then
        WAIT[key] = 0
        WAIT_DIRTY[key] = true
      end
      return woke
    end
    WAIT[key] = math.max(cc_waiting(key) - 1, 0)
    WAIT_DIRTY[key] = true
    local n, shared = requeue_front({ id })
    if n > 0 then woke = true end
    if shared > 0 then return true end
  end
  return woke
end

-- bucket loads a rate class's token bucket, refilled up to now. n, per and
-- burst come from the job, or from the stored bucket when nil.
local function bucket(class, n, per, burst)
  local b = BUCKETS[class]
  if b then return b end
  local v = redis.pcall('HMGET', rate_key(class), 't', 'u', 'n', 'p', 'b')
  if v.err then
    -- no hash (corrupt data): the bucket starts anew, full, where it
    -- would fail every claim and enqueue of the class (and flush's write
    -- of it, after the call's other writes)
    redis.call('DEL', rate_key(class))
    v = {}
  end
  n, per, burst = tonumber(n or v[3]), tonumber(per or v[4]), tonumber(burst or v[5])
  -- a missing parameter is no bucket, and so is one that is no positive
  -- finite number (corrupt data: '0', '-1', 'inf', 'nan'): the refill
  -- would divide by it, and flush's PEXPIRE (rate_keep) be refused after
  -- the call's writes
  local huge = math.huge
  if not (n and per and burst and n > 0 and per > 0 and burst > 0 and n < huge and per < huge and burst < huge) then
    return nil
  end
  local tokens, u = tonumber(v[1]), tonumber(v[2])
  -- none stored, or corrupt (tokens below 0, either not finite): full
  if not (tokens and u and tokens >= 0 and tokens < huge and math.abs(u) < huge) then tokens, u = burst, NOW end
  tokens = math.min(burst, tokens + math.max(NOW - u, 0) * n / per)
  -- the refill time never moves back: a store clock that stepped back
  -- (a failover, an NTP step) would refill the same interval twice; one
  -- ahead stays, up to a full bucket's refill (a corrupt one would
  -- freeze the class)
  u = math.min(math.max(u, NOW), NOW + burst * per / n)
  b = { tokens = tokens, n = n, per = per, burst = burst, u = u }
  BUCKETS[class] = b
  return b
end

-- promise_keep is how long a class whose bucket is b promises a waiter it
-- lets go to a shared list its token: a token's refill time, at least
-- PIN_GRACE and at most PROMISE_KEEP (see promise).
local function promise_keep(b)
  return math.min(math.max(math.ceil(b.per / b.n), PIN_GRACE), PROMISE_KEEP)
end

-- rate_define records a rate class's parameters in its bucket (the latest
-- enqueue's win), so jobs need to carry only the class name.
local DEFINED = {}
local function rate_define(class, n, per, burst)
  if DEFINED[class] then return end
  DEFINED[class] = true
  local bk = rate_key(class)
  -- a changed rate: the class's waiters are looked at again now, not at
  -- the wake time the old rate set
  local old = redis.pcall('HMGET', bk, 'n', 'p', 'b')
  if not old.err and (tonumber(old[1]) ~= tonumber(n) or tonumber(old[2]) ~= tonumber(per)
      or tonumber(old[3]) ~= tonumber(burst)) and redis.call('EXISTS', ratewait_key(class)) == 1 then
    RWAKE[class] = NOW
  end
  redis.call('HSET', bk, 'n', n, 'p', per, 'b', burst)
  redis.call('PEXPIRE', bk, rate_keep(tonumber(n), tonumber(per), tonumber(burst)))
end

-- next_token is when class, whose bucket is b, may have a token no
-- promise holds: at once, or when refill brings one, or when the first
-- promise standing lapses. While every token is promised and the bucket
-- is full, refill adds none: a claim that spends one makes room a token's
-- time later, so the class is looked at again a token's time from now.
local function next_token(class, b)
  local free = b.tokens - promised(class)
  if free >= 1 then return NOW end
  local need = 1 - free
  if b.tokens >= b.burst then need = 1 end
  local at = NOW + math.ceil(need * b.per / b.n)
  local lapse = first_lapse(class)
  if lapse and lapse < at then at = lapse end
  return at
end

-- FRONTS[class]: waiters of class set waiting again at the front of its
-- wait list this call, in order; rate_fronts pushes them.
local FRONTS = {}

-- rate_wait parks a job of class until its bucket has a token no promise
-- holds: at the back of the class's wait list, or at its front (front)
-- for a waiter let go with a token promised that its claim found spent
-- (the class's rate lowered since), pushed there by rate_fronts with the
-- others of the call in their order.
local function rate_wait(class, b, id, front)
  if front then
    local l = list_in(FRONTS, class)
    l[#l + 1] = id
  else
    call_aside('RPUSH', ratewait_key(class), 'ratewait:' .. class, id)
  end
  local at = next_token(class, b)
  if not RWAKE[class] or at < RWAKE[class] then RWAKE[class] = at end
end

-- rate_fronts pushes the waiters rate_wait set at the front of their
-- classes' wait lists, the first ahead of the rest.
local function rate_fronts()
  for class, ids in pairs(FRONTS) do
    local rev = {}
    for i = #ids, 1, -1 do rev[#rev + 1] = ids[i] end
    for i = 1, #rev, 1000 do
      call_aside('LPUSH', ratewait_key(class), 'ratewait:' .. class, unpack(rev, i, math.min(i + 999, #rev)))
    end
  end
end

-- WAITING[class]: whether the class has waiters on its wait list, read
-- once per call (nil: not yet) and set as the call parks jobs there.
local WAITING = {}
local function has_waiters(class)
  local w = WAITING[class]
  if w == nil then
    w = redis.call('EXISTS', ratewait_key(class)) == 1
    WAITING[class] = w
  end
  return w
end

-- rate_take takes a token from class for job id, which a claim is about
-- to lease, and reports false; or parks the job until there is one, and
-- reports true. A waiter its class let go takes the token promised to it
-- (promise); any other job only a token no promise holds, and none while
-- the class has waiters: it waits behind them, and the class's next pass
-- lets them go first, in their order (a waiter let go that finds no
-- token, its class's rate lowered since, waits again at the front, and
-- those let go after it that this call meets wait behind it). A class
-- with no bucket limits nothing.
local function rate_take(class, id)
  local b = bucket(class)
  -- a class with no bucket (corrupt and dropped) limits nothing; a
  -- promise made before it went is taken all the same, or it would stand
  -- on a running job and hold a token once the bucket is defined again
  if not b then
    unpromise(class, id)
    return false
  end
  local owed = unpromise(class, id)
  -- a waiter let go behind one this call set waiting again stays behind it
  if b.tokens - promised(class) >= 1 and (owed or not has_waiters(class)) and not (owed and FRONTS[class]) then
    b.tokens = b.tokens - 1
    return false
  end
  rate_wait(class, b, id, owed)
  WAITING[class] = true
  return true
end

-- rate_untake gives back the token rate_take took for a job of class
-- (nil: none) that does not run after all (its checkpoints unreadable):
-- the class's bucket is BUCKETS' once rate_take took one, and the class's
-- next waiter is looked at again now.
local function rate_untake(class)
  local b = class and BUCKETS[class]
  if b then
    b.tokens = b.tokens + 1
    RWAKE[class] = NOW
  end
end

-- MAX_POP: a count no list's length passes (2^32), at most that many let
-- go in one pass.
local MAX_POP = 4294967296

-- let_go puts waiters of class, popped from its wait list in order, back
-- on their ready lists (requeue_front) and promises each its token. A pass
-- puts the waiters it lets go at the front of their lists, where waiters
-- let go by an earlier pass and not claimed yet would be behind them: so
-- on a shared list that holds such a waiter, the new ones go right behind
-- the last of them instead, in their order. That last waiter is the
-- list's mark, field 'g<priority>' of the class's bucket; it stands while
-- its promise does (a waiter claimed or gone has none), and a mark no
-- longer on its list (rerouted) leaves the new waiters at the front.
local function let_go(class, b, ids)
  local bk, keep = rate_key(class), promise_keep(b)
  -- how far down its list a pass looks for a mark (LPOS MAXLEN): one
  -- deeper, or not there (rerouted to a worker), leaves the new waiters
  -- at the front, where a search to the list's end would cost the pass
  -- the list's whole backlog
  local MARK_SCAN = 1000
  -- per priority: the waiters of this pass to put behind the list's mark,
  -- and the mark's index (false: none, they go to the front), and the
  -- pass's last waiter there, the list's next mark
  local behind, last, front = {}, {}, {}
  local fs, fp, fw, fm, ff = F.state, F.priority, F.sticky_worker, F.sticky_mode, F.sticky_fallback
  for _, id in ipairs(ids) do
    local h = fields(job_key(id), fs, fp, fw, fm, ff, F.deadline)
    local p = priority_of(h[2])
    -- a job requeue_front puts on a shared list (its rule)
    local shared = state_of(h[1]) == 'available' and (h[5] or not h[3] or h[3] == '' or not h[4])
    local g = false
    if shared then
      g = behind[p]
      if g == nil then
        g = false
        local m = promised(class) > 0 and redis.pcall('HGET', bk, 'g' .. p)
        if type(m) == 'string' and holds_promise(class, m) then
          local at = redis.pcall('LPOS', avail_key(p), m, 'MAXLEN', MARK_SCAN)
          if type(at) == 'number' then g = { at = at } end
        end
        behind[p] = g
      end
      last[p] = id
    end
    if g then
      g[#g + 1] = id
      dated_left(id, h[6]) -- (requeue_front's, for one that goes to the front)
    else
      front[#front + 1] = id
    end
  end
  -- behind each mark, in one move per list: the head down to the mark
  -- taken off and pushed back with the new waiters after it (O(mark's
  -- index + waiters); a LINSERT per waiter, each after the one before,
  -- scanned the list to it: quadratic in the waiters a pass lets go).
  -- Before the front pushes, which would move the mark's index.
  local placed = false
  for p, g in pairs(behind) do
    if g then
      local ak = avail_key(p)
      local head = redis.call('LPOP', ak, g.at + 1)
      local rev = {}
      for i = #g, 1, -1 do rev[#rev + 1] = g[i] end
      for i = #head, 1, -1 do rev[#rev + 1] = head[i] end
      for i = 1, #rev, 1000 do redis.call('LPUSH', ak, unpack(rev, i, math.min(i + 999, #rev))) end
      for _, id in ipairs(g) do promise(class, id, keep) end
      mark_priority(p)
      placed = true
    end
  end
  requeue_front(front, function(id, pin) promise(class, id, pin and PIN_GRACE or keep) end)
  if placed then wake() end
  for p, id in pairs(last) do redis.pcall('HSET', bk, 'g' .. p, id) end
end

-- promote_rated lets waiting jobs of rate classes whose tokens are back
-- return to the available lists, as many as there are tokens no promise
-- holds, and promises each its token (promise). A waiter pinned to a
-- worker goes to that worker's list, which only it reads, and the worker
-- may be gone: its promise lapses after PIN_GRACE, when the class's
-- waiters are looked at again (next_token), and the token, if that worker
-- has not spent it by then, goes to the next waiter, so that pinned work
-- does not hold the class's tokens from the others (the pinned job,
-- claimed later with no token, waits again).
local function promote_rated()
  local due = call_aside('ZRANGEBYSCORE', K_RWAKE, nil, '-inf', NOW_S, 'LIMIT', '0', '100')
  for _, class in ipairs(due) do
    local b = bucket(class)
    local wk = ratewait_key(class)
    -- lapsed promises go (pcall: a key of another type holds none)
    redis.pcall('ZREMRANGEBYSCORE', ratego_key(class), '-inf', NOW)
    redis.pcall('ZREMRANGEBYSCORE', ratego_key(class), '(' .. (NOW + PROMISE_KEEP), '+inf')
    DATED[class] = nil
    -- no bucket (expired while idle, or corrupt and dropped): nothing
    -- limits the class, as a claim finds too, until its next enqueue
    -- defines it again: its waiting jobs go, a hundred per pass
    local k = 100
    -- at most MAX_POP: a count past 1e17 would be written in exponent
    -- form, which LPOP refuses as out of range (taken for a list of
    -- another type below, and set aside)
    if b then k = math.min(math.floor(b.tokens - promised(class)), MAX_POP) end
    if k >= 1 then
      local ids = redis.pcall('LPOP', wk, k)
      if type(ids) == 'table' and ids.err then
        -- the wait list holds no list: its jobs cannot be read; set aside
        set_aside(wk, 'ratewait:' .. class)
      elseif ids then
        if b then let_go(class, b, ids) else requeue_front(ids) end
      end
    end
    if redis.call('EXISTS', wk) == 0 then
      RWAKE[class] = false
    elseif b then
      RWAKE[class] = next_token(class, b)
    else
      RWAKE[class] = NOW + 1000
    end
  end
end
