-- list.lua: one bounded page of a partition's jobs in one state, for
-- operators.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  state
-- ARGV[10] cursor: where the previous page of this partition stopped ('':
--          the start). For running and the finished states,
--          'score:ties:member': the score of the last entry examined,
--          how many entries of that score were examined, and its member
--          (in hex), so that entries added since with a higher score
--          (jobs that started or finished meanwhile) shift no page, nor
--          do entries of that score that left; for scheduled and retryable, a part
--          of their index and a place in it (below); for available,
--          'priority.offset', the offset counted from the tail of that
--          priority's list (jobs enqueued between pages shift it), then
--          'p' .. worker (in hex) .. '.offset' in the pin lists.
-- ARGV[11] the most jobs to return
-- ARGV[12] the most entries to examine (stale entries are examined but
--          not returned)
-- ARGV[13] kind ('' any)
-- Order: running by lease expiry, scheduled and retryable by due time
--   (in a bucket of later jobs, by the order they were put there),
--   finished states by deletion time (finish time plus retention), each
--   highest first; available by priority (highest first) then newest
--   first within a priority, then the jobs pinned to a worker (sticky
--   routing), worker by worker in the order of their names
--   (PIN_WORKERS, lib_ready.lua), newest first on each: a pinned job is
--   available too (QueueStats counts it), and one pinned to a worker that
--   is gone is found only here.
-- Returns: { next, entry... }: next is the cursor after the last entry
--   examined, '' when the partition has no more; each entry is
--   { cursor after it, sort key, id, FIELDS values... }. The sort key is
--   the zset score, or for available priority * 1e14 + creation time
--   (for a pinned job, priority - MAX_PRIORITY - 1: after every job of the
--   shared lists of any partition), so callers can merge partitions.
-- Transitions: none.
do local refused = model_error() if refused then return refused end end
local FIELDS = {
  F.state, F.kind, F.priority, F.attempt, F.crash_attempt, F.max_attempts, F.created, F.run_at, F.finished,
  F.reason, F.last_error, F.worker, F.lease_start, F.redrives, F.parent, F.timeout, F.deadline, F.redriven_at,
  F.fence, F.awaits, F.held_by, F.lease_id,
}
local state, cursor = ARGV[9], ARGV[10]
local n, budget, kind = tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13]
local ZSETS = { running = K_RUN }
for s, k in pairs(TERMINAL) do ZSETS[s] = k end

