-- renew.lua: extend every lease a worker holds in one partition.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9]: number of leases n; then n groups of 5 fields:
--   id, lease ID, fence, lease duration (ms), sequence number (see below)
-- Returns: flat list of lease ID, state for each lease that is no longer
--   held (state is the job's current state, or '' when the job is gone),
--   and of lease ID, STATUS.late for each renewal that moved nothing (see
--   below).
--   A lease whose expiry has passed is no longer held, though no
--   maintenance pass has reaped its job yet (state 'running'): a worker
--   that stalled past its lease has its writes rejected (SPEC 7), and a
--   renewal must not revive a lease another worker's reaper may take at
--   any moment. Costs one ZSCORE per lease. A held lease missing from
--   run (corrupt data: nothing but a hand removes it) is held, as the
--   other writes of an attempt take it, and the renewal puts its entry
--   back, so that the reaper finds the job if its worker dies.
-- Sequence numbers: a worker numbers the renewals of one attempt in the
-- order it sends them (its renewal loop's and ExtendLease's alike, from
-- 1; 0 for none), and Redis keeps the last it applied to the attempt
-- (F.renewal: the lease ID and its number). A renewal numbered as that
-- one is its re-send (go-redis sends a call again when its reply is
-- lost): it moves nothing, and answers the lease held, which the first
-- run renewed from no earlier than the worker sent it. One numbered lower
-- reached Redis after a later one (a call that timed out on its way, a
-- renewal beside an ExtendLease), and would set the lease to a duration
-- the worker has since changed, perhaps shorter than the one it reckons
-- with: it moves nothing and answers STATUS.late, from which the worker
-- reckons nothing (the lease ends as the later one set it).
-- Transitions: none; only the lease expiry (score in run) moves.
do local refused = model_error() if refused then return refused end end
local n = tonumber(ARGV[9])
local lost = {}
local fs, fl, ff, fr = F.state, F.lease_id, F.fence, F.renewal -- read per lease, looked up once
for i = 0, n - 1 do
  local b = 10 + i * 5
  local id = ARGV[b]
  local jk = job_key(id)
  local h = fields(jk, fs, fl, ff, fr)
  h[1] = state_of(h[1])
  local held = h[1] == 'running' and h[2] == ARGV[b + 1] and h[3] == ARGV[b + 2]
  -- seq: this renewal's number; last: the last applied to this attempt's
  -- lease (a mark of an earlier attempt, or none, is 0)
  local seq, last = count_of(ARGV[b + 4]) or 0, 0
  if h[4] and string.sub(h[4], 1, #ARGV[b + 1] + 1) == ARGV[b + 1] .. ' ' then
    last = count_of(string.sub(h[4], #ARGV[b + 1] + 2)) or 0
  end
  if held then
    -- pcall, call_aside only when it fails: a run index of another type
    -- is set aside, not raised on after the leases renewed before
    local expiry = redis.pcall('ZSCORE', K_RUN, id)
    if type(expiry) == 'table' then expiry = call_aside('ZSCORE', K_RUN, nil, id) end
    expiry = tonumber(expiry)
    held = expiry == nil or expiry > NOW -- the reaper takes a score <= NOW
  end
  if held and (seq == 0 or seq > last) then
    local at = num_s(NOW + tonumber(ARGV[b + 3]))
    -- with the anchor (lib_batch.lua), which a running index set aside
    -- above lacks
    if type(redis.pcall('ZADD', K_RUN, '+inf', RUN_ANCHOR, at, id)) == 'table' then
      call_aside('ZADD', K_RUN, nil, '+inf', RUN_ANCHOR, at, id)
    end
    if seq > 0 then redis.call('HSET', jk, fr, ARGV[b + 1] .. ' ' .. ARGV[b + 4]) end
  elseif held and seq < last then
    lost[#lost + 1] = ARGV[b + 1]
    lost[#lost + 1] = STATUS.late
  elseif not held then
    lost[#lost + 1] = ARGV[b + 1]
    lost[#lost + 1] = h[1] or STATUS.none
  end
end
return lost
