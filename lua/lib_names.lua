-- lib_names.lua: the prelude's names that Go reads too: the fields of a
-- job hash (F) and the statuses scripts answer (STATUS). Each is spelled
-- here only; Go's keys.Field* constants (internal/keys/fields.go) and
-- store's status constants (internal/store/status.go) name the same.
-- Tests check that the two sides agree (TestLuaFieldsAgree,
-- TestLuaStatusesAgree) and that no script spells a field in a hash
-- command, or a status it answers, by hand (internal/keys
-- lua_names_test.go). lua.Names reads these tables for them: one comment
-- line above each entry, 'name = value,' on its own line.
--
-- Cost: each table is built once per call of a script that uses it
-- (prelude.go), and each use is a table lookup: a loop that runs per job
-- reads the fields it needs into locals first. An entry's key must not be
-- the name of a prelude definition (prelude.go would take the key for a
-- use of it).

-- F names the fields of a job hash (job_key): scripts write F.state, never
-- 's'. One comment line above each entry says what the field holds; Go's
-- keys.Field* constants carry the same comments (TestLuaFieldsAgree).
local F = {
  -- its state, stored as a one-digit code (lib.lua's SCODE, store.StateName)
  state = 's',
  -- its kind, which names its handler
  kind = 'k',
  -- its payload, or the payload's first chunk: the further chunks are '1', '2', ...
  payload = 'p',
  -- '1' when the payload is a key of its own (body_key, Partition.Body), in place of 'p'
  payload_body = 'pb',
  -- its headers, or their first chunk: the further chunks are 'h1', 'h2', ...
  headers = 'h',
  -- its priority, a whole number 0..9 (absent or any other value: 0)
  priority = 'pr',
  -- returned errors and timeouts so far (absent: 0)
  attempt = 'a',
  -- crashes so far: panics, lost leases (absent: 0)
  crash_attempt = 'c',
  -- attempts before it is archived (absent: the default)
  max_attempts = 'ma',
  -- the fence, moved by each claim and by a cancel (absent: 0)
  fence = 'f',
  -- the lease ID of its current or last attempt, which names its holder and start (lease_of, lib.lua)
  lease_id = 'l',
  -- its lease's holder, as releases of another lease ID shape wrote it: read only
  worker = 'w',
  -- when its lease began (ms), as releases of another lease ID shape wrote it: read only
  lease_start = 'ls',
  -- when its lease expires (ms), as older scripts wrote it: read only (the run zset has it)
  lease_expiry = 'le',
  -- the last renewal renew.lua applied to its lease: lease ID, space, sequence number
  renewal = 'rn',
  -- each attempt's timeout (ms)
  timeout = 'to',
  -- when it may no longer run (ms)
  deadline = 'dl',
  -- when it was created (ms); absent when its generated ID tells
  created = 'ct',
  -- when it is due (ms), while scheduled or retryable
  run_at = 'rt',
  -- the bucket of later jobs it left before the bucket came due, where its entry stays until then
  later_left = 'rb',
  -- when it reached a terminal state (ms)
  finished = 'ft',
  -- why it reached a terminal state
  reason = 'xr',
  -- its last error message
  last_error = 'er',
  -- its result, when it completed with one
  result = 'r',
  -- the worker whose lease on it last expired (orphan provenance)
  orphan_holder = 'oh',
  -- when that lease expired (ms)
  orphan_expired = 'oe',
  -- how many of its leases expired
  orphan_count = 'on',
  -- the lease ID of the attempt whose lease last expired
  orphan_lease = 'ol',
  -- a spawned job's parent, by job ID
  parent = 'pa',
  -- the key prefix of the parent's partition
  parent_prefix = 'pp',
  -- the parent's step that spawned it
  parent_step = 'ps',
  -- the parent's ID in its partition
  parent_local = 'pl',
  -- set once it has step checkpoints (steps_key, Partition.Steps) or records of its children (deliver)
  has_steps = 'sx',
  -- a suspended parent's spawning step, whose children it waits on
  wait_step = 'ws',
  -- how many of those children are not done
  wait_count = 'wc',
  -- 'f' wakes the parent on a child's first failure, 'a' waits for all
  wait_policy = 'wp',
  -- set when the wait counts only the children it names: its token (the waiting attempt's fence), each one's mark in kidcount_key ('w:<child>')
  wait_members = 'wm',
  -- while suspended: the fence of the attempt that suspended it, then the signals it waits for
  awaits = 'wa',
  -- how many signals were sent to it (numbers their fields in steps_key)
  signal_seq = 'sq',
  -- how many times an operator redrove or released it
  redrives = 'dn',
  -- when it was last redriven (ms)
  redriven_at = 'dt',
  -- what the last redrive took it from: state:reason
  redriven_from = 'df',
  -- how many of its effects could not be relayed
  dead_effects = 'xd',
  -- the quarantined job it is held behind, by ID in the partition
  held_by = 'qb',
  -- its fingerprint (kind and arguments) for quarantine holds
  hold_fingerprint = 'qf',
  -- its unique key
  unique = 'uk',
  -- its concurrency key
  concurrency_key = 'ck',
  -- how many jobs of its concurrency key may run at once
  concurrency_limit = 'cn',
  -- its rate class
  rate_class = 'rk',
  -- the worker it prefers (sticky routing)
  sticky_worker = 'sw',
  -- its fallback: 'w' waits, 'a' hands it to any worker, 'f' fails it, after the delay
  sticky_mode = 'sm',
  -- the delay of its fallback (ms)
  sticky_delay = 'sd',
  -- '1' once its fallback handed it to every worker
  sticky_fallback = 'sf',
  -- the workers whose pin lists a reroute took it off, space-separated: entries left there are stale
  sticky_left = 'sl',
  -- stuck evidence: the case, 'ignored_stop' or 'no_progress'
  stuck_case = 'zc',
  -- stuck evidence: the lease ID of the stuck attempt
  stuck_lease_id = 'zl',
  -- stuck evidence: the fence of the stuck attempt
  stuck_fence = 'zf',
  -- stuck evidence: why it counts as stuck
  stuck_why = 'zw',
  -- stuck evidence: since when (ms)
  stuck_since = 'zs',
  -- stuck evidence: when it was reported, in store time (ms)
  stuck_at = 'zd',
  -- stuck evidence: the current step
  stuck_step = 'zp',
  -- stuck evidence: the step's last cursor
  stuck_cursor = 'zk',
  -- stuck evidence: the stack
  stuck_stack = 'zt',
  -- progress report: percent done
  track_percent = 'gp',
  -- progress report: the free-form state
  track_state = 'gs',
  -- progress report: when it was written, in store time (ms)
  track_at = 'gt',
  -- progress report: the fence of the reporting attempt
  track_fence = 'gf',
  -- '1' while a caller waits for it to finish (watch.lua, flow.Client.Wait)
  watched = 'wd',
}

-- STATUS names what scripts answer besides job states, data and counts:
-- scripts write STATUS.stale, never 'stale'. One comment line above each
-- entry says which scripts answer it; Go's store maps each to its result
-- or error in one place (internal/store/status.go, TestLuaStatusesAgree).
local STATUS = {
  -- done (operator scripts, step, deadfx revive, schedule)
  ok = 'ok',
  -- no such job, dead entry or schedule (operator scripts, deadfx revive, schedule)
  missing = 'missing',
  -- in place of a state: no such job (renew, reroute, the state of a missing job)
  none = '',
  -- the attempt no longer holds the job: nothing written (ack, step)
  stale = 'stale',
  -- the job was added (enqueue)
  new = 'new',
  -- the same job, the step's checkpoint, or the signal's key is there already: nothing written (enqueue, step, signal)
  exists = 'exists',
  -- a job with this ID exists with other content (enqueue), or was created at another time than named (unsignal)
  conflict = 'conflict',
  -- a prefix, then 'fence' or 'redrives': the job ran again or was redriven since a tool showed it: nothing written (cancel, delete, runnow, redrive)
  changed = 'changed ',
  -- the fresh random ID is another job's: nothing added (enqueue)
  taken = 'taken',
  -- a prefix, then the ID of the job holding the unique key: nothing added (enqueue)
  unique = 'unique ',
  -- a prefix, then the ID of the quarantined job the new job is held behind (enqueue), or the job is (runnow: refused)
  held = 'held ',
  -- a prefix, then the job's deadline and the due time its delay gives it (ms, space-separated): the deadline is not after it, nothing written for the job (enqueue)
  past_deadline = 'past_deadline ',
  -- the partition went away in a shrink of its queue: nothing added (enqueue)
  retired = 'retired',
  -- the job is already in a terminal state (cancel)
  final = 'final',
  -- the job is running: refused (delete)
  running = 'running',
  -- the job is a workflow suspended on its waits: refused (runnow)
  suspended = 'suspended',
  -- a step's effect cannot apply: nothing written (step)
  effect_error = 'effect_error',
  -- the dead entry holds no effect to relay (deadfx revive)
  empty = 'empty',
  -- the effect was written (relay)
  applied = 'applied',
  -- the effect was written before: nothing written (relay)
  duplicate = 'duplicate',
  -- a prefix, then why the effect cannot apply: nothing written (relay)
  error = 'error: ',
  -- another scheduler moved the schedule first: nothing written (schedule)
  moved = 'moved',
  -- the schedule is paused: nothing written (schedule)
  paused = 'paused',
  -- a key of the job holds another type than Sluice wrote: nothing written for it (step, enqueue)
  malformed = 'malformed',
  -- in place of the next due time: nothing is due later (claim)
  no_due = -1,
  -- in place of the next due time: the claim leased all it was asked for (claim)
  claimed_all = -2,
  -- in place of the next due time: suspects were passed over, claim again soon (claim)
  held_suspects = -3,
  -- in place of a state, a number no state is taken for: the lease is held, a later renewal of it ran first, nothing moved (renew)
  late = -4,
}
