-- reroute.lua: an operator changes the worker a job prefers (sticky
-- routing), e.g. after a worker was renamed, or unpins it.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  job ID in the partition
-- ARGV[10] the new preferred worker, or '' to unpin the job
-- ARGV[11] fallback for the new worker ('w', 'a', 'f'), ARGV[12] its delay (ms)
-- ARGV[13], ARGV[14], ARGV[15] the job must have been created at or after
--          ARGV[13] and before ARGV[14] (ms), ARGV[15] the time its
--          generated ID carries, or '' '' '': any job of the ID
--          (lib_admin.lua other_job)
-- Returns: the job's state, '' when there is no such job, or 'malformed'
--   when its state field names no state (nothing written). A completed
--   job never runs again: it is refused (its state returned, nothing
--   written). An archived, quarantined or cancelled one may be redriven,
--   and then goes to its new worker. 'conflict ' .. created: refused, the
--   job was created (ms) out of ARGV[13]..ARGV[14], another job (nothing
--   written); a created-time field that is no whole number of ms (given
--   ARGV[13]) fails the call with an error naming the job.
-- Transitions: none. An available job moves to the front of its new list
-- at once; its entry on the old worker's list leaves it (an entry left
-- there by an older release is skipped by that worker's claims:
-- claim.lua checks that a pinned job still prefers the claiming worker,
-- and F.sticky_left records that the reroute left that list), and one on
-- the list it goes to leaves it. A list it
-- goes to whose key holds another type (corrupt data) is set aside and
-- started anew with it (lib_batch.lua call_aside): the worker written
-- above is never left without the job on its list.
-- One that waits on its concurrency key or rate class (lib_limits.lua)
-- keeps its place on that wait list, and goes to its new list when the
-- key or class lets it go (requeue_front reads its preference then):
-- listed anew here as well, it would be listed twice, and a claim would
-- set it waiting a second time, a rate token later spent on the stale
-- entry. A waiter its rate class let go keeps the token promised to it,
-- rerouted to a worker for PIN_GRACE from then, unpinned for as long as a
-- waiter let go to a shared list (lib_limits.lua promise).
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id = ARGV[9]
local jk = job_key(id)
local o = redis.call('HMGET', jk, F.state, F.sticky_worker, F.sticky_fallback, F.sticky_mode, F.sticky_left)
local s = state_of(o[1])
if not s then return STATUS.none end
-- a state no release writes (corrupt data: '' would read as no job) is
-- refused, nothing written; a claim or the reaper archives the job
if not SCODE[s] then return STATUS.malformed end
do
  local other, bad = other_job(jk, id, 13)
  if bad then return bad end
  if other then return remember(STATUS.conflict .. ' ' .. string.format('%d', other)) end
end
if s == 'completed' then return remember(s) end
-- pinned: the worker it was pinned to (push_ready: a worker and a mode)
local pinned = o[2] ~= '' and o[4] and o[2]
do
  -- F.sticky_left names the workers whose pin lists it leaves: an entry
  -- left there is stale, where a claim that met it with no such record
  -- would take its routing for corrupt data (claim.lua); the worker it
  -- goes to leaves the record, its entries there live again
  local to, left = ARGV[10], {}
  for w in words(o[5] or '') do
    if w ~= to and w ~= pinned then left[#left + 1] = w end
  end
  if pinned and pinned ~= to then left[#left + 1] = pinned end
  if #left > 0 then
    redis.call('HSET', jk, F.sticky_left, join(left, ' '))
  elseif o[5] then
    redis.call('HDEL', jk, F.sticky_left)
  end
end
if ARGV[10] == '' then
  redis.call('HDEL', jk, F.sticky_worker, F.sticky_mode, F.sticky_delay)
else
  redis.call('HSET', jk, F.sticky_worker, ARGV[10], F.sticky_mode, ARGV[11], F.sticky_delay, ARGV[12])
end
if s == 'available' then
  local h = redis.call('HMGET', jk, F.priority, F.sticky_worker, F.sticky_mode, F.sticky_delay, F.concurrency_key,
    F.rate_class, F.concurrency_limit, F.deadline)
  if waits_listed(id, h[5], h[6]) then
    -- pinned anew: not handed to every worker by its old fallback, and
    -- its new fallback starts when it is let go (push_ready); pinx of
    -- another type is set aside (call_aside), not raised on after the
    -- routing above changed. It waits still: with a deadline it stays
    -- listed at it (claim.lua wait_dated), where the first claim of the
    -- partition archives it (a fallback time an older release left
    -- there goes)
    redis.call('HDEL', jk, F.sticky_fallback)
    local d = count_of(h[8])
    if d and d > 0 then
      call_aside('ZADD', PIN_DEADLINES, nil, d, id)
    else
      call_aside('ZREM', PIN_DEADLINES, nil, id)
    end
  else
    -- an entry it has on the list it goes to leaves it, else both would
    -- be live: it has one on its worker's list, and on the shared list
    -- when it had no worker or its fallback handed it to every worker
    -- (pcall: after the writes above, a list that is none holds no entry)
    local to = h[2]
    if pinned and pinned ~= to then
      -- its entry leaves the list of the worker it no longer prefers:
      -- one that never comes back would keep it for ever
      local gone = redis.pcall('LREM', pin_key(pinned), -1, id)
      if type(gone) == 'number' and gone > 0 then pin_left(pinned) end
    end
    if to and o[2] == to then
      local pk = pin_key(to)
      redis.pcall('LREM', pk, -1, id)
    end
    if not to or not pinned or o[3] then
      -- its entry on the shared list leaves it as it goes to a worker,
      -- and as it comes back: an unpinned job's, a handed one's, and one
      -- that a pin by an older release left there (stale while the job
      -- was pinned, live again once unpinned or handed again)
      local ak = avail_key(priority_of(h[1]))
      redis.pcall('LREM', ak, -1, id)
    end
    -- its old fallback time or deadline goes: push_ready lists the new
    -- one, if any (else a Wait job's deadline stayed for a job unpinned
    -- or run since, every claim reading the timed indexes until then)
    if pinned and not o[3] then call_aside('ZREM', PIN_DEADLINES, nil, id) end
    push_ready(id, true, h[1], h[2], h[3], h[4], nil, h[8])
    wake()
    -- moved from the shared list (unpinned, or handed by its fallback)
    -- to a worker's (push_ready's rule), it may be the waiter a freed
    -- slot of its key let go, whose turn no other waiter takes until
    -- that slot is taken and freed again; its worker may never claim:
    -- the key's next waiter goes too when the key has room, as
    -- cc_release lets a pinned waiter's next go (one let go needlessly
    -- only waits again at its claim)
    if h[5] and h[2] and h[2] ~= '' and h[3] and (not pinned or o[3]) then cc_release(h[5], h[7] or 1) end
    -- a waiter its rate class let go keeps its promised token: for
    -- PIN_GRACE once it goes to a worker that may be gone, for a shared
    -- waiter's time (promise_keep) on a shared list (lib_limits.lua
    -- promise); the class's next pass learns when that promise lapses. A
    -- class with no bucket limits nothing: no promise is made
    if h[6] and unpromise(h[6], id) then
      local b = bucket(h[6])
      local pinned = to and to ~= '' and h[3]
      if b then promise(h[6], id, pinned and PIN_GRACE or promise_keep(b)) end
      RWAKE[h[6]] = NOW
    end
  end
end
flush() -- the priority mask learns of the push (lib.lua)
return remember(s)
