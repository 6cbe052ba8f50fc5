-- lib_admin.lua: the prelude's operator helpers: deleting one job as an
-- operator does (delete.lua, bulkdelete.lua), and resuming a scan of a
-- sorted set from a cursor (redrive.lua, bulkdelete.lua).

-- remove_job deletes job id, in state s (a name the caller read; never
-- 'running'), with every key it owns. uk is its unique key (F.unique), or
-- false. A terminal job leaves its terminal set. One that had not
-- finished leaves the scheduled set or its ready list (and passes its
-- concurrency key's turn on: lib_limits.lua cc_release), frees its unique
-- key, and tells its parent, if any, that it ended as 'cancelled', so the
-- parent is not left waiting. A quarantined job's held twins become due
-- (delete_job).
local function remove_job(jk, id, s, uk)
  if TERMINAL[s] then
    call_aside('ZREM', TERMINAL[s], nil, id)
  else
    if s == 'scheduled' or s == 'retryable' then call_aside('ZREM', K_SCHED, nil, id) end
    if s == 'available' then
      unlist(jk, id)
      local c = redis.call('HMGET', jk, F.concurrency_key, F.concurrency_limit)
      if c[1] then cc_release(c[1], c[2] or 1) end -- perhaps the waiter its key let go
    end
    notify_parent(jk, id, 'cancelled')
    if uk then
      local uq = unique_key(uk)
      if redis.pcall('GET', uq) == id then redis.call('DEL', uq) end -- pcall: a corrupt key holds no ID
    end
  end
  delete_job(id, false, s)
  count(s, nil)
end

-- score_num reads a score a reply gives: a number, or an infinity,
-- which not every engine's tonumber reads (miniredis answers '+Inf').
local function score_num(v)
  local x = tonumber(v)
  if x then return x elseif string.sub(v, 1, 1) == '-' then return -math.huge end
  return math.huge
end

-- scan_start is the rank in zset zk of the first entry after a scan's
-- cursor (score cscore, member cmember) in zset order, whether or not
-- the cursor's member is still there (a moved or deleted job left): the
-- member is put at the cursor's score for a moment, ranked, and put back
-- as it was. A cursor score of '' starts at the beginning.
local function scan_start(zk, cscore, cmember)
  if cscore == '' then return 0 end
  local old = redis.call('ZSCORE', zk, cmember)
  redis.call('ZADD', zk, cscore, cmember)
  local r = redis.call('ZRANK', zk, cmember)
  if old then
    redis.call('ZADD', zk, old, cmember)
    if score_num(old) <= score_num(cscore) then r = r + 1 end
  else
    redis.call('ZREM', zk, cmember)
  end
  return r
end

-- other_job checks that job id (key jk) is the one an operator's tool
-- showed, named by its creation time in ARGV[k], ARGV[k+1] and ARGV[k+2]
-- as unsignal.lua's ARGV[12..14]: created at or after ARGV[k] and before
-- ARGV[k+1] (ms), ARGV[k+2] the time its generated ID carries (its
-- creation time when it has no created-time field) or ''. Checked in the
-- call that acts, so that a job given the ID since the tool looked
-- (deleted and enqueued again) is not acted on. It returns nil when the
-- job is that one, or the call names none (ARGV[k] '', or a caller that
-- passes no such arguments: the call ID is the last ARGV); the creation
-- time (ms, 0 unknown) of the job under the ID when it is another; or
-- nil and an error reply when its created-time field is no whole number
-- of ms (written by hand: it tells no job, and is not compared).
local function other_job(jk, id, k)
  if #ARGV <= k + 2 or ARGV[k] == '' then return nil end
  local raw = redis.call('HGET', jk, F.created)
  -- 20 characters hold any ms time, and bound the match
  if raw and (#raw > 20 or not string.match(raw, '^%-?%d+$')) then
    return nil, redis.error_reply('WRONGTYPE sluice: job ' .. id .. ': its created-time field is no whole number of ms: nothing written')
  end
  local lo, hi = tonumber(ARGV[k]), tonumber(ARGV[k + 1])
  if not lo or not hi then
    return nil, redis.error_reply('ERR sluice: creation time range ' .. ARGV[k] .. ' to ' .. ARGV[k + 1] .. ' is no range of ms: nothing written')
  end
  local ct = tonumber(raw) or tonumber(ARGV[k + 2])
  if ct and ct >= lo and ct < hi then return nil end
  return ct or 0
end

-- moved_on checks that job id (key jk) is as an operator's tool showed
-- it, beyond its creation time (other_job): ARGV[k] its fence (the
-- attempts it began) and ARGV[k+1] the count of its redrives, each as the
-- tool showed it or '' (not checked). Checked in the call that acts, as
-- other_job is, so that a job that ran again or was redriven since the
-- tool looked (keeping its creation time) is not acted on again. It
-- returns nil when the job is as shown, or the call names nothing (a
-- caller that passes no such arguments: the call ID is the last ARGV);
-- 'fence' when it ran again, 'redrives' when it was redriven. A field
-- that is not there is 0, as Go reads it.
local function moved_on(jk, k)
  if #ARGV <= k + 1 or (ARGV[k] == '' and ARGV[k + 1] == '') then return nil end
  local h = redis.call('HMGET', jk, F.fence, F.redrives)
  if ARGV[k] ~= '' and (h[1] or '0') ~= ARGV[k] then return 'fence' end
  if ARGV[k + 1] ~= '' and (h[2] or '0') ~= ARGV[k + 1] then return 'redrives' end
  return nil
end

-- not_as_shown is the refusal of an operator's call on job id (key jk,
-- in state s) when the job is not the one its tool showed (other_job,
-- ARGV[c..c+2]) or not as it showed it (moved_on, ARGV[m..m+1]), and
-- whether the call remembers that answer (lib_replay.lua: a refusal is;
-- the error for a created-time field written by hand is not); nil when
-- the call may act.
local function not_as_shown(jk, id, s, c, m)
  local other, bad = other_job(jk, id, c)
  if bad then return bad, false end
  if other then return { STATUS.conflict, other }, true end
  local changed = moved_on(jk, m)
  if changed then return { STATUS.changed .. changed, s }, true end
  return nil
end
