-- live.lua: what a live dashboard shows of one partition, in one bounded
-- read (the web console's stream makes one such call per partition per
-- tick, whatever the number of open tabs).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV: the common header only.
-- Returns: { minute, stats, paused, finished, previous }: minute is the store's
--   current minute (ms / 60000); stats the partition's per-state counters
--   as a flat field, value list (HGETALL of stats); paused 1 when the
--   partition is paused, else 0; finished the current minute's counters
--   (HGETALL of its minute key: jobs finished per terminal state, and the
--   run-time buckets); previous the same of the minute before, which a
--   dashboard re-reads when the minute turns (it may have grown after its
--   last read).
-- Transitions: none.
do local refused = model_error() if refused then return refused end end
local minute = math.floor(NOW / 60000)
return {
  minute,
  redis.call('HGETALL', K_STATS),
  redis.call('EXISTS', PAUSED),
  redis.call('HGETALL', minute_key(minute)),
  redis.call('HGETALL', minute_key(minute - 1)),
}
