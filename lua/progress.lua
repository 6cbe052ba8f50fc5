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
-- lapsed: the jobs whose lease ran out by store time (holds), as step.lua
-- reads them
local lapsed = {}
do
  local head = redis.call('ZRANGEBYSCORE', K_RUN, '-inf', NOW_S, 'LIMIT', '0', '256')
  for _, id in ipairs(head) do lapsed[id] = true end
  if #head == 256 then
    local ids = {}
    for i = 0, n - 1 do ids[i + 1] = ARGV[10 + i * 5] end
    local ends = {}
    for c = 1, #ids, 1000 do -- unpack takes a few thousand at most
      for k, v in ipairs(redis.call('ZMSCORE', K_RUN, unpack(ids, c, math.min(c + 999, #ids)))) do ends[c + k - 1] = v end
    end
    for k, id in ipairs(ids) do lapsed[id] = (tonumber(ends[k]) or NOW + 1) <= NOW end
  end
end
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
