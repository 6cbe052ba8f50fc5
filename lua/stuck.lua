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
-- that ignored its cancellation is settled without it), but the job must
-- still be its own: its lease ID is the attempt's (unique to one claim,
-- which a newer claim replaces, so a stale attempt never writes over the
-- evidence of a newer one; an operator's cancel raises the fence and
-- keeps the lease ID, and the evidence of the handler that ignored it is
-- what it is for). The reaper (and a worker giving a lease up: ack.lua
-- 'expire') deletes the lease ID of a lease that
-- expired (lib_lifecycle.lua), the lost-lease case the evidence is most
-- often about, and keeps it as F.orphan_lease: with no lease ID, a job
-- no longer running takes the evidence of the attempt of its fence and
-- of that orphan lease (none recorded: reaped by an older release, the
-- fence alone), so that a job deleted and enqueued again under its ID,
-- whose fences start over, does not take an old attempt's. Sets the
-- job's 'zc' case, 'zl' lease ID, 'zf' fence, 'zw' why, 'zs' since, 'zd'
-- store time of the report, 'zp' step, 'zk' cursor, 'zt' stack.
do local refused = model_error() if refused then return refused end end
local jk = job_key(ARGV[9])
local h = redis.call('HMGET', jk, F.lease_id, F.fence, F.state, F.orphan_lease)
if h[1] then
  if h[1] ~= ARGV[10] then return 0 end -- a newer claim's lease
elseif h[2] ~= ARGV[11] or state_of(h[3]) == 'running' or (h[4] and h[4] ~= ARGV[10]) then
  return 0 -- a newer claim, another incarnation's attempt, or no job
end
redis.call('HSET', jk, F.stuck_case, ARGV[12], F.stuck_lease_id, ARGV[10], F.stuck_fence, ARGV[11],
  F.stuck_why, ARGV[13], F.stuck_since, ARGV[14], F.stuck_at, NOW, F.stuck_step, ARGV[15],
  F.stuck_cursor, ARGV[16], F.stuck_stack, ARGV[17])
return 1
