package sluicetype

import "time"

// Orphan is the provenance of a job reclaimed after a crash: the worker
// whose lease on it expired, when, and how many times it was reclaimed.
// The zero Orphan means the job was never reclaimed.
type Orphan struct {
	Holder    string
	ExpiredAt time.Time
	Count     int
}

// ErrorRecord is one of a job's recent errors: its class (error, timeout,
// panic, lease_expired, deadline, effect, effect_dead, ...), when, the
// counters at the time, its own failure counted (a job's first error
// reads attempt 1, its first crash crash 1), the message and, for panics
// and crashes, the stack.
type ErrorRecord struct {
	Class        string
	At           time.Time
	Attempt      int
	CrashAttempt int
	Message      string
	Stack        string
}

// Tracking is what a running attempt last reported doing
// (runtime.ReportProgress): percent done and a free-form state, at a store
// time, by the attempt with fence Fence.
type Tracking struct {
	Percent float64
	State   string
	At      time.Time
	Fence   int64
}

// StuckInfo is the evidence recorded of a stuck attempt
// (runtime.Options.OnStuck): which case, why, since when, the step and
// cursor it was in and its goroutine stacks.
type StuckInfo struct {
	Case    string // ignored_stop or no_progress
	LeaseID string // the stuck attempt's identity: lease ID and fence
	Fence   int64
	Why     string    // the cancellation cause, or how long without progress
	Since   time.Time // when it was told to stop, or its last progress
	At      time.Time // when it was found stuck (store time)
	Step    string    // the step it was in
	Cursor  string    // that step's last cursor checkpoint, if a cursor
	Stack   string    // the goroutine stacks, cut at 16 KiB
}

// WorkerInfo is a live worker as the registry knows it: its ID (the lease
// holder name jobs show), host and process, the queues it serves with
// their partition counts, its concurrency, the IDs of the jobs it runs,
// when it started and when it last sent a heartbeat.
//
// Every worker writes its entry when it starts and on every lease-renewal
// tick, and removes it when it stops. An entry that has had no heartbeat
// for three times the worker's longest lease expires: the worker is
// considered dead and is pruned.
type WorkerInfo struct {
	ID      string
	Host    string
	PID     int
	Started time.Time
	Queues  map[string]int // served queue -> its partitions
	// QueueVersions gives each served queue's layout version as the worker
	// read it (a resize raises it); nil from a release that did not
	// register it.
	QueueVersions map[string]int64
	Concurrency   int
	Jobs          []string // IDs of the jobs it runs
	LastSeen      time.Time
	// DataModel is the partition data model its release knows (the meaning
	// of a partition's keys); 0 for a release that did not register one,
	// older than any that did.
	DataModel int
}
