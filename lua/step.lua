-- step.lua: checkpoint one durable step of a running attempt, applying the
-- step's effects in the same atomic call.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]  job ID in the partition
-- ARGV[10] lease ID of the attempt
-- ARGV[11] fence of the attempt
-- ARGV[12] step field (the step name, or 'cursor:' .. name for a cursor)
-- ARGV[13] the checkpoint record (opaque bytes)
-- ARGV[14] mode: 'once' (a step completes once: an existing checkpoint is
--          kept) or 'cursor' (the record replaces the previous one)
-- ARGV[15...] effects, as lib.lua's read_effects describes
-- Returns: { status, detail }:
--   'ok', outbox entries written
--   'stale'         the attempt no longer holds the job: nothing written
--   'exists'        the step was already checkpointed: nothing written
--   'effect_error', message   an effect cannot apply: nothing written
-- Transitions: none. Records progress on the job ('pt' time, 'cs' step)
-- and that it has checkpoints ('sx').
local id = ARGV[9]
local jk = job_key(id)
if not holds(jk, ARGV[10], ARGV[11]) then return { 'stale', 0 } end
local sk = steps_key(id)
if ARGV[14] == 'once' and redis.call('HEXISTS', sk, ARGV[12]) == 1 then return { 'exists', 0 } end
local fx = read_effects(15)
local bad = check_effects(fx)
if bad then return { 'effect_error', bad } end
local outboxed = apply_effects(fx)
redis.call('HSET', sk, ARGV[12], ARGV[13])
redis.call('HSET', jk, 'pt', NOW, 'cs', ARGV[12], 'sx', 1)
return { 'ok', outboxed }
