-- lib_batch.lua: the prelude's deferred writes. Writes that many jobs of
-- one call make to the same key (counters, sets, lists, throughput) are
-- gathered and made once by flush(), which every script calls last.

-- Writes that many jobs of one call make to the same key are deferred and
-- made once by flush(), which every script calls last: per-state counter
-- deltas, and members added to or removed from the running and terminal
-- sets.
local DELTA, ZADDS, ZREMS = {}, {}, {}
-- Flow-control state loaded this call: running counts per concurrency key,
-- token buckets per rate class, and when each blocked rate class may go on.
local CC, WAIT, BUCKETS, RWAKE = {}, {}, {}, {}
local WAIT_DIRTY = {} -- keys whose waiter count changed this call

-- The priority lists above 0 that may hold jobs are flagged in a bit mask
-- (PFX .. 'pm', bit p as SETBIT numbers it), so that a claim pops only
-- those and the default list 0: every push to such a list flags it (at
-- flush), and a claim that empties a list clears its flag. A claim that
-- finds no mask sets every flag first.
local PM_KEY = PFX .. 'pm'
local PM_ALL = '\127\192' -- bits 1..9 set
local PM_PUSHED = {}
local function mark_priority(p)
  if p > 0 then PM_PUSHED[p] = true end
end
-- may_hold says whether list p may hold jobs, given its byte of the mask
-- (GET; nil past the end of a short one: none) and the pushes of this
-- call. PM_BIT[p] is list p's bit in that byte (SETBIT's order: the
-- first byte holds lists 1 to 7, the second 8 and 9), spelled out: a
-- power and two floors per list cost a claim, which tests nine lists,
-- about as much as its one job's pop.
local PM_BIT = { 64, 32, 16, 8, 4, 2, 1, 128, 64 }
local function may_hold(byte, p)
  if PM_PUSHED[p] then return true end
  local bit = PM_BIT[p]
  return (byte or 0) % (bit + bit) >= bit
end

-- count moves one job (or n) between per-state counters (from or to may
-- be nil).
local function count(from, to, n)
  n = n or 1
  if from then DELTA[from] = (DELTA[from] or 0) - n end
  if to then DELTA[to] = (DELTA[to] or 0) + n end
end

-- list_in returns the list under key in table t, adding an empty one.
-- Its callers on the hot path look the list up first (t[key] or
-- list_in(t, key)): in Lua 5.1 a function call per job costs about as
-- much as the write it makes (bench/RESULTS-3.md, 2026-12-07 18:00).
local function list_in(t, key)
  local l = t[key]
  if not l then
    l = {}
    t[key] = l
  end
  return l
end

-- RUN_ANCHOR is a member the running index (K_RUN) holds at +inf once a
-- job has run, first in every call's ZADD of leases (lease_later): never
-- due (the reaper ranges up to now), never a job (an ID has no space);
-- renew.lua adds it with each renewal. It is longer than Redis's
-- zset-max-listpack-value (64 bytes by default), so the index is made,
-- or turned, a skiplist, and stays one while the anchor keeps it from
-- emptying. In a listpack, which Redis keeps zsets of up to 128
-- members in, every ZADD scans the whole set twice (is the member there,
-- where does its score go): with 50-odd jobs running, 7% of the Redis
-- work of a no-op job (bench/RESULTS-3.md, 2026-12-05 15:40).
local RUN_ANCHOR = 'sluice: the anchor of the running index, which keeps it a skiplist; no job (lib_batch.lua)'

