-- lib.lua: the shared prelude, prepended to every script in this folder.
--
-- Every script receives the same KEYS layout and the same first ARGV
-- entries, so the key names live in one place here (mirrored by Go's
-- internal/keys) and script-specific arguments start at ARGV[9].
--
-- KEYS (all in one partition, so all share one hash tag):
--   1 sched   zset  scheduled and retryable jobs, score = due time (ms)
--   2 run     zset  running jobs, score = lease expiry (ms)
--   3 done    zset  completed jobs, score = time they may be deleted (ms)
--   4 dead    zset  archived jobs (dead letters), score = deletion time
--   5 quar    zset  quarantined jobs, score = deletion time
--   6 canc    zset  cancelled jobs, score = deletion time
--   7 stats   hash  number of jobs per state
--   8 idle    string set while a worker waits for work on this partition
--   9..18     lists available jobs, one list per priority 0..9
--  19 outbox  stream of writes and notifications for other slots, relayed
--             by workers (effects on foreign keys, child -> parent wake-ups)
--  20 cc      hash  running jobs per concurrency key
--  21 rwake   zset  rate classes with waiting jobs, score = when a token frees
-- ARGV:
--   1 now ms, or '' to use the store's TIME
--   2 prefix of per-job keys ("{tag}:")
--   3 pub/sub channel that wakes idle workers
--   4 partition number (the wake-up message)
--   5 retention of completed jobs in ms (-1: delete at once)
--   6 retention of archived and quarantined jobs in ms
--   7 retention of cancelled jobs in ms
--   8 crash limit: crash_attempt at which a job is quarantined

local K_SCHED, K_RUN, K_DONE, K_DEAD = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_QUAR, K_CANC, K_STATS, K_IDLE = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local K_OUTBOX, K_CC, K_RWAKE = KEYS[19], KEYS[20], KEYS[21]
local PFX, CHAN, PART = ARGV[2], ARGV[3], ARGV[4]
local RET = {
  completed = tonumber(ARGV[5]),
  archived = tonumber(ARGV[6]),
  quarantined = tonumber(ARGV[6]),
  cancelled = tonumber(ARGV[7]),
}
local TERMINAL = { completed = K_DONE, archived = K_DEAD, quarantined = K_QUAR, cancelled = K_CANC }
local CRASH_LIMIT = tonumber(ARGV[8])
local MAX_PRIORITY = 9
-- A job's max attempts ('ma') is not stored when it is the default: every
-- pending job is a few bytes smaller (store.DefaultMaxAttempts).
local DEFAULT_MAX_ATTEMPTS = '25'
-- A job hash stores its state ('s') as a one-digit code, which a hash
-- holds as a small integer: 2 bytes instead of up to 13 for the name.
-- Scripts work with the names: SCODE gives the code to write, state_of
-- the name of what was read (a name written before codes, or anything
-- unknown, reads as itself; a missing field stays false). Mirrored by Go's
-- store.StateName.
local SCODE = {
  available = '1', scheduled = '2', running = '3', retryable = '4',
  completed = '5', archived = '6', quarantined = '7', cancelled = '8',
}
local function inverted(t)
  local out = {}
  for k, v in pairs(t) do out[v] = k end
  return out
end
local SNAME = inverted(SCODE)
local function state_of(v) return SNAME[v] or v end
local ERR_KEEP = 10
local MSG_MAX = 1024
local RATE_KEEP = 7 * 24 * 3600 * 1000 -- how long an idle rate bucket is kept (ms)

local function now_ms()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local NOW = now_ms()
-- NOW_S is NOW as written to Redis: formatting a number in Lua is slow, so
-- per-job writes of the time use this string.
local NOW_S = string.format('%d', NOW)
-- num_s is integer n as a string, formatted once per call: the jobs of a
-- batch share their lease expiries, fences and retention times.
local NUM_S = {}
local function num_s(n)
  local v = NUM_S[n]
  if not v then
    v = string.format('%d', n)
    NUM_S[n] = v
  end
  return v
end

