-- cancel.lua: an operator cancels one job.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  the job's ID in the partition
-- ARGV[10] the namespace's cancel channel (keys.CancelChannel)
-- ARGV[11], ARGV[12], ARGV[13] the job must have been created at or
--          after ARGV[11] and before ARGV[12] (ms), ARGV[13] the time its
--          generated ID carries, or '' '' '': any job of the ID
--          (lib_admin.lua other_job)
-- ARGV[14], ARGV[15] the job must have its fence ARGV[14] and its count
--         of redrives ARGV[15] (each '': any), as a tool showed it, or
--         not given: any (lib_admin.lua moved_on)
-- Returns: { status, state }
--   'ok', previous state     the job is now cancelled (reason 'operator')
--   'missing', ''            no such job
--   'final', state           the job is already in a terminal state
--   'changed ' .. field, state  refused: the job's fence or count of
--                            redrives is not ARGV[14] or ARGV[15]
--                            (field 'fence' or 'redrives'); nothing written
--   'conflict', created      refused: the job was created (ms) out of
--                            ARGV[11]..ARGV[12], another job; nothing written
--   A created-time field that is no whole number of ms (given ARGV[11])
--   fails the call with an error naming the job, nothing written.
-- Transitions: available|scheduled|retryable|running -> cancelled ('operator').
-- A running job's fence is incremented and its lease cleared, so every
-- later write of the attempt that held it is rejected as stale and its
-- next renewal reports the lease lost (with state 'cancelled'); its
-- concurrency slot is freed as an ack would, and the lease ID is published
-- on the cancel channel so its worker can cancel the handler at once. An
-- available job leaves its list, a ready list or the wait list of its
-- concurrency key or rate class (lib_limits.lua unlist), and when its
-- concurrency key has room the key's next waiter goes (lib_limits.lua
-- cc_release with a pass). A spawned job notifies its parent, as any job
-- reaching a terminal state does.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id = ARGV[9]
local jk = job_key(id)
local h = redis.call('HMGET', jk, F.state, F.lease_id, F.concurrency_key, F.concurrency_limit, F.run_at)
local s = state_of(h[1])
if not s then return { STATUS.missing, STATUS.none } end
do -- another job than the tool showed, or one that ran or was redriven since
  local refusal, keep = not_as_shown(jk, id, s, 11, 14)
  if refusal then return keep and remember(refusal) or refusal end
end
if TERMINAL[s] then return { STATUS.final, s } end
if s == 'running' then
  redis.call('HINCRBY', jk, F.fence, 1)
  clear_lease(id)
  if h[3] then cc_release(h[3]) end
  -- a pcall: a channel an ACL refuses must not raise after the writes (the
  -- moved fence stops the attempt's writes; its worker learns at its next)
  if h[2] then redis.pcall('PUBLISH', ARGV[10], h[2]) end
elseif s == 'scheduled' or s == 'retryable' then
  call_aside('ZREM', K_SCHED, nil, id)
  redis.call('HDEL', jk, F.wait_step, F.wait_count, F.wait_policy, F.wait_members, F.held_by) -- held no more
  note_left(jk, h[5]) -- redriven and put off again, it may come back to that bucket
elseif s == 'available' then
  unlist(jk, id)
  if h[3] then cc_release(h[3], h[4] or 1) end -- perhaps the waiter its key let go
end
finish(jk, id, s, 'cancelled', 'operator')
flush()
return remember({ STATUS.ok, s })
