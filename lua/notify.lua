-- notify.lua: deliver child-finished notifications to parents in this
-- partition (relayed from other partitions' outboxes).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of notifications n; then n groups of 7 fields:
--   parent job ID, spawn step, child job ID, child state ('' for a
--   withdrawal of the child's end: the child was redriven, lib_lifecycle.lua
--   withdraw), result or error, the notification's mark (the child's
--   queue, partition and outbox entry: keys.Partition.NoteMark), the
--   child's count of redrives ('' for an end told by an older release: 0)
-- Returns: the number of notifications processed.
-- Transitions: scheduled -> available for a parent whose wait is over.
-- Each notification is delivered once: its mark is kept for RELAY_KEEP.
-- Two workers relay one outbox without a lock, so one may read an entry,
-- stall while the other relays it and a later end of the same child
-- (redriven since), and deliver it again: without the mark that older
-- end would overwrite the newer on the parent (deliver records a child's
-- latest end). A child already recorded is not counted again either way.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local n = tonumber(ARGV[9])
for i = 0, n - 1 do
  local b = 10 + i * 7
  if redis.call('SET', notemark_key(ARGV[b + 5]), '1', 'NX', 'PX', RELAY_KEEP) then
    if ARGV[b + 3] == '' then
      withdraw(ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 6])
    else
      deliver(ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 6])
    end
  end
end
flush()
return remember(n)