local function zadd_later(key, score, member)
  local l = ZADDS[key] or list_in(ZADDS, key)
  l[#l + 1] = score
  l[#l + 1] = member
end

-- lease_later adds job id to the running index at its lease's expiry (a
-- string, num_s), at flush(), after the anchor.
local function lease_later(expiry, id)
  local l = ZADDS[K_RUN]
  if not l then
    l = { '+inf', RUN_ANCHOR }
    ZADDS[K_RUN] = l
  end
  l[#l + 1] = expiry
  l[#l + 1] = id
end

local function zrem_later(key, member)
  local l = ZREMS[key] or list_in(ZREMS, key)
  l[#l + 1] = member
end

-- call_aside runs cmd on key, a key jobs share (a list of jobs, an index, a
-- counter, a flag) or one a job names (its worker's pin list, a wait list,
-- a bucket of later jobs), and returns the reply, and whether it found
-- key holding another type (corrupt data: WRONGTYPE). Such a value is set
-- aside by set_aside(key, aside) (aside nil: 'k:' and the key's own name,
-- to x:k:sched, x:k:stats, x:k:pm; true: 'list:' .. key, a list of jobs;
-- the name is made only then: a string made per call costs the call its
-- garbage collection), and cmd runs again on no key: a read finds
-- nothing, a write starts the key anew. Raising instead, after the call's
-- earlier writes, would fail the whole call (Redis rolls nothing back)
-- and leave the jobs it moved indexed nowhere. A pcall, not a type check:
-- no command is added where the key is sound (a TYPE costs about as much
-- as the write); a failure other than a wrong type is sent again to raise
-- its own error, nothing set aside; but a counter (HINCRBY) whose field
-- is no integer (or would overflow) is set to the delta: its count
-- starts anew, where raising would fail the call after its writes. A
-- stream that takes no new entry (XADD '*': its last ID is the greatest
-- there is, written by hand) is set aside as one of another type is: no
-- entry could ever be added to it.
local function call_aside(cmd, key, aside, ...)
  local r = redis.pcall(cmd, key, ...)
  if type(r) ~= 'table' or not r.err then return r, false end
  if string.sub(r.err, 1, 9) == 'WRONGTYPE' or (cmd == 'XADD' and (string.find(r.err, 'exhausted', 1, true)
      or string.find(r.err, 'equal or smaller', 1, true))) then
    if aside == true then aside = 'list:' .. key end
    set_aside(key, aside or 'k:' .. string.sub(key, #PFX + 1))
  elseif cmd == 'HINCRBY' then
    local field, d = ...
    redis.call('HSET', key, field, d)
    return d, false
  end
  return redis.call(cmd, key, ...), true
end

-- call_chunked runs cmd key args... in chunks that unpack can take; on a
-- shared key (shared true: flush's indexes and counters) a pcall, and
-- call_aside only when it fails: a Lua call per write would cost the hot
-- path more than the pcall.
local function call_chunked(cmd, key, args, step, shared)
  for i = 1, #args, 1000 * step do
    local j = math.min(i + 1000 * step - 1, #args)
    if not shared then
      redis.call(cmd, key, unpack(args, i, j))
    elseif type(redis.pcall(cmd, key, unpack(args, i, j))) == 'table' then
      call_aside(cmd, key, nil, unpack(args, i, j))
    end
  end
end

-- Jobs put at the back of a ready list are pushed in one RPUSH per list,
-- in order, by flush_pushes: at flush(), and by a claim before it pops.
local PUSHES = {}
local function push_later(key, id)
  local l = PUSHES[key] or list_in(PUSHES, key)
  l[#l + 1] = id
end
local function flush_pushes()
  if next(PUSHES) == nil then return end
  for k, l in pairs(PUSHES) do
    for i = 1, #l, 1000 do
      call_aside('RPUSH', k, true, unpack(l, i, math.min(i + 999, #l)))
    end
  end
  PUSHES = {}
end

-- take_flagged runs take (claim.lua's: it claims from list ak of
-- priority p and says whether it emptied it) on each list above 0 that
-- may hold jobs, the highest first, while the claim holds fewer than n
-- jobs, and clears the flag of each list it empties. With no mask (older
-- data, or evicted) every list may hold jobs: the mask is set with every
-- flag, and the lists this claim finds empty clear theirs from here on;
-- a mask of another type is set aside and begun so. A function of the
-- prelude's, not claim.lua's text: the names it uses would be upvalues of
-- claim's function, which Lua allows 60 (TestUpvalueHeadroom).
local function take_flagged(take, jobs, n)
  local pm = redis.pcall('GET', PM_KEY)
  if type(pm) == 'table' then pm = call_aside('GET', PM_KEY, nil) end
  if not pm then
    pm = PM_ALL
    redis.call('SET', PM_KEY, pm)
  end
  local pm1, pm2 = string.byte(pm, 1, 2) -- lists 1 to 7, 8 and 9
  -- most partitions use list 0 alone: a mask of no flags skips the tests
  if (pm1 or 0) + (pm2 or 0) == 0 and next(PM_PUSHED) == nil then return end
  for p = MAX_PRIORITY, 1, -1 do
    if #jobs >= n then return end
    if may_hold(p < 8 and pm1 or pm2, p) and take(avail_key(p), nil, p) then
      call_aside('SETBIT', PM_KEY, nil, string.char(48 + p), '0')
    end
  end
end

-- Throughput for queue stats: how many jobs reached each terminal state in
-- this call, and the run times of completed attempts in quarter-octave
-- buckets ('rt:' .. floor(4 * log2(ms + 1))). flush() adds them to the
-- partition's hash of the current minute (keys.Partition.Minute), kept two
-- hours. A tally adds one to its field in place (TPUT[f] = (TPUT[f] or 0)
-- + 1: finish, tally_run), with no helper: a call per job costs as much.
local TPUT = {}
local MINUTE_KEEP = '7200000'

-- RT_FIELD caches the bucket field of each run time seen in this call:
-- most attempts of a batch share a few, and building one is slow. A run
-- time that is no finite number from 0 (from a corrupt lease start) is
-- not tallied: NaN as a table index raises, after the call's writes.
local RT_FIELD = {}
local function tally_run(ms)
  if not (ms and ms >= 0 and ms < math.huge) then return end
  local f = RT_FIELD[ms]
  if not f then
    f = 'rt:' .. math.floor(4 * math.log(ms + 1) / math.log(2))
    RT_FIELD[ms] = f
  end
  TPUT[f] = (TPUT[f] or 0) + 1
end

-- A tally is best-effort: a minute key of another type is set aside, a
-- field that is no integer starts anew (call_aside), as raising here,
-- flush's first write, would lose every write flush makes after it. The
-- key's expiry is set when a field of it is new (HINCRBY answers the
-- increment itself: the minute's first call, or a key set aside and
-- begun anew), not by every call: one command fewer per ack, and the
-- key still goes two hours after its minute began.
local function flush_tput()
  if next(TPUT) == nil then return end
  local mk = minute_key(math.floor(NOW / 60000))
  local new = false
  for f, n in pairs(TPUT) do
    local v = redis.pcall('HINCRBY', mk, f, n)
    if type(v) == 'table' then
      call_aside('HINCRBY', mk, nil, f, n)
      new = true
    elseif v == n then
      new = true
    end
  end
  if new then redis.call('PEXPIRE', mk, MINUTE_KEEP) end -- on a key of any type
  TPUT = {}
end

-- put_counts writes to hash h the count (in counts) of each key that
-- dirty names: the field set above 0, else deleted.
local function put_counts(h, dirty, counts)
  if next(dirty) == nil then return end
  local set, del = {}, {}
  for key in pairs(dirty) do
    local n = counts[key]
    if n > 0 then
      set[#set + 1] = key
      set[#set + 1] = n
    else
      del[#del + 1] = key
    end
  end
  if #set > 0 then call_chunked('HSET', h, set, 2, true) end
  if #del > 0 then call_chunked('HDEL', h, del, 1, true) end
end

local function flush()
  flush_tput()
  flush_pushes()
  if next(PM_PUSHED) ~= nil then
    for p in pairs(PM_PUSHED) do call_aside('SETBIT', PM_KEY, nil, string.char(48 + p), '1') end
    PM_PUSHED = {}
  end
  for k, l in pairs(ZREMS) do call_chunked('ZREM', k, l, 1, true) end
  for k, l in pairs(ZADDS) do call_chunked('ZADD', k, l, 2, true) end
  for state, d in pairs(DELTA) do
    if d ~= 0 and type(redis.pcall('HINCRBY', K_STATS, state, d)) == 'table' then
      call_aside('HINCRBY', K_STATS, nil, state, d)
    end
  end
  put_counts(K_CC, CC, CC)
  put_counts(CC_WAITING, WAIT_DIRTY, WAIT)
  for class, b in pairs(BUCKETS) do
    local bk = rate_key(class)
    redis.call('HSET', bk, 't', b.tokens, 'u', b.u, 'n', b.n, 'p', b.per, 'b', b.burst)
    redis.call('PEXPIRE', bk, rate_keep(b.n, b.per, b.burst))
  end
  for class, at in pairs(RWAKE) do
    if at then call_aside('ZADD', K_RWAKE, nil, at, class) else call_aside('ZREM', K_RWAKE, nil, class) end
  end
end

-- OFFER is the offer of an idle worker this call found in the idle flag
-- and may push jobs to (lib_offer.lua: nil until read; false: none, or
-- gone); PUSHED how many jobs it pushed. ABSENT says the call read the
-- flag for an offer and found none: wake has nothing to delete then, and
-- no idle worker to wake (one command less per plain enqueue).
local OFFER, PUSHED, ABSENT = nil, 0, false

-- wake tells idle workers (if any registered) that this partition has work;
-- once per script call is enough. The idle flag goes, and any offer in it:
-- a job listed, no job is pushed past it.
local woken = false
local function wake()
  OFFER = false
  if woken then return end
  woken = true
  -- a pcall: a channel an ACL refuses must not raise after the writes (the
  -- workers' idle poll finds the jobs)
  if not ABSENT and redis.call('DEL', K_IDLE) == 1 then redis.pcall('PUBLISH', CHAN, PART) end
end