local function job_key(id) return PFX .. 'j:' .. id end
local function err_key(id) return PFX .. 'e:' .. id end
local function steps_key(id) return PFX .. 's:' .. id end
-- body_key: a job's payload when it is too long for its hash (put_payload)
local function body_key(id) return PFX .. 'b:' .. id end
local function avail_key(prio) return KEYS[9 + prio] end
-- kids: a parent's finished children, child ID -> state .. '\n' .. result
-- or error; kidcount: per spawn step, children done ('<step>') and failed
-- ('<step>:f').
local function kids_key(id) return PFX .. 'k:' .. id end
local function kidcount_key(id) return PFX .. 'kc:' .. id end
-- corrupt_key: what a job's key held when it was not a job hash (claim)
local function corrupt_key(id) return PFX .. 'x:' .. id end

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
-- may_hold says whether list p may hold jobs, given the mask pm (GET)
-- and the pushes of this call.
local function may_hold(pm, p)
  if PM_PUSHED[p] then return true end
  local byte = string.byte(pm, math.floor(p / 8) + 1) or 0
  return math.floor(byte / 2 ^ (7 - p % 8)) % 2 == 1
end

-- count moves one job between per-state counters (from or to may be nil).
local function count(from, to)
  if from then DELTA[from] = (DELTA[from] or 0) - 1 end
  if to then DELTA[to] = (DELTA[to] or 0) + 1 end
end

-- list_in returns the list under key in table t, adding an empty one.
local function list_in(t, key)
  local l = t[key]
  if not l then
    l = {}
    t[key] = l
  end
  return l
end

