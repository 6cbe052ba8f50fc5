#!lua name=sluicemodel
-- The hot path of a proposed data model (docs/design/hot-path-data-model.md),
-- measured beside Sluice's own scripts by `go run ./bench/model`. It is a
-- sketch of one partition, not Sluice: one ready list, no priorities,
-- flow control, sticky routing or waits. What it keeps of Sluice's
-- guarantees: each claim moves the job's fence and draws a new lease ID,
-- every ack checks both, store time (TIME), every key in one slot, a job
-- readable by ID (its hash, and its lease in the running index), per-state
-- counters and the minute's throughput tally, and a record of each call so
-- that a re-sent call answers what its first run did.
--
-- What it changes: a lease lives in the partition's running index (one
-- hash, job ID -> 'fence lease worker start'), written by one HSET per
-- claim and read by one HMGET per ack, instead of in each job's hash. A
-- job's hash holds its fence as of its last release; while the index
-- lists the job, the index's fence is the current one and the job runs
-- whatever its hash's state says. So per job a claim makes one call
-- (HGETALL) and a discarded completion none of its own: it is a name in
-- the batched DEL, HDEL and ZREM.
--
-- KEYS, all functions: 1 ready list, 2 run zset (lease expiry), 3 running
-- index (hash), 4 stats hash, 5 idle flag, 6 fence hash (the second and
-- third steps), 7 definitions hash (the third step).
-- ARGV, all functions: 1 prefix of per-job keys, 2 call ID, 3 wake-up
-- channel, 4 partition number; then each function's own.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local RECORD_MS = 60000

-- replayed is a re-sent call's first answer, or nil.
local function replayed(pfx, call)
  local r = redis.call('GET', pfx .. 'rc:' .. call)
  if not r then return nil end
  return cmsgpack.unpack(r)
end

local function remember(pfx, call, reply)
  redis.call('SET', pfx .. 'rc:' .. call, cmsgpack.pack(reply), 'PX', RECORD_MS)
end

