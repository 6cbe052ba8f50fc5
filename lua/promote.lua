-- promote.lua: make due scheduled and retryable jobs available.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: the most jobs to promote in this call.
-- Returns: { promoted, next_due } where next_due is the earliest remaining
--   due time (ms) or -1.
-- Transitions: scheduled|retryable -> available.
local promoted = promote(tonumber(ARGV[9]))
flush()
return { promoted, next_due() }
