package keys

// The fields of a job hash (Partition.Job), each named here once for Go:
// store reads and writes a job's fields through these names only. The Lua
// prelude names the same fields in its table F (lua/lib_names.lua), with
// the same comment on each, and scripts use F's entries, never a literal
// name; TestLuaFieldsAgree checks that the two lists agree exactly.
//
// Names are one or two bytes: Redis keeps a small hash in a compact
// encoding whose size grows with every byte of every field name. A
// payload or headers too long for one value is stored in chunks: further
// fields '1', '2', ... for the payload ("p1", "p2", ... as written before
// numbers) and "h1", "h2", ... for the headers, which no name here may
// take. Nor may "pt" and "cs", retired: the time and name of the last step
// checkpointed, which every step commit wrote until 2026-12-04 (flow.JobInfo
// now reads them from the checkpoints); older jobs may still hold them.
const (
	// its state, stored as a one-digit code (lib.lua's SCODE, store.StateName)
	FieldState = "s"
	// its kind, which names its handler
	FieldKind = "k"
	// its payload, or the payload's first chunk: the further chunks are '1', '2', ...
	FieldPayload = "p"
	// '1' when the payload is a key of its own (body_key, Partition.Body), in place of 'p'
	FieldPayloadBody = "pb"
	// its headers, or their first chunk: the further chunks are 'h1', 'h2', ...
	FieldHeaders = "h"
	// its priority, a whole number 0..9 (absent or any other value: 0)
	FieldPriority = "pr"
	// returned errors and timeouts so far (absent: 0)
	FieldAttempt = "a"
	// crashes so far: panics, lost leases (absent: 0)
	FieldCrashAttempt = "c"
	// attempts before it is archived (absent: the default)
	FieldMaxAttempts = "ma"
	// the fence, moved by each claim and by a cancel (absent: 0)
	FieldFence = "f"
	// the lease ID of its current or last attempt, which names its holder and start (lease_of, lib.lua)
	FieldLeaseID = "l"
	// its lease's holder, as releases of another lease ID shape wrote it: read only
	FieldWorker = "w"
	// when its lease began (ms), as releases of another lease ID shape wrote it: read only
	FieldLeaseStart = "ls"
	// when its lease expires (ms), as older scripts wrote it: read only (the run zset has it)
	FieldLeaseExpiry = "le"
	// the last renewal renew.lua applied to its lease: lease ID, space, sequence number
	FieldRenewal = "rn"
	// each attempt's timeout (ms)
	FieldTimeout = "to"
	// when it may no longer run (ms)
	FieldDeadline = "dl"
	// when it was created (ms); absent when its generated ID tells
	FieldCreated = "ct"
	// when it is due (ms), while scheduled or retryable
	FieldRunAt = "rt"
	// the bucket of later jobs it left before the bucket came due, where its entry stays until then
	FieldLaterLeft = "rb"
	// when it reached a terminal state (ms)
	FieldFinished = "ft"
	// why it reached a terminal state
	FieldReason = "xr"
	// its last error message
	FieldLastError = "er"
	// its result, when it completed with one
	FieldResult = "r"
	// the worker whose lease on it last expired (orphan provenance)
	FieldOrphanHolder = "oh"
	// when that lease expired (ms)
	FieldOrphanExpired = "oe"
	// how many of its leases expired
	FieldOrphanCount = "on"
	// the lease ID of the attempt whose lease last expired
	FieldOrphanLease = "ol"
	// a spawned job's parent, by job ID
	FieldParent = "pa"
	// the key prefix of the parent's partition
	FieldParentPrefix = "pp"
	// the parent's step that spawned it
	FieldParentStep = "ps"
	// the parent's ID in its partition
	FieldParentLocal = "pl"
	// set once it has step checkpoints (steps_key, Partition.Steps) or records of its children (deliver)
	FieldHasSteps = "sx"
	// a suspended parent's spawning step, whose children it waits on
	FieldWaitStep = "ws"
	// how many of those children are not done
	FieldWaitCount = "wc"
	// 'f' wakes the parent on a child's first failure, 'a' waits for all
	FieldWaitPolicy = "wp"
	// set when the wait counts only the children it names: its token (the waiting attempt's fence), each one's mark in kidcount_key ('w:<child>')
	FieldWaitMembers = "wm"
	// while suspended: the fence of the attempt that suspended it, then the signals it waits for
	FieldAwaits = "wa"
	// how many signals were sent to it (numbers their fields in steps_key)
	FieldSignalSeq = "sq"
	// how many times an operator redrove or released it
	FieldRedrives = "dn"
	// when it was last redriven (ms)
	FieldRedrivenAt = "dt"
	// what the last redrive took it from: state:reason
	FieldRedrivenFrom = "df"
	// how many of its effects could not be relayed
	FieldDeadEffects = "xd"
	// the quarantined job it is held behind, by ID in the partition
	FieldHeldBy = "qb"
	// its fingerprint (kind and arguments) for quarantine holds
	FieldHoldFingerprint = "qf"
	// its unique key
	FieldUnique = "uk"
	// its concurrency key
	FieldConcurrencyKey = "ck"
	// how many jobs of its concurrency key may run at once
	FieldConcurrencyLimit = "cn"
	// its rate class
	FieldRateClass = "rk"
	// the worker it prefers (sticky routing)
	FieldStickyWorker = "sw"
	// its fallback: 'w' waits, 'a' hands it to any worker, 'f' fails it, after the delay
	FieldStickyMode = "sm"
	// the delay of its fallback (ms)
	FieldStickyDelay = "sd"
	// '1' once its fallback handed it to every worker
	FieldStickyFallback = "sf"
	// the workers whose pin lists a reroute took it off, space-separated: entries left there are stale
	FieldStickyLeft = "sl"
	// stuck evidence: the case, 'ignored_stop' or 'no_progress'
	FieldStuckCase = "zc"
	// stuck evidence: the lease ID of the stuck attempt
	FieldStuckLeaseID = "zl"
	// stuck evidence: the fence of the stuck attempt
	FieldStuckFence = "zf"
	// stuck evidence: why it counts as stuck
	FieldStuckWhy = "zw"
	// stuck evidence: since when (ms)
	FieldStuckSince = "zs"
	// stuck evidence: when it was reported, in store time (ms)
	FieldStuckAt = "zd"
	// stuck evidence: the current step
	FieldStuckStep = "zp"
	// stuck evidence: the step's last cursor
	FieldStuckCursor = "zk"
	// stuck evidence: the stack
	FieldStuckStack = "zt"
	// progress report: percent done
	FieldTrackPercent = "gp"
	// progress report: the free-form state
	FieldTrackState = "gs"
	// progress report: when it was written, in store time (ms)
	FieldTrackAt = "gt"
	// progress report: the fence of the reporting attempt
	FieldTrackFence = "gf"
	// '1' while a caller waits for it to finish (watch.lua, flow.Client.Wait)
	FieldWatched = "wd"
)
