-- deadfx.lua: dead-letter outbox entries that cannot be relayed, and send
-- dead-lettered ones back to the outbox.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] mode, 'bury' or 'revive'.
-- 'bury': ARGV[10] n, then n groups of 6: outbox entry ID, the entry's
--   first ID (its own, or for a revived entry the 'o' it carries), the ID
--   in the partition of the job whose commit wrote it ('' when unknown),
--   the error, the entry's effect (its blob, '' for none), and the
--   creation time of that job the entry carries ('c', lib_effects.lua;
--   '-' for an entry of an older release, which carries none). Each entry
--   still in the outbox leaves it for the dead stream (K_OUTBOX .. ':dead': fields
--   'id', 'o', 'job', 'error', 'b', 'c'; 'o' kept through every bury and
--   revive, so that however often an entry goes round, the relay's age
--   check counts from its first ID), and the job records it, if it still
--   exists and is the one whose commit wrote it (its creation time is the
--   entry's, when the entry carries one: a job enqueued under the ID after
--   that one was deleted is another): 'xd' (dead effects) + 1 and an error
--   of class 'effect_dead'. An entry no longer in the outbox (another relay
--   handled it) is skipped.
-- 'revive': ARGV[10] n, then n dead entry IDs: each one's effect goes back
--   to the outbox as a new entry, relayed again (its dedup marker still
--   keeps it to once), and leaves the dead stream. The new entry carries
--   the first one's ID ('o'), so the relay's age check still counts from
--   it: one too old to tell whether it applied is never relayed, and is
--   refused here ('stale'), left dead, rather than sent round to be
--   buried again.
-- Returns: 'bury': the entries dead-lettered, as a flat list of outbox
--   entry ID, dead entry ID; 'revive': per ID, 'ok', 'missing' (no such
--   dead entry, or not an entry ID), 'empty' (it holds no effect: a
--   notification, or an entry that could not be read), 'stale' (its
--   first entry is past RELAY_MAX_AGE) or 'retired' (for every ID: a
--   shrink of the queue retired the partition, pause.lua 'r'; nothing
--   sent back). A paused flag of another type (corrupt data) fails a
--   revive with an error naming its key, nothing sent back.
-- A re-sent call answers what its first run did (lib_replay.lua).
-- Transitions: none.
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local DEAD = K_OUTBOX .. ':dead'
-- RELAY_MAX_AGE is the age past which the relay dead-letters an entry
-- (store relayMaxAge): a day short of how long an applied one is
-- remembered (RELAY_KEEP), so that one applied before is always known
local RELAY_MAX_AGE = RELAY_KEEP - 86400000
-- ID_MAX is a stream entry ID's greatest length (two numbers of 20 digits
-- and a '-'): a longer argument is none, and is not matched (a pattern
-- that repeats an item must not meet a value of any length:
-- lua/patterns_test.go)
local ID_MAX = 41
local mode, n = ARGV[9], tonumber(ARGV[10])
local out = {}
if mode == 'bury' then
  -- a dead stream of another type (corrupt data) is set aside before the
  -- first entry leaves the outbox (call_aside): its XADD would raise after
  -- that XDEL, the entry in neither stream
  call_aside('XLEN', DEAD)
  for i = 0, n - 1 do
    local b = 11 + 6 * i
    local entry, first, id, msg, blob, born = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
    if #entry <= ID_MAX and string.find(entry, '^%d+%-%d+$') and redis.call('XDEL', K_OUTBOX, entry) == 1 then
      if first == '' then first = entry end
      -- call_aside: a dead stream that takes no new entry is set aside,
      -- not raised on after the XDEL above
      local dead = call_aside('XADD', DEAD, nil, '*', 'id', entry, 'o', first, 'job', id, 'error', msg, 'b', blob,
        'c', born)
      local jk = job_key(id)
      if id ~= '' and redis.call('TYPE', jk)['ok'] == 'hash' and
          (born == '-' or (redis.call('HGET', jk, F.created) or '') == born) then
        redis.pcall('HINCRBY', jk, F.dead_effects, 1) -- a corrupt count stays as it is
        record_error(jk, id, 'effect_dead', msg, '')
      end
      out[#out + 1] = entry
      out[#out + 1] = dead
    end
  end
elseif mode == 'revive' then
  -- A partition a shrink retired takes no effect back: no worker relays
  -- it once the shrink is recorded. ResizeQueue retires a partition before
  -- it checks that both streams are empty (outbox, then dead), so that an
  -- entry moved from dead to outbox between the two reads would be seen
  -- by neither, and left for no relay, if a revive could follow the retire.
  local paused = redis.pcall('GET', PAUSED)
  if type(paused) == 'table' then
    return redis.error_reply('ERR sluice: malformed key: ' .. PAUSED ..
      ' is of another type than the flag pause.lua writes: nothing was sent back (resuming the partition deletes it)')
  end
  if paused == 'r' then
    for i = 1, n do out[i] = STATUS.retired end
    return remember(out)
  end
  for i = 0, n - 1 do
    local id = ARGV[11 + i]
    -- a pcall: an ID of the right shape beyond 64 bits is refused by
    -- XRANGE, which would raise after the entries revived before it
    local e = #id <= ID_MAX and string.find(id, '^%d+%-%d+$') and redis.pcall('XRANGE', DEAD, id, id) or {}
    if e.err then e = {} end
    local f = {}
    if #e > 0 then
      for k = 1, #e[1][2], 2 do f[e[1][2][k]] = e[1][2][k + 1] end
    end
    -- the first entry's time, which the relay's age check reads
    local born = tonumber(string.match(string.sub(f.o or f.id or id, 1, ID_MAX), '^(%d+)%-') or '')
    if #e == 0 then
      out[#out + 1] = STATUS.missing
    elseif (f.b or '') == '' then
      out[#out + 1] = STATUS.empty -- a notification or an unreadable entry: nothing to relay
    elseif not born or born < NOW - RELAY_MAX_AGE then
      -- the relay would bury it again at once: refused, left as it is
      out[#out + 1] = STATUS.stale
    else
      -- 'o': the first entry's ID, whose time the relay's age check reads
      -- (a dead entry buried before 'o' was kept has only its 'id')
      -- call_aside: an outbox that takes no new entry is set aside, not
      -- raised on after the entries revived before this one
      call_aside('XADD', K_OUTBOX, nil, '*', 't', 'fx', 'b', f.b, 'o', f.o or f.id or id, 'c', f.c or '-')
      redis.call('XDEL', DEAD, id)
      out[#out + 1] = STATUS.ok
    end
  end
else
  return redis.error_reply('ERR sluice: unknown deadfx mode ' .. tostring(mode))
end
return remember(out)
