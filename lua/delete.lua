-- delete.lua: an operator deletes one job that is not running, with every
-- key it owns (hash, errors, step checkpoints, children's results).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] the job's ID in the partition
-- Returns: { status, state }
--   'ok', previous state     the job is gone
--   'missing', ''            no such job
--   'running', 'running'     refused: cancel it first
-- Transitions: available|scheduled|retryable|completed|archived|
--   quarantined|cancelled -> (deleted). An available job leaves its list,
--   a ready list or a wait list (lib_limits.lua unlist), and passes its
--   concurrency key's turn on (lib_admin.lua remove_job). A job deleted
--   before it finished frees its unique key and tells its parent, if any,
--   that it ended as 'cancelled', so the parent is not left waiting.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id = ARGV[9]
local jk = job_key(id)
local h = redis.call('HMGET', jk, F.state, F.unique)
local s = state_of(h[1])
if not s then return { STATUS.missing, STATUS.none } end
if s == 'running' then return { STATUS.running, s } end
remove_job(jk, id, s, h[2])
flush()
return remember({ STATUS.ok, s })
