-- delete.lua: an operator deletes one job that is not running, with every
-- key it owns (hash, errors, step checkpoints, children's results).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] the job's ID in the partition
-- ARGV[10], ARGV[11], ARGV[12] the job must have been created at or after
--         ARGV[10] and before ARGV[11] (ms), ARGV[12] the time its
--         generated ID carries, or '' '' '': any job of the ID
--         (lib_admin.lua other_job)
-- ARGV[13], ARGV[14] the job must have its fence ARGV[13] and its count
--         of redrives ARGV[14] (each '': any), as a tool showed it, or
--         not given: any (lib_admin.lua moved_on)
-- Returns: { status, state }
--   'ok', previous state     the job is gone
--   'missing', ''            no such job
--   'running', 'running'     refused: cancel it first
--   'changed ' .. field, state  refused: the job's fence or count of
--                            redrives is not ARGV[13] or ARGV[14]
--                            (field 'fence' or 'redrives'); nothing written
--   'conflict', created      refused: the job was created (ms) out of
--                            ARGV[10]..ARGV[11], another job; nothing written
--   A created-time field that is no whole number of ms (given ARGV[10])
--   fails the call with an error naming the job, nothing written.
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
do -- another job than the tool showed, or one that ran or was redriven since
  local refusal, keep = not_as_shown(jk, id, s, 10, 13)
  if refusal then return keep and remember(refusal) or refusal end
end
if s == 'running' then return { STATUS.running, s } end
remove_job(jk, id, s, h[2])
flush()
return remember({ STATUS.ok, s })
