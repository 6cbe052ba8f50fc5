-- unsignal.lua: an operator discards the next signal of one name sent to
-- a job and not yet taken: the one a wait of it would take next, the
-- earliest (admin.Client.DiscardSignal). A signal whose payload its wait
-- cannot decode parks the job (bad_signal) again at every redrive while
-- it is kept: discarded, a redriven job takes the next one, or waits.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  the job's ID in the partition
-- ARGV[10] the signal's name
-- ARGV[11] the sequence number the next kept signal of the name must have
--          (a console that showed it), or '' for whichever it is
-- ARGV[12], ARGV[13] the job must have been created at or after ARGV[12]
--          and before ARGV[13] (ms), or '' and '': any job of the ID;
--          checked in this call, so that a job given the ID since the
--          operator looked (which numbers its signals from 1 again)
--          loses nothing
-- ARGV[14] the time the job's generated ID carries (ms), its creation
--          time when it has no created-time field (enqueue.lua), or ''
-- Returns: { status, state, seq, payload }
--   'ok', state, seq, payload the signal discarded: its sequence number
--                             and payload (seq 0, payload '': none kept;
--                             seq -n: the next kept is #n, not ARGV[11],
--                             and nothing was discarded)
--   'missing', '', 0, ''      no such job
--   'running', 'running', 0, '' refused: its attempt may be taking it
--   'final', 'completed', 0, '' refused: a completed job never waits again
--   'conflict', state, created, '' refused: the job was created (ms) out
--                             of ARGV[12]..ARGV[13], another job
--   A checkpoints key of another type, a state field that names no
--   state, or (given ARGV[12]) a created-time field that is no whole
--   number of ms (corrupt data), fails the call with an error naming the job,
--   nothing written (as signal.lua's).
-- Transitions: none.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id, name = ARGV[9], ARGV[10]
local s = state_of(redis.call('HGET', job_key(id), F.state))
if not s then return remember({ STATUS.missing, STATUS.none, 0, '' }) end
-- a state no release writes (corrupt data): refused as malformed, nothing
-- discarded, as signal.lua refuses it (not 'ok' for a job no wait reads)
if not SCODE[s] then return redis.error_reply('WRONGTYPE sluice: job ' .. id .. ': its state field names no state') end
if ARGV[12] ~= '' then
  -- a created-time field that is no whole number of ms (written by hand:
  -- a read of the job is malformed) tells no job: refused, not compared
  -- ('nan' is in no range and out of none; 20 characters hold any ms
  -- time, and bound the match)
  local raw = redis.call('HGET', job_key(id), F.created)
  if raw and (#raw > 20 or not string.match(raw, '^%-?%d+$')) then
    return redis.error_reply('WRONGTYPE sluice: job ' .. id .. ': its created-time field is no whole number of ms: nothing discarded')
  end
  local ct = tonumber(raw) or tonumber(ARGV[14])
  if not ct or ct < tonumber(ARGV[12]) or ct >= tonumber(ARGV[13]) then
    return remember({ STATUS.conflict, s, ct or 0, '' })
  end
end
if s == 'running' then return remember({ STATUS.running, s, 0, '' }) end
if s == 'completed' then return remember({ STATUS.final, s, 0, '' }) end
local sk = steps_key(id)
local fields = redis.pcall('HKEYS', sk)
if fields.err then
  return redis.error_reply('WRONGTYPE sluice: job ' .. id .. ' has corrupt signal data (its checkpoints): nothing discarded')
end
-- '!s:' .. ten digits .. ':' .. name (lib_waits.lua signal_field): the
-- earliest is the least field; one not laid out so is no signal
-- (signal_name), which no wait takes and this leaves
local first = nil
for _, f in ipairs(fields) do
  if signal_name(f) == name and (not first or f < first) then first = f end
end
if not first then return remember({ STATUS.ok, s, 0, '' }) end
local seq = tonumber(first:sub(4, 13))
if ARGV[11] ~= '' and tonumber(ARGV[11]) ~= seq then return remember({ STATUS.ok, s, -seq, '' }) end
local payload = redis.call('HGET', sk, first)
redis.call('HDEL', sk, first)
return remember({ STATUS.ok, s, seq, payload })