local out = { '' }
local seen = {}
-- consider lists job id, found at sort key key (nil: its due time; near
-- when that cannot be read) with cursor after, if it is in the state and
-- of the kind asked; indexed, when given, checks that its due time (nil
-- when it is no finite number: the entry is the job's, lib_ready.lua)
-- still belongs where it was found (it is given the job's ID too). It returns whether it listed it (a
-- caller that passes no cursor then writes its own there, built only for
-- the entries listed).
local function consider(id, key, after, indexed, near)
  if seen[id] then return false end
  local h = redis.pcall('HMGET', job_key(id), unpack(FIELDS))
  if h.err then return false end
  h[1] = state_of(h[1])
  if h[1] ~= state or (kind ~= '' and h[2] ~= kind) then return false end
  local at = tonumber(h[8])
  if at and not (at > -math.huge and at < math.huge) then at = nil end
  if indexed and not indexed(at, id) then return false end -- stale: listed where it is now
  seen[id] = true
  key = key or (at and h[8]) or near
  if state == 'available' then
    local p = priority_of(h[3])
    if key == 'pin' then p = p - MAX_PRIORITY - 1 end -- after the shared lists' jobs (see Returns)
    key = string.format('%.0f', p * 1e14 + (tonumber(h[7]) or 0))
  end
  local e = { after, key, id }
  for i = 1, #FIELDS do e[3 + i] = h[i] or false end
  out[#out + 1] = e
  return true
end

local examined = 0

-- sorts_before says a sorts before b as Redis orders the members of
-- one score: by their bytes (Lua's < would follow the server's locale)
local function sorts_before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- hex and unhex turn a member into a cursor's part and back (hex takes
-- at most 128 bytes: zmark)
local function hex(m) return string.format(string.rep('%02x', #m), string.byte(m, 1, -1)) end
local function unhex(h) return (string.gsub(h, '%x%x', function(x) return string.char(tonumber(x, 16)) end)) end

-- tie_skip is how many of zset zk's entries at score a previous page
-- examined, highest first, when the last was member: those that sort
-- at or after it (entries of one score come highest member first),
-- found by its place among them, which stays right when some of them
-- left since (a job cancelled or deleted between pages, where a count
-- of them passed over one entry more).
local function tie_skip(zk, score, member)
  local below = redis.call('ZCOUNT', zk, '-inf', '(' .. score)
  local lo, hi = 0, redis.call('ZCOUNT', zk, score, score)
  local ties = hi
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', zk, below + mid, below + mid)[1]
    if m and sorts_before(m, member) then lo = mid + 1 else hi = mid end
  end
  return ties - lo
end

-- zrange examines the entries of zset zk from score hi down to lo, highest
-- first, passing over those at score hi that a previous page examined
-- (skip of them, or those up to member: tie_skip), until the page or the
-- budget is full; mark(score, ties, member) is the cursor after an entry
-- of that score, the ties-th of its score examined; check(score), when
-- given, builds consider's indexed check of an entry of that score.
-- Returns the cursor after the last entry examined, or nil when the range
-- has no more.
local function zrange(zk, hi, lo, skip, mark, check, member)
  local top, ties, last = hi, skip, member
  if member then ties = tie_skip(zk, hi, member) end
  while #out - 1 < n and examined < budget do
    local want = math.min(n - (#out - 1), budget - examined)
    local batch = redis.call('ZREVRANGEBYSCORE', zk, top, lo, 'WITHSCORES', 'LIMIT', ties, want)
    for i = 1, #batch, 2 do
      local score = batch[i + 1]
      if score == top then ties = ties + 1 else top, ties = score, 1 end
      last = batch[i]
      -- the running index's anchor is no job, and spends no budget
      if batch[i] ~= RUN_ANCHOR then
        examined = examined + 1
        if consider(batch[i], score, false, check and check(tonumber(score))) then out[#out][1] = mark(top, ties, last) end
      end
    end
    if #batch < 2 * want then return nil end
  end
  return mark(top, ties, last)
end
-- zcursor reads a cursor of zrange (after its part's letter, for the
-- scheduled index): 'score:ties:member' (the member in hex), or
-- 'score:ties' (from an earlier version); '' the start at hi.
local function zcursor(c, hi)
  if c == '' then return hi, 0 end
  if #c > 320 then return nil end -- no cursor of list.lua's (Go checks its form)
  local score, ties, m = string.match(c, '^([^:]+):(%d+):?(%x*)$') -- #c is at most 320
  if m == '' or #m % 2 == 1 then m = nil elseif m then m = unhex(m) end
  return score, tonumber(ties), m
end
-- zmark is zrange's mark: part (the scheduled index's letter, or '') and
-- the cursor after the ties-th entry of score examined, member (named
-- when it is no longer than a job ID may be: flow.MaxIDLength).
local function zmark(part, score, ties, member)
  local c = part .. score .. ':' .. ties
  if member and #member > 0 and #member <= 128 then c = c .. ':' .. hex(member) end
  return c
end

-- The scheduled index, highest due time first: the jobs due at or past
-- HOLD_AT in sched (held ones, those suspended on signals only at FAR),
-- then the buckets of later jobs
-- (lib_ready.lua sched_add) from the last, each from its tail (the order
-- its jobs were put there), then the rest of sched. Cursors: 'f' or 'n'
-- and a rank in that part of sched, 'b' .. bucket .. '.' .. the entries
-- of the bucket examined; a part of sched has zrange's cursors.
if state == 'scheduled' or state == 'retryable' then
  local phase, pos = cursor:sub(1, 1), cursor:sub(2)
  if cursor == '' then phase, pos = 'f', '' end
  local function zpart(hi, lo)
    local top, skip, member = zcursor(pos, hi)
    return zrange(K_SCHED, top, lo, skip, function(score, ties, m) return zmark(phase, score, ties, m) end,
      function(score) return function(at) return not at or at == score end end, member)
  end
  if phase == 'f' then
    local c = zpart('+inf', HOLD_AT)
    if c then
      out[1] = c
      return out
    end
    phase, pos = 'b', ''
  end
  if phase == 'b' then
    local b, off = string.match(pos, '^(%d+)%.(%d+)$')
    b, off = tonumber(b), tonumber(off) or 0
    while #out - 1 < n and examined < budget do
      local hi = '+inf'
      if b then hi = b * SCHED_BUCKET end
      local nxt = redis.call('ZREVRANGEBYSCORE', K_LATER, hi, '-inf', 'LIMIT', 0, 1)
      if #nxt == 0 then break end
      local nb = tonumber(nxt[1])
      if nb ~= b then b, off = nb, 0 end
      local want = math.min(n - (#out - 1), budget - examined)
      -- a bucket that holds no list (corrupt data) lists no job: passed
      -- over, the listing goes on (a pcall: raising would fail it)
      local batch = redis.pcall('LRANGE', later_key(nxt[1]), -(off + want), -(off + 1))
      if batch.err then batch = {} end
      for i = #batch, 1, -1 do
        off = off + 1
        examined = examined + 1
        consider(batch[i], nil, 'b' .. nxt[1] .. '.' .. off,
          function(at) return not at or math.floor(at / SCHED_BUCKET) == b end,
          string.format('%d', b * SCHED_BUCKET))
      end
      if #batch < want then b, off = b - 1, 0 end
      if b < 0 then break end
    end
    if #out - 1 >= n or examined >= budget then
      out[1] = 'b' .. string.format('%d', b) .. '.' .. off
      return out
    end
    phase, pos = 'n', ''
  end
  local c = zpart(string.format('(%d', HOLD_AT), '-inf')
  if c then out[1] = c end
  return out
end

local zk = ZSETS[state]
if zk then
  local top, skip, member = zcursor(cursor, '+inf')
  out[1] = zrange(zk, top, '-inf', skip, function(score, ties, m) return zmark('', score, ties, m) end, nil, member) or ''
  return out
end

if state ~= 'available' then return redis.error_reply('ERR sluice: unknown state ' .. tostring(state)) end
local prio, off = MAX_PRIORITY, 0
local pinw -- the pin list's worker a cursor names (then prio is -1)
if cursor ~= '' then
  -- no cursor of list.lua's is longer (a worker ID of 128 bytes in hex;
  -- Go checks its form)
  if #cursor > 300 then return redis.error_reply('ERR sluice: no cursor of a listing: ' .. string.sub(cursor, 1, 40)) end
  local p, o = string.match(cursor, '^(%d+)%.(%d+)$')
  if not p then
    local hw
    if #cursor <= 300 then hw, o = string.match(cursor, '^p(%x*)%.(%d+)$') end
    pinw, p = hw and unhex(hw), -1
  end
  prio, off = tonumber(p), tonumber(o) or 0
end
while prio >= 0 do
  while #out - 1 < n and examined < budget do
    local want = math.min(n - (#out - 1), budget - examined)
    -- entries from the tail: offset off counts from the last one
    local batch = redis.call('LRANGE', avail_key(prio), -(off + want), -(off + 1))
    for i = #batch, 1, -1 do
      off = off + 1
      examined = examined + 1
      consider(batch[i], '0', prio .. '.' .. off)
    end
    if #batch < want then break end
  end
  if #out - 1 >= n or examined >= budget then
    out[1] = prio .. '.' .. off
    return out
  end
  prio, off = prio - 1, 0
end

-- The pin lists, worker by worker (PIN_WORKERS by name), each from its
-- tail, as the shared lists. An entry is the job's while the job is
-- pinned to that worker and not handed to every worker by its fallback
-- (claim.lua's rule): an entry a reroute or a fallback left there (an
-- older release's) is stale, its job listed where it is now. A worker's
-- name longer than a worker ID may be (corrupt data) names no cursor,
-- and is passed over. An index of another type lists nothing (pcall).
local function pinned_to(w)
  return function(_, id)
    local h = redis.pcall('HMGET', job_key(id), F.sticky_worker, F.sticky_mode, F.sticky_fallback)
    return not h.err and h[1] == w and h[2] and not h[3] and true or false
  end
end
local w, done = pinw, false
if not w then off = 0 end
while #out - 1 < n and examined < budget do
  if not w or done then
    local nx = redis.pcall('ZRANGEBYLEX', PIN_WORKERS, w and '(' .. w or '-', '+', 'LIMIT', 0, 1)
    if nx.err or #nx == 0 then return out end
    w, off, done = nx[1], 0, false
  end
  if #w <= 128 and #w > 0 then
    local want = math.min(n - (#out - 1), budget - examined)
    local batch = redis.pcall('LRANGE', pin_key(w), -(off + want), -(off + 1))
    if batch.err then batch = {} end
    local check = pinned_to(w)
    for i = #batch, 1, -1 do
      off = off + 1
      examined = examined + 1
      consider(batch[i], 'pin', 'p' .. hex(w) .. '.' .. off, check)
    end
    done = #batch < want -- its list is read: the next worker's
  else
    done = true
  end
end
-- (a list read to its end as the page filled: the next page reads it
-- from off, finds no more, and goes on to the next worker)
if w then out[1] = 'p' .. hex(w) .. '.' .. off end
return out
