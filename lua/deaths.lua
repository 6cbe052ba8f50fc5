-- deaths.lua: deliver the pending death reports of a partition at least
-- once (lib_lifecycle.lua finish keeps one per job that reached archived or
-- quarantined, in PFX .. 'dd', scored by when a sweep may take it).
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] mode, 'take' or 'done'.
-- 'take': ARGV[10] the most reports to take, ARGV[11] how long a taken
--   report is held for its taker (ms): reports due by now are due again
--   only after that, so two workers do not deliver one at the same time,
--   and one whose taker died is delivered again.
-- 'done': ARGV[10] n, then n groups of job ID, fence, redrive count
--   (F.redrives; either 0 when absent) and lease ID ('' for none): the
--   job's report, for which a death handler has run, is dropped if the job
--   still has that fence, count and lease ID (or is gone): a job redriven
--   and dead again since keeps its new report, also when a claim archived
--   it again without a new fence (a deadline, a sticky fallback: park), and
--   so does a job deleted and enqueued again under its ID (its fences
--   start over, its lease IDs are new).
-- Returns: 'take': per report, the job's ID and its hash (a count, then
--   flat HGETALL, a payload kept in its own key added as field 'p'); a
--   report whose job is gone is dropped, not returned. 'done': how many
--   reports were dropped.
-- A re-sent call answers what its first run did (lib_replay.lua).
-- Transitions: none.
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end

local out = {}
if ARGV[9] == 'take' then
  local ids = redis.call('ZRANGEBYSCORE', DEATHS, '-inf', NOW, 'LIMIT', 0, tonumber(ARGV[10]))
  local hold = NOW + tonumber(ARGV[11])
  for _, id in ipairs(ids) do
    -- pcall: a key that is not a job hash (corrupt data) must not make the
    -- script raise after the writes made for the reports before it
    local raw = redis.pcall('HGETALL', job_key(id))
    if raw.err or #raw == 0 then
      redis.call('ZREM', DEATHS, id) -- gone, or no job to report
    else
      redis.call('ZADD', DEATHS, hold, id)
      local body = redis.pcall('GET', body_key(id))
      if type(body) == 'string' then
        raw[#raw + 1], raw[#raw + 2] = F.payload, body
      end
      out[#out + 1] = id
      out[#out + 1] = #raw
      for k = 1, #raw do out[#out + 1] = raw[k] end
    end
  end
elseif ARGV[9] == 'done' then
  local n = tonumber(ARGV[10])
  local dropped = 0
  for i = 0, n - 1 do
    local b = 11 + 4 * i
    local id, fence, redrives, lease = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
    -- gone (no state), or no job hash: nothing left to report. A job never
    -- claimed has no fence field: fence 0
    local h, corrupt = fields(job_key(id), F.state, F.fence, F.redrives, F.lease_id)
    if corrupt or not h[1] or ((h[2] or '0') == fence and (h[3] or '0') == redrives and (h[4] or '') == lease) then
      dropped = dropped + redis.call('ZREM', DEATHS, id)
    end
  end
  return remember(dropped)
else
  return redis.error_reply('ERR sluice: unknown deaths mode ' .. tostring(ARGV[9]))
end
return remember(out)
