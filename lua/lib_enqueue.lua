-- lib_enqueue.lua: the prelude's part of enqueue.lua: the defaults of a
-- job's optional fields, the groups they are written in, and what a
-- duplicate of a unique job does. Definitions here are made once, when
-- the function library loads, not on every call as the script's own
-- top level is (they cost a single enqueue about 4% of its Redis time).

-- PLAIN holds the 24 optional fields at their defaults, in their order.
local PLAIN = {
  '0', '0', DEFAULT_MAX_ATTEMPTS, '0', '0', '0', '',
  '', '', '', '',
  '', '0', '', '0', '0', '0',
  '', '0', '',
  '', '', '0',
  '',
}
-- the optional fields written together, each group when its first is set
local PARENT = { F.parent, F.parent_prefix, F.parent_step, F.parent_local }
local CONCURRENCY = { F.concurrency_key, F.concurrency_limit }
local STICKY = { F.sticky_worker, F.sticky_mode, F.sticky_delay }

-- unique_holder returns the ID of the job holding unique key uk, if one
-- does, and whether the key holds no string (corrupt data: the job is
-- refused, nothing written). A key with a TTL is held for its TTL, by a
-- job that finished and was deleted since too (completed jobs discarded,
-- or swept by retention before the TTL ran out); one without, while its
-- job has not finished (finish frees the key; a job archived 'malformed',
-- whose unique key could not be read then, may still be named by it). A
-- job whose key holds no hash (corrupt data) never runs as itself again,
-- and holds nothing.
local function unique_holder(uk)
  local holder = redis.pcall('GET', unique_key(uk))
  if type(holder) == 'table' then return nil, true end
  if not holder then return nil end
  local h, corrupt = fields(job_key(holder), F.state)
  if not corrupt and h[1] and not TERMINAL[state_of(h[1])] or redis.call('PTTL', unique_key(uk)) > 0 then
    return holder
  end
  return nil
end

-- corrupt_limits says whether a key the job's options write besides its
-- hash holds another type than Sluice wrote: its rate class's bucket or
-- its quarantine hold's list. Checked before the job's first write, as a
-- script that raises keeps the writes made for the call's earlier jobs.
local function corrupt_limits(class, fingerprint)
  return (class ~= '' and not DEFINED[class] and type(redis.pcall('HLEN', rate_key(class))) ~= 'number')
    or (fingerprint ~= '' and type(redis.pcall('LLEN', held_key(fingerprint))) ~= 'number')
end

-- quarantined_twin is the job that holds copies of fingerprint while it is
-- quarantined (lib_lifecycle.lua free_held), or false.
local function quarantined_twin(fingerprint)
  local q = redis.pcall('GET', hold_key(fingerprint)) -- pcall: corrupt data names no job
  if type(q) == 'string' and state_of(fields(job_key(q), F.state)[1]) == 'quarantined' then return q end
  return false
end

-- on_duplicate applies a duplicate's policy to the holder, if it has not
-- started and is of the duplicate's kind. A holder that ran (a claim
-- raised its fence: a snoozed job, a suspended workflow, one redriven)
-- keeps its arguments and run time: its steps were checkpointed with
-- them, its timers set from them; so does a holder of another kind,
-- which could not read the duplicate's arguments. A debounced holder that was available leaves its list, a
-- ready list or its concurrency key's or rate class's wait list
-- (lib_limits.lua unlist), and, when its key let it go already, passes
-- the key's turn on to the next waiter (cc_release with a pass), which
-- would otherwise wait for the holder's new run time. A replace gives the
-- holder the duplicate's quarantine-hold fingerprint (fingerprint; ''
-- none) with its arguments: once quarantined, it holds copies of the
-- arguments it ran, not of those it no longer has; and while a twin of
-- those arguments is quarantined already, the holder is held behind it,
-- as a job enqueued with them would be (enqueue.lua), leaving its list
-- and passing its key's turn on as a debounce does. The caller has
-- checked that the fingerprint's held list is a list (corrupt_limits).
-- The holder is the job of unique key uk only while it holds it: a key
-- with a TTL outlives its job, and a job enqueued under that ID since
-- is left as it is.
local function on_duplicate(holder, policy, payload, due, kind, fingerprint, uk)
  if policy ~= 'replace' and policy ~= 'debounce' then return end
  local jk = job_key(holder)
  local h = fields(jk, F.state, F.held_by, F.concurrency_key, F.concurrency_limit, F.kind, F.fence, F.has_steps,
    F.run_at, F.unique, F.deadline)
  local s = state_of(h[1])
  if s ~= 'available' and s ~= 'scheduled' then return end
  if h[9] ~= uk then return end -- another job under the ID (see above)
  if h[2] then return end -- held behind a quarantined twin: it stays held
  -- count_of: a fence that is no count (corrupt data) is taken as run
  if h[5] ~= kind or (count_of(h[6]) or 1) > 0 or h[7] then return end
  -- due_at makes the holder scheduled at at: off its list, its key's turn
  -- passed on when that let it go
  local function due_at(at)
    local b, was = sched_bucket(at), s == 'scheduled' and tonumber(h[8])
    -- (not when it is in sched: its bucket came due by a clock since
    -- gone back, and its entry there is gone)
    if b and was and was > -math.huge and was < math.huge and sched_bucket(was) == b
        and redis.pcall('ZSCORE', K_SCHED, holder) == false then
      -- its entry in that bucket of later jobs stands for the new due
      -- time too: a second one would list it twice there (a delete's dry
      -- run counted it twice)
      redis.call('HSET', jk, F.run_at, at)
      return
    end
    call_aside('ZREM', K_SCHED, nil, holder)
    if s == 'available' then unlist(jk, holder) end
    -- off to another bucket, or to sched: its old bucket's entry stays
    if s == 'scheduled' then note_left(jk, h[8]) end
    schedule_at(jk, holder, s, 'scheduled', at)
    if s == 'available' and h[3] then cc_release(h[3], h[4] or 1) end
  end
  if policy == 'replace' then
    local stale = chunk_fields(field_map(jk) or {}, F.payload)
    stale[#stale + 1], stale[#stale + 2] = F.payload, F.payload_body
    redis.call('HDEL', jk, unpack(stale))
    redis.call('DEL', body_key(holder))
    local f = {}
    put_payload(f, holder, payload)
    local twin = false
    if fingerprint ~= '' then
      f[#f + 1], f[#f + 2] = F.hold_fingerprint, fingerprint
      twin = quarantined_twin(fingerprint)
      if twin then f[#f + 1], f[#f + 2] = F.held_by, twin end
    else
      redis.call('HDEL', jk, F.hold_fingerprint)
    end
    redis.call('HSET', jk, unpack(f))
    if twin then
      redis.call('RPUSH', held_key(fingerprint), holder)
      due_at(held_due(h[10])) -- its own deadline, if any, still ends it (held_due)
    end
  elseif policy == 'debounce' and due > NOW then
    -- never to or past its deadline: a claim would archive it unrun, the
    -- work of it and of its duplicates lost; it stays due when it was
    local dl = tonumber(h[10])
    if not (dl and due >= dl) then due_at(due) end
  end
end
