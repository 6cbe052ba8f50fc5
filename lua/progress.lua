-- progress.lua: record what running attempts report they are doing
-- (runtime ReportProgress), for operators.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of reports n; then n groups of 5 fields:
--   job ID in the partition, lease ID, fence, percent done (0..100),
--   free-form tracking state
-- Returns: one entry per report: 1 when written, 0 when the attempt no
--   longer holds the job (nothing written).
-- Transitions: none. Sets the job's 'gp' (percent), 'gs' (state), 'gt'
-- (store time of the report) and 'gf' (the reporting attempt's fence).
do local refused = model_error() if refused then return refused end end
local n = tonumber(ARGV[9])
local out = {}
-- the fields written per report, looked up once
local fp, fs, ft, ff = F.track_percent, F.track_state, F.track_at, F.track_fence
local lapsed = lapsed_among(function()
  local ids = {}
  for i = 0, n - 1 do ids[i + 1] = ARGV[10 + i * 5] end
  return ids
end)
for i = 0, n - 1 do
  local b = 10 + i * 5
  local jk = job_key(ARGV[b])
  if holds(jk, ARGV[b + 1], ARGV[b + 2], lapsed[ARGV[b]]) then
    redis.call('HSET', jk, fp, ARGV[b + 3], fs, ARGV[b + 4], ft, NOW_S, ff, ARGV[b + 2])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
