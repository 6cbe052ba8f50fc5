-- renew.lua: extend every lease a worker holds in one partition.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of leases n; then n groups of 4 fields:
--   id, lease ID, fence, lease duration (ms)
-- Returns: flat list of lease ID, state for each lease that is no longer
--   held (state is the job's current state, or '' when the job is gone).
--   A lease whose expiry has passed is no longer held, though no
--   maintenance pass has reaped its job yet (state 'running'): a worker
--   that stalled past its lease has its writes rejected (SPEC 7), and a
--   renewal must not revive a lease another worker's reaper may take at
--   any moment. Costs one ZSCORE per lease. A held lease missing from
--   run (corrupt data: nothing but a hand removes it) is held, as the
--   other writes of an attempt take it, and the renewal puts its entry
--   back, so that the reaper finds the job if its worker dies.
-- Transitions: none; only the lease expiry (score in run) moves.
do local refused = model_error() if refused then return refused end end
local n = tonumber(ARGV[9])
local lost = {}
local fs, fl, ff = F.state, F.lease_id, F.fence -- read per lease, looked up once
for i = 0, n - 1 do
  local b = 10 + i * 4
  local id = ARGV[b]
  local h = fields(job_key(id), fs, fl, ff)
  h[1] = state_of(h[1])
  local held = h[1] == 'running' and h[2] == ARGV[b + 1] and h[3] == ARGV[b + 2]
  if held then
    -- pcall, call_aside only when it fails: a run index of another type
    -- is set aside, not raised on after the leases renewed before
    local expiry = redis.pcall('ZSCORE', K_RUN, id)
    if type(expiry) == 'table' then expiry = call_aside('ZSCORE', K_RUN, nil, id) end
    expiry = tonumber(expiry)
    held = expiry == nil or expiry > NOW -- the reaper takes a score <= NOW
  end
  if held then
    local at = num_s(NOW + tonumber(ARGV[b + 3]))
    if type(redis.pcall('ZADD', K_RUN, at, id)) == 'table' then call_aside('ZADD', K_RUN, nil, at, id) end
  else
    lost[#lost + 1] = ARGV[b + 1]
    lost[#lost + 1] = h[1] or STATUS.none
  end
end
return lost
