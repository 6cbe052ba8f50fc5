-- maintain.lua: a worker's maintenance pass over a partition, in one call:
-- reclaim expired leases, promote due jobs, delete finished jobs past their
-- retention (lib_lifecycle.lua reap, promote and sweep), in that order. A limit of 0
-- skips its part.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]:  the most jobs to reap
-- ARGV[10]: the most jobs to promote
-- ARGV[11]: the most jobs to delete per terminal state
-- ARGV[12]: the crash delay (ms) of a reaped job's first crash (lib_lifecycle.lua
--   crash; 0: available at once)
-- ARGV[13...]: absent, or the workers whose pin lists a scan found
--   (store.IndexPinLists, before a listing of available jobs, once per
--   partition whose index of pin lists,
--   PIN_WORKERS, is not marked complete: pin lists made by an earlier
--   release, before the index, which a listing would not find): each
--   whose list exists is indexed, and the index is marked complete with
--   the member '' (no worker ID is empty; listings pass over it, and no
--   pin_left drops it). ARGV[13] '' alone: the scan found none.
-- Returns: { reaped, promoted, deleted }: reaped is a flat list of id, new
--   state, previous holder per reaped job; promoted and deleted are counts.
-- Transitions: running -> retryable | available | quarantined
--   ('crash_limit'; reap: crash_attempt+1, retried after the crash delay,
--   or quarantined at the crash limit), running -> archived ('malformed':
--   a crash counter that cannot be counted, a job key that holds no job
--   hash, or a state field that names no state: its concurrency slot is
--   freed, and when the job cannot say which key it held the partition's
--   counts are recounted, lib_lifecycle.lua cc_recount);
--   scheduled|retryable -> available (promote), scheduled -> archived
--   ('malformed': an entry whose job's state field names no state);
--   completed|archived|
--   quarantined|cancelled -> (deleted) with the job hash, its error list,
--   its payload key and its step checkpoints (sweep).
-- A sched or later zset, or any other key the jobs share, that holds
-- another type (corrupt data) is set aside under x:k:<key> and started anew
-- (lib_batch.lua call_aside).
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
-- promote meets the sched and later zsets after the reap's writes: one
-- that holds another type (corrupt data) is set aside here, before any
-- write, as the calls that write other keys jobs share set those aside
-- (lib_batch.lua call_aside). Two reads per pass, not per job: a claim,
-- on the hot path, does not make them; it sets a damaged sched aside
-- where it meets it (promote), and fails on a damaged later without
-- writing, at its first read of it.
call_aside('ZCARD', K_SCHED)
call_aside('ZCARD', K_LATER)
-- (before the pass: a job the reap or promote pins indexes its worker as
-- any push does; ZADD of one indexed is a no-op, a re-sent call's too)
-- (the call ID is the last ARGV, lib_replay.lua: the workers are those
-- before it, none in a worker's pass)
for i = 13, #ARGV - 1 do
  local w = ARGV[i]
  if w ~= '' and redis.call('EXISTS', pin_key(w)) == 1 then call_aside('ZADD', PIN_WORKERS, nil, 0, w) end
end
if #ARGV > 13 then call_aside('ZADD', PIN_WORKERS, nil, 0, '') end
local reaped = reap(tonumber(ARGV[9]), tonumber(ARGV[12]))
local promoted = promote(ARGV[10])
local deleted = sweep(tonumber(ARGV[11]))
flush()
return remember({ reaped, promoted, deleted })