-- listed ends an enqueue: the IDs added in one RPUSH, the counter, the
-- wake-up, the call's record.
local function listed(keys, argv, ids, out)
  if #ids > 0 then
    redis.call('RPUSH', keys[1], unpack(ids))
    redis.call('HINCRBY', keys[4], 'available', #ids)
    if redis.call('DEL', keys[5]) == 1 then redis.call('PUBLISH', argv[3], argv[4]) end
  end
  remember(argv[1], argv[2], out)
  return out
end

-- taken says, per key of ks, whether it exists: one EXISTS for them all,
-- which almost always finds none.
local function taken(ks)
  local t = {}
  if redis.call('EXISTS', unpack(ks)) > 0 then
    for i, k in ipairs(ks) do t[i] = redis.call('EXISTS', k) == 1 end
  end
  return t
end

-- A claim (ARGV 5 n, 6 lease ms, 7 worker, 8 lease nonce) pops up to n
-- IDs and reads the running index for them in one HMGET (popped): a job
-- listed twice, or still running, is not leased again. It leases each
-- job it takes (lease), and ends (leased) with one HSET of the index's
-- entries and one ZADD of the run zset for the batch.
local function popped(keys, argv)
  local c = { n = tonumber(argv[5]), worker = argv[7], nonce = argv[8], index = {}, runs = {}, out = {}, o = 0 }
  local now = now_ms()
  c.now_s = string.format('%d', now)
  c.expiry = now + tonumber(argv[6])
  c.exp_s = string.format('%d', c.expiry)
  c.ids = redis.call('LPOP', keys[1], c.n)
  if c.ids then c.held = redis.call('HMGET', keys[3], unpack(c.ids)) end
  return c
end

-- lease leases job id at fence in claim c, and appends id, lease ID,
-- expiry and fence to its reply.
local function lease(c, id, fence)
  local runs, out, o = c.runs, c.out, c.o
  local l = c.nonce .. '.' .. (#runs / 2 + 1)
  c.index[#c.index + 1] = id
  c.index[#c.index + 1] = fence .. ' ' .. l .. ' ' .. c.worker .. ' ' .. c.now_s
  runs[#runs + 1] = c.exp_s
  runs[#runs + 1] = id
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = id, l, c.expiry, fence
  c.o = o + 4
end

local function leased(keys, argv, c)
  local k = #c.runs / 2
  if k > 0 then
    redis.call('HSET', keys[3], unpack(c.index))
    redis.call('ZADD', keys[2], unpack(c.runs))
    redis.call('HINCRBY', keys[4], 'available', -k)
    redis.call('HINCRBY', keys[4], 'running', k)
  end
  if k < c.n then redis.call('SET', keys[5], '1') end
  remember(argv[1], argv[2], c.out)
  return c.out
end

-- enqueue: ARGV 5 n, then n triples (id, kind, payload). Answers 1 per
-- job added, 0 per ID taken already.
local function enqueue(keys, argv)
  local again = replayed(argv[1], argv[2])
  if again then return again end
  local n = tonumber(argv[5])
  local jks = {}
  for i = 1, n do jks[i] = argv[1] .. 'j:' .. argv[3 + 3 * i] end
  local had = taken(jks)
  local out, ids, seen = {}, {}, {}
  for i = 1, n do
    local b = 3 + 3 * i
    if had[i] or seen[argv[b]] then
      out[i] = 0
    else
      seen[argv[b]] = true
      redis.call('HSET', jks[i], 'k', argv[b + 1], 'p', argv[b + 2], 's', '1')
      ids[#ids + 1] = argv[b]
      out[i] = 1
    end
  end
  return listed(keys, argv, ids, out)
end

-- claim: answers, per job leased, id, lease ID, lease expiry, fence, 2f,
-- then f field/value pairs of its hash (less its state).
local function claim(keys, argv)
  local again = replayed(argv[1], argv[2])
  if again then return again end
  local c = popped(keys, argv)
  local seen = {}
  for i, id in ipairs(c.ids or {}) do
    if not c.held[i] and not seen[id] then
      seen[id] = true
      local raw = redis.call('HGETALL', argv[1] .. 'j:' .. id)
      local fence, state = 0, nil
      for k = 1, #raw, 2 do
        local f = raw[k]
        if f == 's' then state = raw[k + 1] elseif f == 'f' then fence = tonumber(raw[k + 1]) end
      end
      if state == '1' then
        lease(c, id, fence + 1)
        local out, at, m = c.out, c.o + 1, 0
        for k = 1, #raw, 2 do
          if raw[k] ~= 's' then
            out[at + m + 1], out[at + m + 2] = raw[k], raw[k + 1]
            m = m + 2
          end
        end
        out[at] = m
        c.o = at + m
      end
    end
  end
  return leased(keys, argv, c)
end

-- acker makes the ack of a model step: ARGV 5 n, then n triples (id,
-- lease ID, fence) of completions whose jobs are deleted, with the keys
-- each job has (named by their prefixes in owned), and its fields in the
-- hashes KEYS[k] for each k of fielded (the running index always).
-- Answers 'completed' or 'stale' per entry.
local function acker(owned, fielded)
  return function(keys, argv)
    local pfx, call = argv[1], argv[2]
    local again = replayed(pfx, call)
    if again then return again end
    local n = tonumber(argv[5])
    local ids = {}
    for i = 1, n do ids[i] = argv[3 + 3 * i] end
    local held = redis.call('HMGET', keys[3], unpack(ids))
    local out, dels, done, seen = {}, {}, {}, {}
    for i = 1, n do
      local b = 3 + 3 * i
      local h = held[i]
      out[i] = 'stale'
      if h and not seen[ids[i]] then
        local fence, lease = string.match(h, '^(%d+) (%S+)')
        if fence == argv[b + 2] and lease == argv[b + 1] then
          seen[ids[i]] = true -- an entry repeated in this call is stale
          out[i] = 'completed'
          done[#done + 1] = ids[i]
          for _, kp in ipairs(owned) do dels[#dels + 1] = pfx .. kp .. ids[i] end
          -- the third step: a job with a life hash says so in its entry
          if string.sub(h, -2) == ' h' then dels[#dels + 1] = pfx .. 'j:' .. ids[i] end
        end
      end
    end
    if #done > 0 then
      if #dels > 0 then redis.call('DEL', unpack(dels)) end
      for _, k in ipairs(fielded) do redis.call('HDEL', keys[k], unpack(done)) end
      redis.call('ZREM', keys[2], unpack(done))
      redis.call('HINCRBY', keys[4], 'running', -#done)
      local mk = pfx .. 'm:' .. math.floor(now_ms() / 60000)
      redis.call('HINCRBY', mk, 'completed', #done)
      redis.call('PEXPIRE', mk, 7200000)
    end
    remember(pfx, call, out)
    return out
  end
end

-- The second step: a job's definition (what enqueue gave: kind, payload,
-- options), which no transition changes, is one string (d:<id>, packed by
-- the producer), written with MSET and read with MGET for a whole batch.
-- What changes lives elsewhere: the lease in the running index, the last
-- fence in the partition's fence hash (KEYS[6], job ID -> fence, written
-- when a job is released alive; none for a job never claimed), and
-- whatever else a transition records (counters, errors, timers, its state
-- when not plain available/running) in a job hash created only then. A
-- job with no hash and no index entry is available.

-- fresh picks, of an enqueue's n (id, definition) pairs, those whose ID is
-- neither taken (had[i]) nor repeated in the call: their names[i] and
-- definitions as pairs for one write, their IDs, and the call's answer
-- (1 per job added, 0 per ID taken).
local function fresh(argv, n, had, names)
  local out, ids, sets, seen = {}, {}, {}, {}
  for i = 1, n do
    local id = argv[4 + 2 * i]
    if had[i] or seen[id] then
      out[i] = 0
    else
      seen[id] = true
      sets[#sets + 1] = names[i]
      sets[#sets + 1] = argv[5 + 2 * i]
      ids[#ids + 1] = id
      out[i] = 1
    end
  end
  return out, ids, sets
end

-- enqueue2: ARGV 5 n, then n pairs (id, definition).
local function enqueue2(keys, argv)
  local again = replayed(argv[1], argv[2])
  if again then return again end
  local n = tonumber(argv[5])
  local dks = {}
  for i = 1, n do dks[i] = argv[1] .. 'd:' .. argv[4 + 2 * i] end
  local out, ids, sets = fresh(argv, n, taken(dks), dks)
  if #sets > 0 then redis.call('MSET', unpack(sets)) end
  return listed(keys, argv, ids, out)
end

-- lease_defined leases, in claim c, each popped job that has a definition
-- (defs[i]) and is neither running nor repeated in the call, at the fence
-- after its last (fences[i]; marked ' h' when the job has a life hash,
-- which its index entry then says too), and answers its definition.
local function lease_defined(c, fences, defs)
  local seen = {}
  for i, id in ipairs(c.ids) do
    if not c.held[i] and not seen[id] and defs[i] then
      seen[id] = true
      local f = fences[i]
      lease(c, id, (tonumber(f and string.match(f, '^%d+')) or 0) + 1)
      if f and string.sub(f, -2) == ' h' then c.index[#c.index] = c.index[#c.index] .. ' h' end
      c.out[c.o + 1] = defs[i]
      c.o = c.o + 1
    end
  end
end

-- claim2: answers, per job leased, id, lease ID, lease expiry, fence,
-- definition.
local function claim2(keys, argv)
  local again = replayed(argv[1], argv[2])
  if again then return again end
  local c = popped(keys, argv)
  if c.ids then
    local fences = redis.call('HMGET', keys[6], unpack(c.ids))
    local dks = {}
    for i, id in ipairs(c.ids) do dks[i] = argv[1] .. 'd:' .. id end
    lease_defined(c, fences, redis.call('MGET', unpack(dks)))
  end
  return leased(keys, argv, c)
end

-- The third step: no key of its own for a plain job. Its definition is a
-- field of the partition's definitions hash (KEYS[7], job ID ->
-- definition), its last fence a field of the fence hash as in the second
-- step, followed by ' h' when the job has a life hash (j:<id>, created
-- only when a transition records something of it: the ack deletes it
-- then, and only then). Every per-job datum is a field of a hash that a
-- batched command reads or writes for the whole call, so no command runs
-- per job, and no per-job key can hold another type than the script
-- expects: a hand-made value under a job's key is no job of the model's
-- (the second step deletes whatever d:<id> holds).

-- enqueue3: ARGV 5 n, then n pairs (id, definition). An ID whose
-- definition is there already is taken: one HMGET for the batch.
local function enqueue3(keys, argv)
  local again = replayed(argv[1], argv[2])
  if again then return again end
  local n = tonumber(argv[5])
  local ids = {}
  for i = 1, n do ids[i] = argv[4 + 2 * i] end
  local out, added, sets = fresh(argv, n, redis.call('HMGET', keys[7], unpack(ids)), ids)
  if #sets > 0 then redis.call('HSET', keys[7], unpack(sets)) end
  return listed(keys, argv, added, out)
end

-- claim3: answers as claim2.
local function claim3(keys, argv)
  local again = replayed(argv[1], argv[2])
  if again then return again end
  local c = popped(keys, argv)
  if c.ids then
    lease_defined(c, redis.call('HMGET', keys[6], unpack(c.ids)), redis.call('HMGET', keys[7], unpack(c.ids)))
  end
  return leased(keys, argv, c)
end

redis.register_function('model_enqueue', enqueue)
redis.register_function('model_claim', claim)
redis.register_function('model_ack', acker({ 'j:', 'b:' }, { 3 }))
redis.register_function('model2_enqueue', enqueue2)
redis.register_function('model2_claim', claim2)
redis.register_function('model2_ack', acker({ 'd:', 'j:' }, { 3, 6 }))
redis.register_function('model3_enqueue', enqueue3)
redis.register_function('model3_claim', claim3)
redis.register_function('model3_ack', acker({}, { 3, 6, 7 }))
