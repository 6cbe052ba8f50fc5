-- lib_offer.lua: a pick-up in one hop (docs/design/pickup-push.md).
--
-- A worker whose claim finds a partition dry may leave an offer in the
-- partition's idle flag (K_IDLE; '1' is the flag without one):
--   "<until> <k> <made> <lease ms> <nonce> <channel> <m> [<kind> <ms>]... <worker>"
-- it takes up to k jobs pushed to its own pub/sub channel until the store
-- time until (ms; made is when the claim made it), leased for lease ms (m
-- kinds with leases of their own)
-- under lease IDs worker .. '/' .. NOW_S .. '/' .. nonce .. '.p' .. k ..
-- BARE_LEASE (lease_of, lib.lua), k counting down, to worker (the
-- rest of the string: an identity may hold spaces). Go builds the part
-- after until (store.ClaimRequest.Offer), with no space in a channel,
-- nonce or kind.
-- While the flag is set the partition's lists have stayed empty since the
-- claim found them so: whatever lists a job deletes it (wake in
-- lib_batch.lua), offer and all. An enqueue that finds a valid offer
-- leases a plain job (its payload in its hash) to the worker as its claim
-- would have (running, the fence 1, a lease, the run index), and the call
-- publishes the jobs it leased so in one message on the channel, as a
-- claim answers its jobs (claim.lua), after a line naming the partition
-- and the offer: "<partition> <made> <wake channel>\n" (the worker
-- reckons the lease from its claim's send time and the store time gone
-- from the offer's making to the push).
-- The channel must have a subscriber (PUBSUB NUMSUB, once per call): with
-- none (the worker stopped or died) the job is listed as it would be
-- without the offer, which goes. A message lost on its way (the worker's
-- connection dropped with it) is a lease its worker never heard of: the
-- reaper takes the job when the lease runs out, as after a crash. The
-- flag stays set after a push, its k one less, so the next enqueue may
-- push too; at k = 0 it is the bare flag again.

-- OFFER_HEAD bounds the part of the flag offer_open matches its pattern
-- against (bytes).
local OFFER_HEAD = 65536

-- offer_open says whether this call holds an offer with jobs left to
-- take, reading it from the flag at its first use (OFFER, lib_batch.lua).
-- The flag's value is no offer when spent, out of time, or not one
-- (corrupt data, another type); nor is one whose worker is not subscribed
-- to its channel: NUMSUB counts the channel's own subscribers, where
-- PUBLISH would count a pattern's too (a tool's PSUBSCRIBE *). OFFER
-- holds: made, k, lease, kinds (kind -> lease ms), nonce, chan, worker,
-- head and tail (the text before and after k, to write it back).
local function offer_open()
  if OFFER == nil then
    OFFER = false
    -- read, not taken (GETDEL): a write before the call's other checks,
    -- which a later raise would leave done, the idle worker unwoken
    local v = redis.pcall('GET', K_IDLE)
    if not v then ABSENT = true end -- none: no wake-up asked for
    if type(v) ~= 'string' or v == '1' then return false end -- or another type
    -- the seven fields before the kinds, each up to a space: the numbers
    -- digits only (the worker reads made back; tonumber would take 1e13
    -- or 0x10, corrupt data), nonce and channel anything else; one match
    -- costs an enqueue that pushes less than splitting them one by one
    -- (in the flag's first OFFER_HEAD bytes, where Sluice's seven fields
    -- always are: miniredis's matcher recurses per character, and a
    -- flag of megabytes, corrupt data, would overflow its stack)
    local lead = #v > OFFER_HEAD and string.sub(v, 1, OFFER_HEAD) or v
    local t = { string.match(lead, '^(%d+) (%d+) (%d+) (%d+) ([^ ]*) ([^ ]*) (%d+) ()') }
    if not t[1] then return false end
    local pos = t[8]
    local till, k, lease, m = count_of(t[1]), count_of(t[2]), count_of(t[4]), count_of(t[7])
    if not (till and k and lease and m) or till <= NOW or k < 1 or lease < 1 then return false end
    local kinds = {}
    for _ = 1, m do
      local s1 = string.find(v, ' ', pos, true)
      local s2 = s1 and string.find(v, ' ', s1 + 1, true)
      if not s2 then return false end
      local ms = count_of(string.sub(v, s1 + 1, s2 - 1))
      if not ms or ms < 1 then return false end
      kinds[string.sub(v, pos, s1 - 1)] = ms
      pos = s2 + 1
    end
    local worker = string.sub(v, pos)
    -- pcall: a channel the caller's Redis user may not use is no offer
    -- the worker's channel is its namespace's (keys.PushChannel), where
    -- the wake channel is (CHAN, <ns>:wake:<queue>): one a Redis user
    -- confined to the namespace may publish on
    local w = string.find(CHAN, ':wake:', 1, true)
    local ns = w and string.sub(CHAN, 1, w) .. 'push:'
    if worker == '' or not ns or string.sub(t[6], 1, #ns) ~= ns then return false end
    local subs = redis.pcall('PUBSUB', 'NUMSUB', t[6])
    if type(subs) ~= 'table' or subs.err or subs[2] == 0 then return false end
    OFFER = { made = t[3], k = k, lease = lease, kinds = kinds, nonce = t[5], chan = t[6], worker = worker,
      head = t[1] .. ' ', tail = string.sub(v, #t[1] + #t[2] + 2) }
  end
  return OFFER and OFFER.k > 0
end

-- offer_text is the flag's value for an offer of up to k jobs (k >= 1)
-- for ttl ms, or until due ms from now when something scheduled comes due
-- sooner (a claim's next_due; below 0: nothing is): body is the rest as
-- Go sent it (see the header).
local function offer_text(k, ttl, due, body)
  local d = count_of(ttl) or 0
  if due >= 0 then d = math.min(d, due) end
  return num_s(NOW + d) .. ' ' .. num_s(k) .. ' ' .. NOW_S .. ' ' .. body
end

-- OUT holds the jobs this call leases to the offer, as a claim answers
-- them, for push_sent to publish in one message (their order kept: a
-- worker that hands them back keeps it too, runtime/push.go); WRITES
-- their IDs, lease IDs and expiries. Nothing of them is written
-- before push_sent has published them: a raise earlier in the call leaves
-- no job leased and unannounced.
local OUT, WRITES = {}, {}

-- push_job leases job id (kind, its hash's fields f as an enqueue
-- writes them, its payload among them) to the offer's worker, for
-- push_sent to publish and write. Only once offer_open said yes, and not
-- in a paused partition (the caller checks).
local function push_job(id, kind, f)
  local o = OFFER
  -- a pushed job is plain, its payload in its hash (enqueue.lua)
  local lease = o.worker .. '/' .. NOW_S .. '/' .. o.nonce .. '.p' .. num_s(o.k) .. BARE_LEASE
  local expiry = NOW + (o.kinds[kind] or o.lease)
  OUT[#OUT + 1] = { id, lease, expiry, 1, {}, f, false }
  WRITES[#WRITES + 1] = { id, lease, expiry }
  if #OUT == 1 then OUT.chan, OUT.head = o.chan, PART .. ' ' .. o.made .. ' ' .. CHAN .. '\n' end
  o.k = o.k - 1
  PUSHED = PUSHED + 1
end

-- pending_fields is the field map of job id when this call leased it to
-- the offer and push_sent has not written it yet, else nil: a second job
-- of the call under its ID must find it as written.
local function pending_fields(id)
  for i, w in ipairs(WRITES) do
    if w[1] == id then
      local f, h = OUT[i][6], {}
      for k = 1, #f, 2 do h[f[k]] = f[k + 1] end
      return h
    end
  end
end

-- push_sent publishes the jobs this call leased to the offer, in one
-- message, then writes them leased, and says whether it listed them
-- instead: when the PUBLISH is refused (the caller's Redis user may not
-- publish on the channel) they go to the front of list 0, in their order
-- (they came before any job the call listed; the lists were empty), and
-- the offer is given up. Its worker's subscription was counted
-- (offer_open) in this same call: it hears the message, unless its
-- connection drops with the message in it (the reaper then takes the
-- leases back when they run out).
local function push_sent()
  if #OUT == 0 then return false end
  local chan, head = OUT.chan, OUT.head
  OUT.chan, OUT.head = nil, nil
  local heard = redis.pcall('PUBLISH', chan, head .. pack_value(OUT))
  local ok = type(heard) == 'number' and heard > 0
  for i, w in ipairs(WRITES) do
    local f = OUT[i][6]
    if ok then
      f[4] = SCODE.running
      f[#f + 1], f[#f + 2] = F.fence, '1'
      f[#f + 1], f[#f + 2] = F.lease_id, w[2] -- its holder and start in it
      lease_later(num_s(w[3]), w[1])
    end
    redis.call('HSET', job_key(w[1]), unpack(f))
    count(nil, ok and 'running' or 'available')
  end
  if ok then return false end
  for i = #WRITES, 1, -1 do redis.call('LPUSH', avail_key(0), WRITES[i][1]) end
  OFFER, PUSHED = false, 0
  return true
end

-- offer_kept writes back the offer this call pushed from, k one less per
-- push (the bare flag once spent); the caller calls it when it listed
-- nothing (else wake deleted the flag).
local function offer_kept()
  if PUSHED == 0 or not OFFER then return end
  if OFFER.k < 1 then
    redis.call('SET', K_IDLE, '1')
  else
    redis.call('SET', K_IDLE, OFFER.head .. num_s(OFFER.k) .. OFFER.tail)
  end
end
