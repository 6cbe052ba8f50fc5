-- stuck.lua: record the evidence of a stuck attempt on its job, for
-- operators (the runtime's stuck-job watch finds them).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  job ID in the partition
-- ARGV[10] lease ID and ARGV[11] fence of the stuck attempt
-- ARGV[12] case: 'ignored_stop' (told to stop, still running) or
--          'no_progress' (healthy lease, no progress)
-- ARGV[13] why (the cancellation cause, or how long without progress)
-- ARGV[14] since (ms): when it was told to stop, or its last progress
-- ARGV[15] current step, ARGV[16] its last cursor, ARGV[17] stack
-- Returns: 1 when written; 0 when the job no longer belongs to this
--   attempt (a newer attempt claimed it, or it was deleted): nothing
--   written.
-- Transitions: none. The attempt need not be running any more (a handler
-- that ignored its cancellation is settled without it), but the job's
-- lease ID and fence must still be its own: a claim replaces both, so a
-- stale attempt never writes over the evidence of a newer one. Sets the
-- job's 'zc' case, 'zl' lease ID, 'zf' fence, 'zw' why, 'zs' since, 'zd'
-- store time of the report, 'zp' step, 'zk' cursor, 'zt' stack.
local jk = job_key(ARGV[9])
local h = redis.call('HMGET', jk, 'l', 'f')
if h[1] ~= ARGV[10] or h[2] ~= ARGV[11] then return 0 end
redis.call('HSET', jk, 'zc', ARGV[12], 'zl', ARGV[10], 'zf', ARGV[11], 'zw', ARGV[13], 'zs', ARGV[14],
  'zd', NOW, 'zp', ARGV[15], 'zk', ARGV[16], 'zt', ARGV[17])
return 1
