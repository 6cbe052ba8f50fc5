-- unsignal.lua: an operator discards the signals of one name sent to a
-- job and not yet taken (admin.Client.DiscardSignals). A signal whose
-- payload its wait cannot decode parks the job (bad_signal) again at
-- every redrive while it is kept: discarded, a redriven job waits for
-- the next one.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  the job's ID in the partition
-- ARGV[10] the signals' name
-- Returns: { status, state, n }
--   'ok', state, n            n kept signals of that name discarded (0:
--                             none was kept)
--   'missing', '', 0          no such job
--   'running', 'running', 0   refused: its attempt may be taking one
--   'final', 'completed', 0   refused: a completed job never waits again
-- Transitions: none.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id, name = ARGV[9], ARGV[10]
local s = state_of(redis.call('HGET', job_key(id), F.state))
if not s then return remember({ STATUS.missing, STATUS.none, 0 }) end
if s == 'running' then return remember({ STATUS.running, s, 0 }) end
if s == 'completed' then return remember({ STATUS.final, s, 0 }) end
-- a checkpoints key that holds no hash (corrupt data) holds no signal
local fields = redis.pcall('HKEYS', steps_key(id))
local gone = {}
if type(fields) == 'table' and not fields.err then
  for _, f in ipairs(fields) do
    -- '!s:' .. ten digits .. ':' .. name (lib_waits.lua signal_field)
    if f:sub(1, 3) == SIGNAL_PREFIX and f:sub(15) == name then gone[#gone + 1] = f end
  end
end
for i = 1, #gone, 1000 do
  redis.call('HDEL', steps_key(id), unpack(gone, i, math.min(i + 999, #gone)))
end
return remember({ STATUS.ok, s, #gone })
