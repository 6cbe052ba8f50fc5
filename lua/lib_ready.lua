-- lib_ready.lua: the prelude's ready lists: putting an available job
-- where claims find it, and scheduling one for later.

local function priority_of(p)
  p = tonumber(p) or 0
  if p < 0 or p > MAX_PRIORITY then p = 0 end
  return p
end

-- push_ready puts an available job where claims find it: the list of its
-- priority or, for a job that prefers a worker (F.sticky_worker), that
-- worker's pin list, with the deadline of its fallback in pinx
-- (F.sticky_mode is 'a' to hand it to any worker, 'f' to fail it, after
-- F.sticky_delay ms; 'w' waits for ever).
local function push_ready(id, front, prio, sw, sm, sd)
  local key
  if sw then
    redis.call('HDEL', job_key(id), F.sticky_fallback) -- pinned again (a retry, a reroute): its fallback starts over
    key = pin_key(sw)
    if sm == 'a' or sm == 'f' then redis.call('ZADD', PIN_DEADLINES, NOW + (tonumber(sd) or 0), id) end
  else
    local p = priority_of(prio)
    key = avail_key(p)
    mark_priority(p)
  end
  if front then
    redis.call('LPUSH', key, id)
  else
    push_later(key, id)
  end
end

-- unlist takes available job id out of the list(s) that hold its entry,
-- when it leaves available other than by a claim (cancel, delete,
-- debounce): a stale entry left there would let the job, once available
-- again, be claimed from its old place, ahead of jobs queued before it.
-- It scans from the tail, where a recent job is (LREM is O(position)).
local function unlist(jk, id)
  local h = redis.call('HMGET', jk, F.priority, F.sticky_worker, F.sticky_fallback)
  if h[2] then redis.call('LREM', pin_key(h[2]), -1, id) end
  if not h[2] or h[3] then redis.call('LREM', avail_key(priority_of(h[1])), -1, id) end
end

-- make_available puts a job at the back of its priority list (or pin list),
-- or at the front when it is handed back untouched (shutdown release).
local function make_available(jk, id, from, front)
  if from == 'scheduled' or from == 'retryable' then
    redis.call('HSET', jk, F.state, SCODE.available)
    redis.call('HDEL', jk, F.run_at)
  else
    redis.call('HSET', jk, F.state, SCODE.available)
  end
  local h = redis.call('HMGET', jk, F.priority, F.sticky_worker, F.sticky_mode, F.sticky_delay)
  push_ready(id, front, h[1], h[2], h[3], h[4])
  count(from, 'available')
  wake()
end

-- schedule_at makes a job scheduled or retryable (state), due at at (ms).
-- Not named schedule: schedule.lua says that word, which would make it
-- take this definition (prelude.go).
local function schedule_at(jk, id, from, state, at)
  redis.call('HSET', jk, F.state, SCODE[state], F.run_at, at)
  redis.call('ZADD', K_SCHED, at, id)
  count(from, state)
  wake()
end
