-- relay.lua: apply one effect relayed from another slot's outbox, exactly
-- once. Its keys live in the target's slot, not in a partition's: it uses
-- only the prelude's effects (lib_effects.lua), which need no partition.
--
-- KEYS[1] the effect's dedup marker (in the same slot as KEYS[2])
-- KEYS[2] the key the effect writes
-- ARGV[1] how long to remember the marker (ms)
-- ARGV[2] op; ARGV[3...] its arguments
-- Returns: 'applied', 'duplicate' (applied before: nothing written), or
--   'error: ' .. message (it cannot apply: nothing written). The effect is
--   validated whole before it is written, as in a commit, so the script
--   never fails part way.
-- Transitions: none.
if redis.call('EXISTS', KEYS[1]) == 1 then return STATUS.duplicate end
local args = {}
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
local fx = { { op = ARGV[2], key = KEYS[2], args = args } }
local bad = check_effects(fx)
if bad then return STATUS.error .. bad end
apply_effects(fx)
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return STATUS.applied
