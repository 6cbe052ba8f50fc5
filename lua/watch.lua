-- watch.lua: a caller starts waiting for one job to finish
-- (flow.Client.Wait), already subscribed to the partition's DONE_CHANNEL.
--
-- KEYS: the partition layout of lib.lua.
-- ARGV[9] the job's ID in the partition
-- Returns: the job's state, followed by ' ' and its created field when it
--   has one (a job of a generated ID has none: its ID tells), '' when
--   there is no such job, or 'malformed' when its state field names no
--   state (nothing written). The waiter compares the created time with
--   the job it reads later: a job deleted and its ID given to a new one
--   is not the job it waits for. A job in a
--   terminal state is answered as it is, nothing written; any other is
--   marked watched (F.watched, and a member of WATCHING), so that finish
--   (lib_lifecycle.lua) publishes '<state> <id>' on DONE_CHANNEL when it
--   finishes and keeps it at least WATCH_KEEP ms. An operator's delete
--   of a watched job publishes 'deleted <id>'.
-- Transitions: none.
-- A re-sent call answers what its first run did (lib_replay.lua).
do local refused = model_error() if refused then return refused end end
local again = replayed()
if again then return again end
local id = ARGV[9]
if id == nil or id == '' then return redis.error_reply('ERR sluice: watch: no job ID') end
local jk = job_key(id)
local h = redis.call('HMGET', jk, F.state, F.created)
local s = state_of(h[1])
if not s then return STATUS.none end
-- a state no release writes (corrupt data) is refused, nothing written:
-- no worker finishes a job whose state it cannot read in a terminal
-- index, so a waiter would wait for ever
if not SCODE[s] then return STATUS.malformed end
local ans = h[2] and s .. ' ' .. h[2] or s
if TERMINAL[s] then return ans end
redis.call('HSET', jk, F.watched, '1')
call_aside('SADD', WATCHING, nil, id)
return remember(ans)