local function zadd_later(key, score, member)
  local l = list_in(ZADDS, key)
  l[#l + 1] = score
  l[#l + 1] = member
end

local function zrem_later(key, member)
  local l = list_in(ZREMS, key)
  l[#l + 1] = member
end

-- call_chunked runs cmd key args... in chunks that unpack can take.
local function call_chunked(cmd, key, args, step)
  for i = 1, #args, 1000 * step do
    redis.call(cmd, key, unpack(args, i, math.min(i + 1000 * step - 1, #args)))
  end
end

-- A job's headers, and its payload up to BODY_MIN bytes, are stored in
-- chunks of CHUNK bytes (fields 'h', 'h1', 'h2', ... and 'p', '1', '2',
-- ...: a name that reads as a small integer takes 2 bytes in the hash,
-- not 4; chunk_name) so that the job hash keeps Redis's compact encoding,
-- which only holds values up to hash-max-listpack-value (64 bytes by
-- default): one value longer than that turns the whole hash into a hash
-- table, several hundred bytes more per pending job. Values longer than
-- CHUNK_MAX chunks are stored whole: the hash would outgrow the compact
-- encoding's entry count anyway, and they dwarf the difference.
local CHUNK, CHUNK_MAX = 64, 96

-- chunk_name is the name of chunk i >= 1 of field: the number alone for
-- the payload, as its chunks are most of a job's; field .. i for headers,
-- and for payloads written before numbers (chunk_fields reads both).
local function chunk_name(field, i)
  if field == 'p' then return num_s(i) end
  return field .. i
end

-- put_chunked appends field v (chunked) to the flat field list f.
local function put_chunked(f, field, v)
  local n = #v
  f[#f + 1] = field
  if n <= CHUNK or n > CHUNK * CHUNK_MAX then
    f[#f + 1] = v
    return
  end
  f[#f + 1] = string.sub(v, 1, CHUNK)
  local i = 1
  for off = CHUNK + 1, n, CHUNK do
    f[#f + 1] = chunk_name(field, i)
    f[#f + 1] = string.sub(v, off, off + CHUNK - 1)
    i = i + 1
  end
end

-- chunk_fields lists the extra chunk fields of field in h (a field map),
-- under either name of each (chunk_name).
local function chunk_fields(h, field)
  local out, i = {}, 1
  while true do
    local name = chunk_name(field, i)
    if not h[name] and field == 'p' then name = 'p' .. i end -- written before numbers
    if not h[name] then return out end
    out[i] = name
    i = i + 1
  end
end

-- A payload longer than BODY_MIN bytes is a string key of its own
-- (body_key), marked by the field 'pb' in place of 'p'. In chunks, each
-- 64 bytes cost about 8 more (field name and headers), and once the hash
-- passes 1 KiB the allocator rounds it up by 128 bytes on average; a key
-- of its own costs about 90 bytes. Measured (bench -scenario memory):
-- chunked, a job costs 156-160 bytes more than its payload held as a
-- plain string up to 824 payload bytes, then 270 at 909; in a key of its
-- own, 168-198 from 839 to 6,209 bytes. (Measured before chunks were
-- numbered, which makes them 2 bytes cheaper each: chunks gain a little
-- below the threshold, and above it the hash still passes 1 KiB.)
local BODY_MIN = 832

-- put_payload stores job id's payload v: appends its fields to the flat
-- field list f, or writes its body key.
local function put_payload(f, id, v)
  if #v > BODY_MIN then
    redis.call('SET', body_key(id), v)
    f[#f + 1] = 'pb'
    f[#f + 1] = '1'
  else
    put_chunked(f, 'p', v)
  end
end

-- joined is field's whole value in h (a field map), or nil.
local function joined(h, field)
  local v = h[field]
  if not v then return nil end
  local parts = { v }
  for _, name in ipairs(chunk_fields(h, field)) do parts[#parts + 1] = h[name] end
  return table.concat(parts)
end

-- payload_of is the payload of job id whose hash is h (a field map), or
-- nil.
local function payload_of(h, id)
  if h.pb then return redis.call('GET', body_key(id)) or nil end
  return joined(h, 'p')
end

-- field_map reads a hash into a map of field -> value.
local function field_map(key)
  local flat = redis.call('HGETALL', key)
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  return h
end

-- Jobs put at the back of a ready list are pushed in one RPUSH per list,
-- in order, by flush_pushes: at flush(), and by a claim before it pops.
local PUSHES = {}
local function push_later(key, id)
  local l = list_in(PUSHES, key)
  l[#l + 1] = id
end
local function flush_pushes()
  for k, l in pairs(PUSHES) do call_chunked('RPUSH', k, l, 1) end
  PUSHES = {}
end

-- Throughput for queue stats: how many jobs reached each terminal state in
-- this call, and the run times of completed attempts in quarter-octave
-- buckets ('rt:' .. floor(4 * log2(ms + 1))). flush() adds them to the
-- partition's hash of the current minute (keys.Partition.Minute), kept two
-- hours.
local TPUT = {}
local MINUTE_KEEP = 7200000

local function tally(field)
  TPUT[field] = (TPUT[field] or 0) + 1
end

-- RT_FIELD caches the bucket field of each run time seen in this call:
-- most attempts of a batch share a few, and building one is slow.
local RT_FIELD = {}
local function tally_run(ms)
  if not ms or ms < 0 then return end
  local f = RT_FIELD[ms]
  if not f then
    f = 'rt:' .. math.floor(4 * math.log(ms + 1) / math.log(2))
    RT_FIELD[ms] = f
  end
  tally(f)
end

local function flush_tput()
  if next(TPUT) == nil then return end
  local mk = PFX .. 'm:' .. math.floor(NOW / 60000)
  for f, n in pairs(TPUT) do redis.call('HINCRBY', mk, f, n) end
  redis.call('PEXPIRE', mk, MINUTE_KEEP)
  TPUT = {}
end

local function flush()
  flush_tput()
  flush_pushes()
  for p in pairs(PM_PUSHED) do redis.call('SETBIT', PM_KEY, p, 1) end
  PM_PUSHED = {}
  for k, l in pairs(ZREMS) do call_chunked('ZREM', k, l, 1) end
  for k, l in pairs(ZADDS) do call_chunked('ZADD', k, l, 2) end
  for state, d in pairs(DELTA) do
    if d ~= 0 then redis.call('HINCRBY', K_STATS, state, d) end
  end
  local set, del = {}, {}
  for key, n in pairs(CC) do
    if n > 0 then
      set[#set + 1] = key
      set[#set + 1] = n
    else
      del[#del + 1] = key
    end
  end
  if #set > 0 then call_chunked('HSET', K_CC, set, 2) end
  if #del > 0 then call_chunked('HDEL', K_CC, del, 1) end
  set, del = {}, {}
  for key in pairs(WAIT_DIRTY) do
    local n = WAIT[key]
    if n > 0 then
      set[#set + 1] = key
      set[#set + 1] = n
    else
      del[#del + 1] = key
    end
  end
  if #set > 0 then call_chunked('HSET', PFX .. 'cwn', set, 2) end
  if #del > 0 then call_chunked('HDEL', PFX .. 'cwn', del, 1) end
  for class, b in pairs(BUCKETS) do
    local bk = PFX .. 'rl:' .. class
    redis.call('HSET', bk, 't', b.tokens, 'u', NOW, 'n', b.n, 'p', b.per, 'b', b.burst)
    redis.call('PEXPIRE', bk, math.max(math.ceil(b.per * b.burst / b.n) * 2, RATE_KEEP))
  end
  for class, at in pairs(RWAKE) do
    if at then redis.call('ZADD', K_RWAKE, at, class) else redis.call('ZREM', K_RWAKE, class) end
  end
end

-- wake tells idle workers (if any registered) that this partition has work;
-- once per script call is enough.
local woken = false
local function wake()
  if woken then return end
  woken = true
  if redis.call('DEL', K_IDLE) == 1 then redis.call('PUBLISH', CHAN, PART) end
end

local function priority(p)
  p = tonumber(p) or 0
  if p < 0 or p > MAX_PRIORITY then p = 0 end
  return p
end

-- push_ready puts an available job where claims find it: the list of its
-- priority or, for a job that prefers a worker ('sw'), that worker's pin
-- list, with the deadline of its fallback in pinx ('sm' is 'a' to hand it
-- to any worker, 'f' to fail it, after 'sd' ms; 'w' waits for ever).
local function push_ready(id, front, prio, sw, sm, sd)
  local key
  if sw then
    redis.call('HDEL', job_key(id), 'sf') -- pinned again (a retry, a reroute): its fallback starts over
    key = PFX .. 'pin:' .. sw
    if sm == 'a' or sm == 'f' then redis.call('ZADD', PFX .. 'pinx', NOW + (tonumber(sd) or 0), id) end
  else
    local p = priority(prio)
    key = avail_key(p)
    mark_priority(p)
  end
  if front then
    redis.call('LPUSH', key, id)
  else
    push_later(key, id)
  end
end

-- make_available puts a job at the back of its priority list (or pin list),
-- or at the front when it is handed back untouched (shutdown release).
local function make_available(jk, id, from, front)
  if from == 'scheduled' or from == 'retryable' then
    redis.call('HSET', jk, 's', SCODE.available)
    redis.call('HDEL', jk, 'rt')
  else
    redis.call('HSET', jk, 's', SCODE.available)
  end
  local h = redis.call('HMGET', jk, 'pr', 'sw', 'sm', 'sd')
  push_ready(id, front, h[1], h[2], h[3], h[4])
  count(from, 'available')
  wake()
end


local function schedule(jk, id, from, state, at)
  redis.call('HSET', jk, 's', SCODE[state], 'rt', at)
  redis.call('ZADD', K_SCHED, at, id)
  count(from, state)
  wake()
end

-- Flow control. A job may carry a concurrency key ('ck') and limit ('cn'):
-- at most cn jobs of that key run at once in this partition; and a rate
-- class ('rk') whose token bucket (PFX .. 'rl:' .. class, its parameters
-- set by the latest enqueue) allows n jobs per p ms with a burst of b. A
-- job that cannot run now leaves the available lists for the key's or the
-- class's wait list, so it never holds up other work, and it comes back to
-- the front of its priority when a slot or a token frees.
-- Counters and buckets are per partition (one slot).
local function ccwait_key(key) return PFX .. 'cw:' .. key end
local function ratewait_key(class) return PFX .. 'rw:' .. class end

local function cc_running(key)
  local n = CC[key]
  if n == nil then
    n = tonumber(redis.call('HGET', K_CC, key)) or 0
    CC[key] = n
  end
  return n
end

-- requeue_front puts back waiting jobs (still 'available') at the front of
-- their priority lists, keeping their order; stale entries are dropped. It
-- returns how many it put back.
local function requeue_front(ids)
  local n = 0
  for i = #ids, 1, -1 do
    local jk = job_key(ids[i])
    local h = redis.call('HMGET', jk, 's', 'pr', 'sw', 'sm', 'sd')
    if state_of(h[1]) == 'available' then
      push_ready(ids[i], true, h[2], h[3], h[4], h[5])
      n = n + 1
    end
  end
  if n > 0 then wake() end
  return n
end

-- cc_waiting is how many jobs wait on key's wait list.
local function cc_waiting(key)
  local n = WAIT[key]
  if n == nil then
    n = tonumber(redis.call('HGET', PFX .. 'cwn', key)) or 0
    WAIT[key] = n
  end
  return n
end

-- cc_wait puts a job on key's wait list: its key is at its limit.
local function cc_wait(key, id)
  redis.call('RPUSH', ccwait_key(key), id)
  WAIT[key] = cc_waiting(key) + 1
  WAIT_DIRTY[key] = true
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
  if #want == 0 then return end
  local run = redis.call('HMGET', K_CC, unpack(want))
  local wait = redis.call('HMGET', PFX .. 'cwn', unpack(want))
  for i, key in ipairs(want) do
    CC[key] = tonumber(run[i]) or 0
    WAIT[key] = tonumber(wait[i]) or 0
  end
end

-- cc_release frees a running job's slot of key and lets the job that waited
-- longest for it go again (waiters that moved on meanwhile are dropped).
local function cc_release(key)
  CC[key] = cc_running(key) - 1
  while cc_waiting(key) > 0 do
    local id = redis.call('LPOP', ccwait_key(key))
    WAIT_DIRTY[key] = true
    if not id then
      WAIT[key] = 0
      return
    end
    WAIT[key] = WAIT[key] - 1
    if requeue_front({ id }) > 0 then return end
  end
end

-- bucket loads a rate class's token bucket, refilled up to now. n, per and
-- burst come from the job, or from the stored bucket when nil.
local function bucket(class, n, per, burst)
  local b = BUCKETS[class]
  if b then return b end
  local v = redis.call('HMGET', PFX .. 'rl:' .. class, 't', 'u', 'n', 'p', 'b')
  n, per, burst = tonumber(n or v[3]), tonumber(per or v[4]), tonumber(burst or v[5])
  if not n or not per or not burst then return nil end
  local tokens, u = tonumber(v[1]), tonumber(v[2])
  if not tokens then tokens, u = burst, NOW end
  tokens = math.min(burst, tokens + math.max(NOW - u, 0) * n / per)
  b = { tokens = tokens, n = n, per = per, burst = burst }
  BUCKETS[class] = b
  return b
end

-- rate_define records a rate class's parameters in its bucket (the latest
-- enqueue's win), so jobs need to carry only the class name.
local DEFINED = {}
local function rate_define(class, n, per, burst)
  if DEFINED[class] then return end
  DEFINED[class] = true
  local bk = PFX .. 'rl:' .. class
  redis.call('HSET', bk, 'n', n, 'p', per, 'b', burst)
  redis.call('PEXPIRE', bk, math.max(math.ceil(tonumber(per) * tonumber(burst) / tonumber(n)) * 2, RATE_KEEP))
end

-- rate_wait parks a job of class until its bucket has a token again.
local function rate_wait(class, b, id)
  redis.call('RPUSH', ratewait_key(class), id)
  local at = NOW + math.ceil((1 - b.tokens) * b.per / b.n)
  if not RWAKE[class] or at < RWAKE[class] then RWAKE[class] = at end
end

-- promote_rated lets waiting jobs of rate classes whose tokens are back
-- return to the available lists, as many as there are tokens.
local function promote_rated()
  local due = redis.call('ZRANGEBYSCORE', K_RWAKE, '-inf', NOW, 'LIMIT', 0, 100)
  for _, class in ipairs(due) do
    local b = bucket(class)
    local wk = ratewait_key(class)
    local k = 0
    if b then k = math.floor(b.tokens) end
    if k >= 1 then
      local ids = redis.call('LPOP', wk, k)
      if ids then requeue_front(ids) end
    end
    if redis.call('EXISTS', wk) == 0 then
      RWAKE[class] = false
    elseif b then
      RWAKE[class] = NOW + math.ceil(math.max(1 - (b.tokens - k), 0) * b.per / b.n)
    else
      RWAKE[class] = NOW + 1000
    end
  end
end

-- clear_lease takes a job out of the running set. Its lease fields stay
-- until the next claim overwrites them; they mean nothing outside running.
local function clear_lease(id)
  zrem_later(K_RUN, id)
end

-- Quarantine hold (flow.WithQuarantineHold): a job may carry a
-- fingerprint of its kind and arguments ('qf'). When it is quarantined,
-- PFX .. 'qh:' .. fingerprint names it, and a job enqueued later with the
-- same fingerprint is held (enqueue.lua: 'qb' names the job it waits on,
-- and it waits on the list PFX .. 'qw:' .. fingerprint) until the
-- quarantined one is released or deleted. Mirrored by keys.Partition's
-- QuarantineHold and HeldOn.
-- free_held ends quarantined job id's hold (fingerprint qf): the jobs held
-- behind it become due now.
local function free_held(qf, id)
  local qh = PFX .. 'qh:' .. qf
  if redis.call('GET', qh) ~= id then return end
  redis.call('DEL', qh)
  local wk = PFX .. 'qw:' .. qf
  local ids = redis.call('LRANGE', wk, 0, -1)
  redis.call('DEL', wk)
  for _, h in ipairs(ids) do
    local hk = job_key(h)
    local v = redis.call('HMGET', hk, 's', 'qb')
    if state_of(v[1]) == 'scheduled' and v[2] == id then
      redis.call('HDEL', hk, 'qb')
      redis.call('HSET', hk, 'rt', NOW_S)
      redis.call('ZADD', K_SCHED, NOW, h)
      wake()
    end
  end
end

-- delete_job deletes job id, in state (a name), and every key it owns.
-- plain says it has none but its hash and perhaps a body key (no errors,
-- no checkpoints), which saves the lookups. Only an archived or
-- quarantined job can have a pending death report or hold other jobs
-- (free_held): a completed one, deleted at once in the hot path, skips
-- those lookups.
local function delete_job(id, plain, state)
  if plain then
    redis.call('DEL', job_key(id), body_key(id))
    return
  end
  if state == 'archived' or state == 'quarantined' then
    redis.call('ZREM', PFX .. 'dd', id) -- its pending death report, if any
    if state == 'quarantined' then
      local qf = redis.call('HGET', job_key(id), 'qf')
      if qf then free_held(qf, id) end
    end
  end
  redis.call('DEL', job_key(id), body_key(id), err_key(id), steps_key(id), kids_key(id), kidcount_key(id),
    corrupt_key(id))
end

-- holds reports whether the job is running under exactly this lease ID and
-- fence: the identity check every write of an attempt starts with.
local function holds(jk, lease, fence)
  local h = redis.call('HMGET', jk, 's', 'l', 'f')
  return state_of(h[1]) == 'running' and h[2] == lease and h[3] == fence
end

-- deliver records that child (of parent, spawned by step) finished, and
-- wakes the parent when it waits for that step and the wait is over.
local function deliver(parent, step, child, state, payload)
  local pk = job_key(parent)
  if redis.call('EXISTS', pk) == 0 then return end
  local kk = kids_key(parent)
  local new = redis.call('HSET', kk, child, state .. '\n' .. payload) == 1
  if not new then return end
  local ck = kidcount_key(parent)
  redis.call('HINCRBY', ck, step, 1)
  local failed = state ~= 'completed'
  if failed then redis.call('HINCRBY', ck, step .. ':f', 1) end
  local h = redis.call('HMGET', pk, 's', 'ws', 'wp')
  if state_of(h[1]) ~= 'scheduled' or h[2] ~= step then return end
  local left = redis.call('HINCRBY', pk, 'wc', -1)
  if left <= 0 or (failed and h[3] == 'f') then
    redis.call('HDEL', pk, 'ws', 'wc', 'wp')
    redis.call('ZREM', K_SCHED, parent)
    make_available(pk, parent, 'scheduled', false)
  end
end

-- notified counts the notifications notify_parent put in the outbox.
local notified = 0

-- notify_parent tells a spawned job's parent that it finished: at once when
-- the parent lives in this partition, else through the outbox. pa is the
-- job's parent field when the caller read it (false: none), nil to read it
-- here.
local function notify_parent(jk, id, state, pa)
  if pa == false then return end
  if pa == nil and not redis.call('HGET', jk, 'pa') then return end
  local p = redis.call('HMGET', jk, 'pa', 'pp', 'ps', 'pl', 'r', 'er')
  local payload = p[6] or ''
  if state == 'completed' then payload = p[5] or '' end
  if p[2] == PFX then
    deliver(p[4], p[3], id, state, payload)
    return
  end
  redis.call('XADD', K_OUTBOX, '*', 't', 'n', 'p', p[1], 's', p[3], 'c', id, 'st', state, 'r', payload)
  notified = notified + 1
end

-- A job that reaches archived or quarantined (a death) has a pending death
-- report in PFX .. 'dd' until a worker's death handler has run for it
-- (deaths.lua 'done'): scored by when a sweep may deliver it, DEATH_GRACE
-- ms on (the worker that made the death reports it at once, unless it
-- dies first). Mirrored by keys.Partition.Deaths.
local DEATH_GRACE = 30000

-- finish moves a job to a terminal state; reason may be ''. m is what the
-- caller read of the job ({ pa = parent or false, uk = unique key or
-- false, plain = as for delete_job, ls = lease start or nil }), or nil to
-- read it here.
local function finish(jk, id, from, state, reason, m)
  if not m then
    local v = redis.call('HMGET', jk, 'pa', 'uk')
    m = { pa = v[1], uk = v[2], plain = false }
  end
  tally(state)
  if state == 'completed' and m.ls then tally_run(NOW - tonumber(m.ls)) end
  notify_parent(jk, id, state, m.pa)
  if m.uk then
    -- a unique key held while the job is active is free again
    local uq = PFX .. 'uq:' .. m.uk
    if redis.call('GET', uq) == id and redis.call('PTTL', uq) < 0 then redis.call('DEL', uq) end
  end
  local ret = RET[state]
  if ret < 0 then
    delete_job(id, m.plain, state)
    count(from, nil)
    return
  end
  count(from, state)
  if reason ~= '' then
    redis.call('HSET', jk, 's', SCODE[state], 'ft', NOW_S, 'xr', reason)
  else
    redis.call('HSET', jk, 's', SCODE[state], 'ft', NOW_S)
  end
  zadd_later(TERMINAL[state], num_s(NOW + ret), id)
  if state == 'archived' or state == 'quarantined' then
    zadd_later(PFX .. 'dd', num_s(NOW + DEATH_GRACE), id)
  end
  if state == 'quarantined' then
    local qf = redis.call('HGET', jk, 'qf')
    if qf then redis.call('SET', PFX .. 'qh:' .. qf, id) end
  end
end

-- record_error keeps the last ERR_KEEP errors of a job, newest first.
local function record_error(jk, id, kind, msg, stack)
  if #msg > MSG_MAX then msg = string.sub(msg, 1, MSG_MAX) end
  local a = redis.call('HGET', jk, 'a') or '0'
  local c = redis.call('HGET', jk, 'c') or '0'
  redis.call('HSET', jk, 'er', msg)
  local ek = err_key(id)
  redis.call('LPUSH', ek, cjson.encode({ k = kind, t = NOW, a = tonumber(a), c = tonumber(c), m = msg, s = stack }))
  redis.call('LTRIM', ek, 0, ERR_KEEP - 1)
end

-- crash charges crash_attempt and either quarantines the job at the
-- crash limit or retries it behind the work already waiting (suspect
-- demotion): retryable after delay ms (the worker's crash delay), doubling
-- with each crash up to CRASH_DELAY_MAX, so that a job that takes its
-- process down neither comes straight back nor comes back beside the jobs
-- it took down with it (claims also lease at most one job with a crash on
-- record per worker that runs none: claim.lua). A delay of 0 makes it
-- available at once, at the back of its list.
local CRASH_DELAY_MAX = 60000
local function crash(jk, id, from, delay)
  local c = redis.call('HINCRBY', jk, 'c', 1)
  if c >= CRASH_LIMIT then
    finish(jk, id, from, 'quarantined', 'crash_limit')
    return 'quarantined'
  end
  if delay <= 0 then
    make_available(jk, id, from, false)
    return 'available'
  end
  schedule(jk, id, from, 'retryable', NOW + math.min(delay * 2 ^ (c - 1), math.max(delay, CRASH_DELAY_MAX)))
  return 'retryable'
end

-- reap reclaims up to limit jobs whose lease expired (crashed, stalled or
-- partitioned workers) and returns a flat list of id, new state, previous
-- holder for each. Each frees its concurrency slot, if it has one, and is
-- charged a crash: running -> retryable (crash_attempt+1, after the crash
-- delay of crash(); available at once for a delay of 0: suspect demotion)
-- or running -> quarantined at the crash limit.
-- Orphan provenance is recorded on the job: the previous holder ('oh'),
-- when its lease expired ('oe') and how often this happened ('on').
local function reap(limit, delay)
  local expired = redis.call('ZRANGEBYSCORE', K_RUN, '-inf', NOW, 'WITHSCORES', 'LIMIT', 0, limit)
  local out = {}
  for i = 1, #expired, 2 do
    local id, expiry = expired[i], expired[i + 1]
    local jk = job_key(id)
    local s, holder, ck = unpack(redis.call('HMGET', jk, 's', 'w', 'ck'))
    s = state_of(s)
    clear_lease(id)
    if s == 'running' then
      if ck then cc_release(ck) end
      holder = holder or ''
      redis.call('HSET', jk, 'oh', holder, 'oe', expiry)
      redis.call('HINCRBY', jk, 'on', 1)
      record_error(jk, id, 'lease_expired', 'lease expired while held by ' .. holder, '')
      out[#out + 1] = id
      out[#out + 1] = crash(jk, id, 'running', delay)
      out[#out + 1] = holder
    end
  end
  return out
end

-- sweep deletes up to limit finished jobs per terminal state whose
-- retention has passed, with all their keys, and returns how many.
local function sweep(limit)
  local deleted = 0
  for state, zk in pairs(TERMINAL) do
    local ids = redis.call('ZRANGEBYSCORE', zk, '-inf', NOW, 'LIMIT', 0, limit)
    for _, id in ipairs(ids) do
      zrem_later(zk, id)
      local s = state_of(redis.call('HGET', job_key(id), 's'))
      if s == state then
        delete_job(id, false, s)
        count(state, nil)
        deleted = deleted + 1
      end
    end
  end
  return deleted
end

-- promote moves up to limit due scheduled/retryable jobs to available.
local function promote(limit)
  local due = redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', NOW, 'LIMIT', 0, limit)
  for _, id in ipairs(due) do
    redis.call('ZREM', K_SCHED, id)
    local jk = job_key(id)
    local s = state_of(redis.call('HGET', jk, 's'))
    if s == 'scheduled' or s == 'retryable' then
      -- a parent whose join wait timed out stops waiting
      if s == 'scheduled' then redis.call('HDEL', jk, 'ws', 'wc', 'wp') end
      make_available(jk, id, s, false)
    end
  end
  return #due
end

-- promote_pinned applies the fallback of pinned jobs whose preferred worker
-- did not claim them in time; it returns the IDs it archived.
local function promote_pinned()
  local failed = {}
  local due = redis.call('ZRANGEBYSCORE', PFX .. 'pinx', '-inf', NOW, 'LIMIT', 0, 100)
  for _, id in ipairs(due) do
    redis.call('ZREM', PFX .. 'pinx', id)
    local jk = job_key(id)
    local h = redis.call('HMGET', jk, 's', 'sm', 'pr')
    if state_of(h[1]) == 'available' then
      if h[2] == 'a' then
        redis.call('HSET', jk, 'sf', '1') -- handed to every worker: claims take it from the shared list
        local p = priority(h[3])
        redis.call('LPUSH', avail_key(p), id) -- its pin entry goes stale
        mark_priority(p)
        wake()
      elseif h[2] == 'f' then
        finish(jk, id, 'available', 'archived', 'sticky_unavailable')
        failed[#failed + 1] = id
      end
    end
  end
  return failed
end

-- next_due is the earliest time something becomes claimable: a scheduled
-- job, a rate token, a sticky fallback; -1 when there is none.
local function next_due()
  local nd = -1
  for _, k in ipairs({ K_SCHED, K_RWAKE, PFX .. 'pinx' }) do
    local first = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if #first > 0 and (nd < 0 or tonumber(first[2]) < nd) then nd = tonumber(first[2]) end
  end
  return nd
end
