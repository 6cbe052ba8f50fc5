-- step.lua: checkpoint durable steps of running attempts, applying each
-- step's effects in the same atomic call. Steps of several attempts share
-- a call; each is checked and applied on its own, all or nothing.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of checkpoints n
-- ARGV[10]: their fields, packed as one list of strings (lib_pack.lua
--   unpack_args), 6 per checkpoint:
--   job ID in the partition, lease ID, fence,
--   step field (the step name, or 'cursor:' .. name for a cursor),
--   the checkpoint record (opaque bytes),
--   mode: 'once' (a step completes once: an existing checkpoint is kept),
--   'once+' ('once' from a worker that knows the job is marked as having
--   checkpoints: its claim answered some, or the attempt committed one;
--   the mark, never taken off a job, is then not read),
--   'cursor' (the record replaces the previous one), or 'take:' .. the
--   field of a signal sent to the job (lib_waits.lua): 'once', and the
--   signal is deleted with the checkpoint; one gone already, or a field
--   that names no signal (a step's checkpoint, a timer), is an
--   effect_error
-- ARGV[11]: which checkpoints have effects: '' for none (most calls), else
--   one character per checkpoint, '1' where its effects follow, '0' where
--   it has none (an argument per checkpoint, '0' each, cost a plain step
--   about 1.9% more Redis instructions, parsing it included:
--   bench/RESULTS-3.md, 2026-12-07 19:40)
-- ARGV[12...]: the effects of each checkpoint marked '1', in order
--   (lib_effects.lua's read_effects)
-- Returns: 0 when every checkpoint answers 'ok', 0 (the common case: an
--   integer costs both sides less than a pair per step); else per
--   checkpoint a pair { status, detail }:
--   'ok', outbox entries written
--   'stale', 0      the attempt no longer holds the job: nothing written
--   'exists', 0     the step was already checkpointed with another
--                   record: nothing written. The same record, in either
--                   mode, is this commit's own sent again (a cursor's
--                   records differ by their sequence number): 'ok', 0,
--                   and nothing written, even once its call record is gone
--   'effect_error', message   an effect cannot apply: nothing written
--   'malformed', 0  the job's checkpoints key holds no hash: nothing written
-- A re-sent call answers what its first run did (lib_replay.lua).
-- Transitions: none. Marks the job as having checkpoints ('sx') at its
-- first commit; nothing else of the job hash is written (what the job last
-- checkpointed, and when, is read from its checkpoints: flow.JobInfo).
-- Per plain step, two commands: the identity check's HMGET and the HSETNX
-- that finds the step new.
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local n = tonumber(ARGV[9])
local out = {}
local plain = 0 -- checkpoints answered 'ok', 0
local A = unpack_args(ARGV[10])
-- FX[k]: the effects of the call's k-th checkpoint, when it has any, all
-- read before anything is written; the last ARGV entry is the call ID
local FX, FXMAP, b = {}, ARGV[11], 12
if FXMAP ~= '' then
  if #FXMAP ~= n or string.find(FXMAP, '[^01]') then
    return redis.error_reply('ERR sluice: malformed effects map: not one mark, 0 or 1, for each of ' .. n .. ' checkpoints')
  end
  for k = 1, n do
    if string.byte(FXMAP, k) == 49 then
      if b >= #ARGV or not tonumber(ARGV[b]) then b = -1 break end -- no count where one starts
      FX[k], b = read_effects(b)
    end
  end
end
if b ~= #ARGV then
  return redis.error_reply('ERR sluice: malformed effects: they do not end at the call ID, the last argument')
end
-- most checkpoints have no effects and answer 'ok', 0: one table each
-- serves them all
local NO_FX, OK0 = {}, { STATUS.ok, 0 }
local lapsed = lapsed_among(function()
  local ids = {}
  for i = 1, 6 * n, 6 do ids[#ids + 1] = A[i] end
  return ids
end)
-- The loop's body is written out where a helper would do (job_key,
-- steps_key, holds and its has-checkpoints flag, state_of): in Lua 5.1 a
-- function call per checkpoint costs about as much as what it wraps, and
-- steps are the commits a workflow makes most (8% of a plain commit's
-- instructions, BenchmarkStepCommits under scripts/redis-ir.sh).
local fst, fl, ff, fsx = F.state, F.lease_id, F.fence, F.has_steps
for i = 1, 6 * n, 6 do
  local id, lease, fence, field, record, mode = A[i], A[i + 1], A[i + 2], A[i + 3], A[i + 4], A[i + 5]
  local take, known = nil, false -- known: the worker knows the job is marked ('once+')
  if mode == 'once+' then
    known, mode = true, 'once'
  elseif mode ~= 'once' and mode:sub(1, 5) == 'take:' then
    take, mode = mode:sub(6), 'once'
  end
  local fx = FX[(i + 5) / 6] or NO_FX
  local jk = PFX .. 'j:' .. id -- job_key, written out
  local sk = PFX .. 's:' .. id -- steps_key, written out
  -- the identity check (holds), and whether the job is marked as having
  -- checkpoints (unless the worker knows), by one command; a pcall: a
  -- job key that holds no hash (corrupt data) is stale, this job's alone
  local h
  if known then h = redis.pcall('HMGET', jk, fst, fl, ff) else h = redis.pcall('HMGET', jk, fst, fl, ff, fsx) end
  local held, marked = false, false
  if not h.err then
    held = (SNAME[h[1]] or h[1]) == 'running' and h[2] == lease and h[3] == fence and not lapsed[id]
    marked = known or h[4]
  end
  if not held then
    out[#out + 1] = { STATUS.stale, 0 }
  elseif mode == 'once' and not take and #fx == 0 and redis.pcall('HSETNX', sk, field, record) == 1 then
    -- most commits: a new step with nothing else to check, written by the
    -- command that finds it new
    if not marked then redis.call('HSET', jk, fsx, '1') end
    out[#out + 1] = OK0
    plain = plain + 1
  else
    -- a pcall: a checkpoints key that holds no hash is this job's alone
    local prev = redis.pcall('HGET', sk, field)
    if type(prev) == 'table' then
      out[#out + 1] = { STATUS.malformed, 0 }
    elseif prev == record then
      out[#out + 1] = OK0 -- this very commit, sent again: applied before
      plain = plain + 1
    elseif prev and mode == 'once' then
      out[#out + 1] = { STATUS.exists, 0 }
    else
      local bad = check_effects(fx)
      if not bad and take and not signal_name(take) then
        -- a step's checkpoint, a timer: only a signal may be taken
        bad = 'take: ' .. take .. ' names no signal'
      elseif not bad and take and redis.call('HEXISTS', sk, take) == 0 then
        bad = 'the signal ' .. take .. ' was taken already'
      end
      if bad then
        out[#out + 1] = { STATUS.effect_error, bad }
      else
        local outboxed = apply_effects(fx, jk)
        if take then redis.call('HDEL', sk, take) end
        redis.call('HSET', sk, field, record)
        if not marked then redis.call('HSET', jk, fsx, '1') end
        out[#out + 1] = { STATUS.ok, outboxed }
        if outboxed == 0 then plain = plain + 1 end
      end
    end
  end
end
if plain == n then return remember(0) end
return remember(out)
