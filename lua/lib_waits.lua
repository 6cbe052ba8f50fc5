-- lib_waits.lua: durable timers and signals of suspended jobs (step.Sleep,
-- step.Select, step.WaitSignal; flow.Client.Signal). A job's timers live
-- in its hash, '!t:' .. name = its wake time (store ms), kept from the
-- first time the job waits on it (a sleeping workflow then needs no steps
-- hash); the signals sent to it in its steps hash (steps_key) beside its
-- checkpoints, '!s:' .. its sequence number (10 digits) .. ':' .. its
-- name = its payload, until a step takes it (step.lua mode 'take:') or an
-- operator discards it (unsignal.lua). The
-- claim that hands a job out hands out both hashes. F.awaits holds, while a job is suspended, the fence of the
-- attempt that suspended it and the names of the signals it waits for.

local TIMER_PREFIX, SIGNAL_PREFIX = '!t:', '!s:'
-- SIGNAL_KEY_PREFIX marks a signal's idempotency key as used (signal.lua).
local SIGNAL_KEY_PREFIX = '!i:'

local function signal_field(seq, name)
  return SIGNAL_PREFIX .. string.format('%010d', seq) .. ':' .. name
end

-- parse_waits reads an ack's 'suspend' spec, one wait per line: 't <name>
-- d <ms>' a timer due ms after now, 't <name> a <ms>' one due at ms,
-- 's <name>' a signal. It returns { timers = {{name, mode, ms}...},
-- signals = {name...} }, or nil for a malformed spec (the ack is refused
-- before anything is written).
local function parse_waits(spec)
  local w = { timers = {}, signals = {} }
  for line in spec:gmatch('[^\n]+') do
    local name, mode, ms = line:match('^t ([%w_./-]+) ([da]) (%d+)$')
    if name then
      w.timers[#w.timers + 1] = { name, mode, tonumber(ms) }
    else
      name = line:match('^s ([%w_./-]+)$')
      if not name then return nil end
      w.signals[#w.signals + 1] = name
    end
  end
  if #w.timers == 0 and #w.signals == 0 then return nil end
  return w
end

-- signal_name is the name of the signal kept in the steps hash field f,
-- or nil for a field that holds none: only a field laid out as
-- signal_field lays it out (ten digits) is a signal, as Go's
-- checkpoint.Signal reads it; one that is not (corrupt data) is no signal
-- to a wait in Go, which would suspend again at once if a suspension
-- here took it for one.
local function signal_name(f)
  if f:sub(1, 3) == SIGNAL_PREFIX and f:sub(14, 14) == ':' and #f > 14
      and string.find(f:sub(4, 13), '^%d%d%d%d%d%d%d%d%d%d$') then
    return f:sub(15)
  end
  return nil
end

-- has_signal reports whether the steps hash sk holds a signal whose name
-- is a key of names.
local function has_signal(sk, names)
  for _, f in ipairs(redis.call('HKEYS', sk)) do
    local name = signal_name(f)
    if name and names[name] then return true end
  end
  return false
end

-- awaited reports whether a job whose F.awaits is v and whose fence is
-- fence waits for the signal name: v must be its current suspension's.
local function awaited(v, fence, name)
  if not v then return false end
  local first = true
  for word in words(v) do
    if first then
      if word ~= fence then return false end
      first = false
    elseif word == name then
      return true
    end
  end
  return false
end

-- wake_of is the wake time a timer's field holds, v (a string, or false
-- for none): a whole number of ms as suspend writes it and as
-- the wait in Go reads it (checkpoint.Timer), else nil. A value tonumber
-- alone takes, but Go does not ('1e3', '5.5', '0x10', ' 5'), would be a
-- wake time here and none in Go: a job made available at once, whose wait
-- suspended again, for ever.
local function wake_of(v)
  if not v or #v > 18 or not string.find(v, '^%-?%d+$') then return nil end
  return tonumber(v)
end

-- suspend ends the running attempt of the job id (fence fence) whose
-- handler waits on w (parse_waits). Each timer keeps its first wake time;
-- one that holds no whole number (wake_of; corrupt data: 'x', or 'nan',
-- 'inf', '1e400', '1e3', which tonumber takes) is read as not set, and
-- set anew from this wait: a NaN due time would reach the index, whose
-- ZADD refuses it after the call's writes, and an infinite one would
-- never come due.
-- Returns the job's new state: available when a timer is due already or an
-- awaited signal is there, else scheduled at its earliest timer (FAR for
-- none) or its deadline when that is sooner: a job past its deadline is
-- archived by the claim that wakes it (deadline_exceeded), not left
-- waiting for ever on a signal that never comes. The ended lease has no
-- fields of its own to take off (its lease ID names its holder and start,
-- lease_of; the worker and lease-start fields an earlier release wrote
-- mean nothing once the job runs no more, and a claim reads them for a
-- lease ID of that release's shape alone).
local function suspend(jk, id, fence, w)
  local sk = steps_key(id)
  local due
  local older -- timers once lived in the steps hash: a job that slept then keeps its wake times
  for _, t in ipairs(w.timers) do
    local f = TIMER_PREFIX .. t[1]
    local at = wake_of(redis.call('HGET', jk, f))
    if not at then
      if older == nil then older = redis.call('HEXISTS', jk, F.has_steps) == 1 end
      if older then at = wake_of(redis.call('HGET', sk, f)) end
    end
    if not at then
      at = t[3]
      if t[2] == 'd' then at = NOW + at end
      redis.call('HSET', jk, f, at)
    end
    if not due or at < due then due = at end
  end
  local dl = tonumber(redis.call('HGET', jk, F.deadline)) -- not a finite number: none, as claim reads it
  if dl and dl > -math.huge and dl < math.huge and (not due or dl < due) then due = dl end
  -- the lease ID stays, as every other ending leaves it: the same ack
  -- sent again once its call record is gone is answered the job's state
  -- by it (ack.lua), not 'stale' (a lease reported lost)
  local names = {}
  for _, s in ipairs(w.signals) do names[s] = true end
  if (due and due <= NOW) or (#w.signals > 0 and has_signal(sk, names)) then
    make_available(jk, id, 'running', false)
    return 'available'
  end
  redis.call('HSET', jk, F.awaits, fence .. ' ' .. join(w.signals, ' '))
  schedule_at(jk, id, 'running', 'scheduled', due or FAR, dl or false) -- (the deadline read above)
  return 'scheduled'
end
