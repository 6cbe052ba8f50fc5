-- lib.lua: the shared prelude, prepended to every script in this folder:
-- the partition's layout, state codes, store time and key helpers here,
-- then lib_names (the job hash's fields and the scripts' statuses) and by
-- concept lib_chunks, lib_batch, lib_ready, lib_limits, lib_lifecycle,
-- lib_admin, lib_waits, lib_effects, lib_enqueue, lib_pack, lib_replay
-- and lib_offer (joined in that order by lua.go: a Lua local only sees the
-- locals above it). A script gets only the definitions it uses
-- (prelude.go).
--
-- Every script receives the same KEYS layout and the same first ARGV
-- entries, so the key names live in one place here (mirrored by Go's
-- internal/keys) and script-specific arguments start at ARGV[9].
--
-- KEYS (all in one partition, so all share one hash tag). On Redis
-- Cluster every one is declared: declared keys are what keep a script off
-- a slot that is being migrated (Redis Cluster answers ASK or TRYAGAIN
-- while any of them has moved): with sched alone declared, a call could
-- recreate on the old node a key already moved (clustertest
-- TestFailover/slot_migration). A single server migrates no slot, and
-- there the 21 keys after sched cost every call about 4 µs to send,
-- parse and hand to Lua (a quarter of a one-job enqueue's script), so a
-- call to a single server declares sched alone (store.partKeys) and the
-- prelude names the others from ARGV[2] (partition_keys).
--   1 sched   zset  scheduled and retryable jobs, score = due time (ms):
--                   those due soon (lib_ready.lua: later ones wait in buckets)
--   2 run     zset  running jobs, score = lease expiry (ms), and
--                   RUN_ANCHOR at +inf (lib_batch.lua)
--   3 done    zset  completed jobs, score = time they may be deleted (ms)
--   4 dead    zset  archived jobs (dead letters), score = deletion time
--   5 quar    zset  quarantined jobs, score = deletion time
--   6 canc    zset  cancelled jobs, score = deletion time
--   7 stats   hash  number of jobs per state
--   8 idle    string set while a worker waits for work on this partition;
--                   '1', or an offer to take pushed jobs (lib_offer.lua)
--   9..18     lists available jobs, one list per priority 0..9
--  19 outbox  stream of writes and notifications for other slots, relayed
--             by workers (effects on foreign keys, child -> parent wake-ups)
--  20 cc      hash  running jobs per concurrency key
--  21 rwake   zset  rate classes with waiting jobs, score = when a token frees
--  22 later   zset  buckets of jobs due later than sched holds, score =
--                   bucket start (ms) (lib_ready.lua)
-- ARGV:
--   1 now ms, or '' to use the store's TIME
--   2 prefix of per-job keys ("{tag}:")
--   3 pub/sub channel that wakes idle workers
--   4 partition number (the wake-up message)
--   5 retention of completed jobs in ms (-1: delete at once)
--   6 retention of archived and quarantined jobs in ms
--   7 retention of cancelled jobs in ms
--   8 crash limit: crash_attempt at which a job is quarantined

local PFX, CHAN, PART = ARGV[2], ARGV[3], ARGV[4]
-- NAMED keeps the names partition_keys made last, with their prefix: a
-- field written, never the table, so that the library makes it once and
-- it outlives the call (function_test.go TestLibraryShape), and the
-- calls that follow on the same partition, most of them, build no string.
-- Only names made from pfx are kept, so no call sees another's partition.
local NAMED = { pfx = false, keys = false }
-- partition_keys is the partition's keys: those declared, when the call
-- declares them all (Redis Cluster), else (sched alone, on a single
-- server) the names made from prefix pfx, the names after it in the order
-- of KEYS (Go: keys.Partition.Script; TestLuaPartitionKeysAgree).
local function partition_keys(declared, pfx)
  if #declared > 1 then return declared end
  if NAMED.pfx ~= pfx then
    local t = { 'sched', 'run', 'completed', 'archived', 'quarantined', 'cancelled', 'stats', 'idle',
      'avail:0', 'avail:1', 'avail:2', 'avail:3', 'avail:4', 'avail:5', 'avail:6', 'avail:7', 'avail:8', 'avail:9',
      'outbox', 'cc', 'rwake', 'later' }
    for i, name in ipairs(t) do t[i] = pfx .. name end
    NAMED.pfx, NAMED.keys = pfx, t
  end
  return NAMED.keys
end
local K_SCHED, K_RUN, K_DONE, K_DEAD, K_QUAR, K_CANC, K_STATS, K_IDLE = unpack(partition_keys(KEYS, PFX), 1, 8)
local K_OUTBOX, K_CC, K_RWAKE, K_LATER = unpack(partition_keys(KEYS, PFX), 19, 22)
local RET = {
  completed = tonumber(ARGV[5]),
  archived = tonumber(ARGV[6]),
  quarantined = tonumber(ARGV[6]),
  cancelled = tonumber(ARGV[7]),
}
local TERMINAL = { completed = K_DONE, archived = K_DEAD, quarantined = K_QUAR, cancelled = K_CANC }
local CRASH_LIMIT = tonumber(ARGV[8])
local MAX_PRIORITY = 9
-- A job's max attempts (F.max_attempts) is not stored when it is the default: every
-- pending job is a few bytes smaller (store.DefaultMaxAttempts).
local DEFAULT_MAX_ATTEMPTS = '25'
-- A job hash stores its state (F.state) as a one-digit code, which a hash
-- holds as a small integer: 2 bytes instead of up to 13 for the name.
-- Scripts work with the names: SCODE gives the code to write, state_of
-- the name of what was read (a name written before codes, or anything
-- unknown, reads as itself; a missing field stays false). Mirrored by Go's
-- store.StateName.
local SCODE = {
  available = '1', scheduled = '2', running = '3', retryable = '4',
  completed = '5', archived = '6', quarantined = '7', cancelled = '8',
}
-- SNAME is SCODE inverted, spelled out: a literal table is built once,
-- when the library loads, where a computed one would be built per call
-- (prelude.go); TestStateCodesInverse checks that the two agree.
local SNAME = {
  ['1'] = 'available', ['2'] = 'scheduled', ['3'] = 'running', ['4'] = 'retryable',
  ['5'] = 'completed', ['6'] = 'archived', ['7'] = 'quarantined', ['8'] = 'cancelled',
}
local function state_of(v) return SNAME[v] or v end
-- PLAIN_LEASE ends the lease ID a claim gives a job with no parent, no
-- unique key and no concurrency key (claim.lua), fields no transition of
-- a running job changes: an ack of that lease (ack.lua), which compares
-- it with the job's own, then reads none of the three. A claim's lease ID
-- ends with a digit otherwise, as an older release's always does. A
-- pushed job (lib_offer.lua) is plain by construction, and marked too.
-- BARE_LEASE ends it in place of PLAIN_LEASE when the job's payload is in
-- its hash too (no body key: only an enqueue writes one, or a replace of
-- a job that never ran): the ack deletes a discarded completion of it
-- with its hash alone, one key less to look up (about 2k instructions of
-- a no-op job's 180k, bench/RESULTS-3.md).
local PLAIN_LEASE = '+'
local BARE_LEASE = '='
-- lease_of reads a lease ID as a claim (or a push, lib_offer.lua) writes
-- it, worker .. '/' .. start .. '/' .. nonce .. '.' .. i then its mark,
-- start the store time of the lease's start (ms): it returns worker,
-- start and what follows them (the mark left off), or nil for a lease ID
-- of another shape (an older release's, which wrote the holder and the
-- start as fields of the job, F.worker and F.lease_start). The lease ID
-- carries them because it is written anyway: two fields more per leased
-- job cost a no-op job 3% of its instructions (bench/RESULTS-3.md). A
-- worker ID holds no '/' (runtime.ValidWorkerID); the pattern reads one
-- that does up to the last '/' but one all the same. A lease ID is a few
-- hundred bytes at most (a worker ID's 128 and a nonce): a longer one,
-- or none, is read as of no such shape.
local function lease_of(lease)
  if type(lease) ~= 'string' or #lease > 1024 then return nil end
  return string.match(lease, '^(.+)/(%d+)/([^/]-)[+=]?$')
end
-- count_of is the counter field v holds (a fence, an attempt count; 0
-- when absent: nil, or false from HMGET), or nil when v is no whole
-- number from 0 to 2^53: corrupt
-- data such as '1.5', '-1' or 'inf', which tonumber alone would take and
-- a claim would then pack as a float.
local COUNT_MAX = 2 ^ 53
local function count_of(v)
  if not v then return 0 end
  local n = tonumber(v)
  if n and n >= 0 and n < COUNT_MAX and n % 1 == 0 then return n end
end
local ERR_KEEP = 10
local MSG_MAX = 1024

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
-- rate_keep is how long an idle token bucket of n jobs per per ms with a
-- burst of burst (positive finite numbers) is kept, as PEXPIRE takes it:
-- twice its time to refill, at least a week and at most ten years, as
-- an integer (Lua writes a huge product, a burst of 1e8 per 1,000 h, as
-- '7.2e+17', which PEXPIRE refuses). rate_define and flush both use it.
local function rate_keep(n, per, burst)
  local keep = math.ceil(per * burst / n) * 2
  return num_s(math.min(math.max(keep, 7 * 24 * 3600 * 1000), 10 * 365 * 24 * 3600 * 1000))
end

local function job_key(id) return PFX .. 'j:' .. id end
local function err_key(id) return PFX .. 'e:' .. id end
local function steps_key(id) return PFX .. 's:' .. id end
-- body_key: a job's payload when it is too long for its hash (put_payload)
local function body_key(id) return PFX .. 'b:' .. id end
local function avail_key(prio) return partition_keys(KEYS, PFX)[9 + prio] end
-- kids: a parent's finished children, child ID -> state .. '\n' .. result
-- or error; kidcount: per spawn step, children done ('<step>') and failed
-- ('<step>:f').
local function kids_key(id) return PFX .. 'k:' .. id end
local function kidcount_key(id) return PFX .. 'kc:' .. id end
-- set_aside moves key, found holding another type than Sluice writes
-- there (corrupt data), out of the work's way and keeps its value for the
-- operator. what is '<kind>:<name>' (Go: keys.Partition.Aside lists the
-- kinds: 'j' a job's key, name its ID; 'k' a key the jobs share; 'list',
-- 'later', 'ccwait', 'ratewait'); the value goes to x:<kind>:<name>, or,
-- when that is taken, to a free x:<kind>#<n>:<name>, n >= 2. A kind holds
-- no ':' or '#', so no name of one kind or number is another's, whatever
-- a job ID holds ('list:a', 'k:stats'); and no value set aside is
-- overwritten: a key damaged again, a job ID reused and damaged again,
-- keeps each. Only corrupt data comes here, so a sound call pays nothing;
-- a value costs one RENAMENX when its first name is free, else EXISTS on
-- n = 2, 4, 8 ... up to a free one, then halving between the last taken
-- and that one to a free n whose n - 1 is taken: a few dozen commands at
-- most, deterministic, and n stays dense (the next after the last) while
-- the operator deletes none. n would reach 2^40 only past any memory:
-- there it raises rather than overwrite.
local function set_aside(key, what)
  local at = string.find(what, ':', 1, true)
  local head, tail = PFX .. 'x:' .. string.sub(what, 1, at - 1) .. '#', string.sub(what, at)
  if redis.call('RENAMENX', key, PFX .. 'x:' .. what) == 1 then return end
  local taken, free = 1, 2
  while redis.call('EXISTS', head .. free .. tail) == 1 do
    if free >= 2 ^ 40 then error('sluice: no free name to set ' .. key .. ' aside') end
    taken, free = free, free * 2
  end
  while free - taken > 1 do
    local mid = math.floor((taken + free) / 2)
    if redis.call('EXISTS', head .. mid .. tail) == 1 then taken = mid else free = mid end
  end
  redis.call('RENAME', key, head .. free .. tail)
end
-- fields reads fields of job hash jk (HMGET), or none and true when the
-- key holds something else (corrupt data): where a call handles many
-- jobs, the read would raise and fail them all, where that job alone is
-- not in the state the call looks for.
local function fields(jk, ...)
  local h = redis.pcall('HMGET', jk, ...)
  if h.err then return {}, true end
  return h
end
-- words iterates the words of s (runs of characters other than white
-- space, as gmatch '%S+' does) by finding each word's two ends. A
-- pattern that repeats an item recurses in gopher-lua's matcher
-- (miniredis) once per character it takes, and a word of megabytes (a
-- corrupt field) would overflow the Go stack, which ends the process
-- (lua/patterns_test.go).
local function words(s)
  local at = 1
  return function()
    local b = string.find(s, '%S', at)
    if not b then return nil end
    at = string.find(s, '%s', b + 1) or #s + 1
    return string.sub(s, b, at - 1)
  end
end
-- join is table.concat(parts, sep) taken a thousand parts at a time:
-- gopher-lua's table.concat (miniredis) puts every part (and separator)
-- on its registry, which holds about 5,100 values, and a claim's reply of
-- 90 jobs, packed in Lua there, raised "registry overflow" after its
-- leases were written (TestClaimManyConcurrencyKeys,
-- TestWholeTableCallsAreBounded).
local function join(parts, sep)
  sep = sep or ''
  local n = #parts
  if n <= 1000 then return table.concat(parts, sep) end
  local pieces = {}
  for i = 1, n, 1000 do pieces[#pieces + 1] = table.concat(parts, sep, i, math.min(i + 999, n)) end
  return join(pieces, sep)
end
-- The partition's other keys, each named here only (Go: keys.Partition,
-- TestLuaKeysAgree): a held unique key, a rate class's token bucket, wait
-- list and promises to the waiters it let go, a concurrency key's wait
-- list and the waiter counts, a worker's pin list, the sticky fallback
-- deadlines and the index of the workers with a pin list, the paused flag,
-- a minute's throughput, pending death reports, the quarantine hold of a
-- fingerprint and the jobs held on it, a relayed follow-up's marker.
local function unique_key(k) return PFX .. 'uq:' .. k end
local function rate_key(class) return PFX .. 'rl:' .. class end
local function ratewait_key(class) return PFX .. 'rw:' .. class end
local function ratego_key(class) return PFX .. 'rg:' .. class end
local function ccwait_key(key) return PFX .. 'cw:' .. key end
local CC_WAITING = PFX .. 'cwn'
local function pin_key(worker) return PFX .. 'pin:' .. worker end
local PIN_DEADLINES = PFX .. 'pinx'
local PIN_WORKERS = PFX .. 'pinw'
local PAUSED = PFX .. 'paused'
-- MODEL_KEY holds the partition's data model, the meaning of its keys, when
-- a release that changed it raised it; absent, it is model 1. Every script
-- on a partition starts with model_error (Go: store.DataModel), so that the
-- scripts of an older release refuse a partition a newer one has changed,
-- before writing anything, rather than misread it.
local MODEL_KEY = PFX .. 'dm'
local function model_error()
  local m = redis.pcall('GET', MODEL_KEY)
  if not m or m == '1' then return nil end
  if type(m) == 'table' then -- another type: no release wrote it
    -- worded as every refusal of a key of another type: 'malformed key:'
    -- and the key (Go: store.scriptError, ErrMalformed)
    return redis.error_reply('ERR sluice: malformed key: ' .. MODEL_KEY ..
      ' is of another type than a model number: nothing was done (a partition at model 1 has no such key)')
  end
  return redis.error_reply('ERR sluice: newer data model: the partition ' .. PFX .. ' is at model ' .. m ..
    ', these scripts know model 1 only: upgrade this process')
end
local function minute_key(m) return PFX .. 'm:' .. m end
local DEATHS = PFX .. 'dd'
local function hold_key(fp) return PFX .. 'qh:' .. fp end
local function held_key(fp) return PFX .. 'qw:' .. fp end
local function hold_next_key(fp) return PFX .. 'qn:' .. fp end
local function followup_key(id) return PFX .. 'fu:' .. id end
-- RELAY_KEEP (ms): how long the marker of something relayed from another
-- slot (a follow-up's, a child notification's) is kept. Go:
-- store.relayMarkTTL, the keep of a relayed effect's marker.
local RELAY_KEEP = 604800000
-- TICK_KEEP (ms): how long the marker of a schedule's tick is kept: longer
-- than any scheduler's stall or outage between enqueueing a tick and
-- confirming it, short enough that a schedule of every second keeps a
-- day of markers, not a week's.
local TICK_KEEP = 86400000
-- notemark_key(m) marks child-finished notification m delivered here
-- (notify.lua; m names the child's partition and outbox entry)
local function notemark_key(m) return PFX .. 'nm:' .. m end
-- later_key(b) is the list of the job IDs of bucket b of the jobs due later
-- than the sched zset holds (lib_ready.lua sched_add; K_LATER lists the
-- buckets).
local function later_key(b) return PFX .. 'later:' .. b end
-- WATCHING is the set of the partition's jobs that a caller waits on
-- (watch.lua, F.watched), and DONE_CHANNEL the pub/sub channel on which
-- finish (lib_lifecycle.lua) announces each as it finishes: the
-- partition's tag without its braces, then ':fin' ('ns:queue:0:fin'),
-- among the namespace's channels ('ns:*', as an ACL user confined to them
-- is told to allow). Go: keys.Partition.Watching and DoneChannel.
local WATCHING = PFX .. 'wch'
local DONE_CHANNEL = string.sub(PFX, 2, -3) .. ':fin'
