-- notify.lua: deliver child-finished notifications to parents in this
-- partition (relayed from other partitions' outboxes).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of notifications n; then n groups of 5 fields:
--   parent job ID, spawn step, child job ID, child state, result or error
-- Returns: the number of notifications processed.
-- Transitions: scheduled -> available for a parent whose wait is over.
-- Delivery is idempotent: a child already recorded is not counted again.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local n = tonumber(ARGV[9])
for i = 0, n - 1 do
  local b = 10 + i * 5
  deliver(ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4])
end
flush()
return remember(n)
