-- claim.lua: lease up to n ready jobs of one partition to a worker.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  n, the most jobs to claim
-- ARGV[10] default lease duration (ms)
-- ARGV[11] worker identity (recorded as the lease holder)
-- ARGV[12] lease nonce: lease IDs are nonce .. '.' .. i, fresh per claim
-- ARGV[13] how many due scheduled jobs to promote first
-- ARGV[14] m, then m pairs (kind, lease ms) overriding the default lease
-- Returns: { next_due, archived, job... }
--   next_due  earliest due time in sched (ms), or -1; set only when fewer
--             than n jobs were claimed (the partition ran dry), else -2
--   archived  flat list of id, reason for jobs moved to archived instead
--             of being claimed (deadline passed, malformed hash)
--   job       { id, lease ID, lease expiry, steps, values... }: steps is
--             the job's step checkpoints (flat HGETALL, empty when none),
--             then the values of FIELDS below, in order, after the claim
-- Sticky jobs wait on their preferred worker's pin list, which only that
-- worker's claims read; when a fallback deadline passes, After hands the
-- job to every worker (the shared list) and FailAfter archives it
-- ('sticky_unavailable').
-- Transitions: scheduled|retryable -> available (promotion),
--   available -> running (claim), available -> archived (deadline passed or
--   malformed job). A job whose concurrency key is at its limit, or whose
--   rate class has no token, stays available but moves to that key's or
--   class's wait list (lib.lua, flow control) instead of being claimed.
-- Each claim increments the job's fence and draws a new lease ID; the pair
-- is the attempt's identity. When the partition runs dry the idle flag is
-- set so the next enqueue publishes a wake-up.
-- A paused partition (keys.Partition.Paused, set by pause.lua) claims and
-- promotes nothing: it answers { -1, {} } and sets the idle flag, so that
-- resuming it publishes a wake-up.
if redis.call('EXISTS', PFX .. 'paused') == 1 then
  redis.call('SET', K_IDLE, '1')
  return { -1, {} }
end
local FIELDS = { 's', 'k', 'p', 'dl', 'f', 'a', 'c', 'ma', 'to', 'pr', 'h', 'ct', 'oh', 'oe', 'on', 'pa', 'sx',
  'ck', 'cn', 'rk', 'sw' }
local n = tonumber(ARGV[9])
local lease_ms = tonumber(ARGV[10])
local worker, nonce = ARGV[11], ARGV[12]
promote(tonumber(ARGV[13]))
promote_rated()
local unpinned = promote_pinned()
local kind_lease = {}
local m = tonumber(ARGV[14])
for i = 0, m - 1 do kind_lease[ARGV[15 + 2 * i]] = tonumber(ARGV[16 + 2 * i]) end

local jobs, archived = {}, {}

-- rate_limited takes a token from the job's rate class, or parks the job
-- until there is one and reports true.
local function rate_limited(h, id)
  local b = bucket(h[20])
  if not b then return false end
  if b.tokens >= 1 then
    b.tokens = b.tokens - 1
    return false
  end
  rate_wait(h[20], b, id)
  return true
end
local function park(jk, id, reason)
  finish(jk, id, 'available', 'archived', reason)
  archived[#archived + 1] = id
  archived[#archived + 1] = reason
end

for _, id in ipairs(unpinned) do
  archived[#archived + 1] = id
  archived[#archived + 1] = 'sticky_unavailable'
end

-- take claims from the list ak until n jobs are claimed or it is empty.
-- From a pin list (pinned to worker), it skips jobs rerouted elsewhere.
local function take(ak, pinned_to)
  while #jobs < n do
    local ids = redis.call('LPOP', ak, n - #jobs)
    if not ids then break end
    local hs, ckeys = {}, {}
    for i, id in ipairs(ids) do
      hs[i] = redis.pcall('HMGET', job_key(id), unpack(FIELDS))
      if not hs[i].err then ckeys[i] = hs[i][18] end
    end
    cc_prefetch(ckeys)
    for i, id in ipairs(ids) do
      local jk = job_key(id)
      local h = hs[i]
      if type(h) == 'table' and h.err then
        -- the key holds something that is not a job hash: set it aside
        redis.call('RENAME', jk, jk .. ':corrupt')
        redis.call('HSET', jk, 's', 'available', 'k', '', 'p', '')
        park(jk, id, 'malformed')
      elseif h[1] == 'available' and pinned_to and h[21] ~= pinned_to then
        -- rerouted since it was pinned here: its entry on this list is stale
      elseif h[1] == 'available' then
        local dl, fence = tonumber(h[4]), tonumber(h[5] or 0)
        if not h[2] or h[2] == '' or not h[3] or not fence or not tonumber(h[6] or 0) or not tonumber(h[7] or 0) then
          park(jk, id, 'malformed')
        elseif dl and dl <= NOW then
          park(jk, id, 'deadline_exceeded')
        elseif h[18] and cc_running(h[18]) >= (tonumber(h[19]) or 1) then
          cc_wait(h[18], id) -- its key is at its limit
        elseif h[20] and rate_limited(h, id) then
          -- parked on its rate class (rate_limited did it)
        else
          if h[18] then CC[h[18]] = cc_running(h[18]) + 1 end
          fence = fence + 1
          local lease = nonce .. '.' .. (#jobs + 1)
          local expiry = NOW + (kind_lease[h[2]] or lease_ms)
          redis.call('HSET', jk, 's', 'running', 'f', fence, 'l', lease, 'w', worker, 'ls', NOW)
          zadd_later(K_RUN, expiry, id)
          count('available', 'running')
          local steps = {}
          if h[17] then steps = redis.call('HGETALL', steps_key(id)) end
          h[1], h[5] = 'running', tostring(fence)
          local job = { id, lease, expiry, steps }
          for i = 1, #FIELDS do job[4 + i] = h[i] or false end
          jobs[#jobs + 1] = job
        end
      end
      -- any other state: a stale list entry (the job moved on); drop it
    end
  end
end

-- This worker's pinned jobs first (sticky routing), then the shared lists
-- from the highest priority down. Other workers' pin lists are never
-- touched, so a backlog pinned elsewhere costs this claim nothing.
take(PFX .. 'pin:' .. worker, worker)
for prio = MAX_PRIORITY, 0, -1 do
  if #jobs >= n then break end
  take(avail_key(prio))
end

flush()
local nd = -2
if #jobs < n then
  nd = next_due()
  redis.call('SET', K_IDLE, '1')
end
local out = { nd, archived }
for _, job in ipairs(jobs) do out[#out + 1] = job end
return out
