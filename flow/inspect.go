package flow

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sluicehq/sluice/internal/mpack"

	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// Job states.
const (
	StateScheduled   = "scheduled"
	StateAvailable   = "available"
	StateRunning     = "running"
	StateRetryable   = "retryable"
	StateCompleted   = "completed"
	StateArchived    = "archived"
	StateQuarantined = "quarantined"
	StateCancelled   = "cancelled"
)

// States lists every job state, in lifecycle order.
var States = []string{
	StateScheduled, StateAvailable, StateRunning, StateRetryable,
	StateCompleted, StateArchived, StateQuarantined, StateCancelled,
}

// DefaultRetainCancelled is how long a job cancelled by an operator
// (admin.Client.CancelJob) is kept before the workers' retention sweep
// deletes it when ClientOptions.RetainCancelled says nothing and no
// worker recorded its queue's retention in Redis: the workers' default
// (runtime.DefaultRetainCancelled).
const DefaultRetainCancelled = runtime.DefaultRetainCancelled

// JobInfo is a job as stored: its state, counters and history.
type JobInfo struct {
	ID           string
	Queue        string
	Kind         string
	State        string
	Payload      []byte // msgpack-encoded arguments; see DecodeArgs
	Priority     int
	Attempt      int // returned errors and timeouts so far
	CrashAttempt int // panics and lost leases so far
	MaxAttempts  int
	Fence        int64
	LeaseID      string    // current lease, while running
	LeaseHolder  string    // worker holding the lease, while running
	LeaseExpiry  time.Time // while running
	Created      time.Time // enqueue time in store time, or the producer's when within 50 ms of it
	RunAt        time.Time // when scheduled or retryable: due time (while held, HeldBy: zero, or its Deadline, when it is archived if still held)
	Finished     time.Time // when in a terminal state
	Timeout      time.Duration
	Deadline     time.Time
	Reason       string // why it was archived, quarantined or cancelled
	LastError    string
	Errors       []sluicetype.ErrorRecord // newest first, at most 10
	Result       []byte                   // msgpack-encoded result; see DecodeResult
	Orphan       sluicetype.Orphan
	Parent       string     // the parent's job ID, for a spawned child
	Steps        []StepInfo // checkpointed steps, in order, then cursors
	// CurrentStep is the checkpointed step furthest along the handler's
	// sequence (the last of Steps with a position: no cursor, no change
	// point of step.Version), Progress when it was checkpointed (the time
	// the worker's host put in its record, StepInfo.At); both zero when no
	// step is checkpointed.
	Progress     time.Time
	CurrentStep  string
	WaitingFor   string // a suspended parent: the spawning step it waits on
	WaitingCount int    // ... and how many of its children are not done
	// Tracking is what the handler last reported doing (runtime
	// ReportProgress), Stuck the last stuck-attempt evidence (runtime
	// Options.OnStuck); nil when none. Each names the attempt it belongs
	// to by Fence: compare with the job's Fence for the current one.
	Tracking *sluicetype.Tracking
	Stuck    *sluicetype.StuckInfo
	// Redrives counts how often an operator returned the job to execution
	// (Redrive, Release); RedrivenAt is the last time, RedrivenFrom the
	// state and reason it was in then ("archived:attempts_exhausted").
	Redrives     int
	RedrivenAt   time.Time
	RedrivenFrom string
	// DeadEffects counts the job's committed effects on keys in other
	// slots that could not be applied (see sluicetype.DeadEffect); each is
	// also in Errors, class "effect_dead", and listed by admin.Client.DeadEffects.
	DeadEffects int
	// HeldBy is the quarantined job this one waits on, while it does
	// (WithQuarantineHold).
	HeldBy string
	// PreferredWorker is the worker the job is routed to (sticky routing,
	// admin.Client.Reroute); "" when it is not pinned.
	PreferredWorker string
	// Suspended: a workflow waiting in step.Sleep, WaitSignal or Select;
	// it is scheduled, RunAt is its earliest timer's wake time or its
	// deadline (WithDeadline) if sooner, zero when it waits for signals
	// only and has no deadline, and AwaitingSignals names the signals it
	// waits for (none for a sleep).
	Suspended       bool
	AwaitingSignals []string
	// Timers are the job's durable timers with their wake times (store
	// time), fired or not, by name; Signals the signals sent to it that no
	// wait has taken yet, oldest first.
	Timers  []TimerInfo
	Signals []SignalInfo
}

// TimerInfo is one of a workflow's durable timers.
type TimerInfo struct {
	Name string
	Wake time.Time
}

// SignalInfo is a signal sent to a job and kept until a wait takes it.
type SignalInfo struct {
	Name    string
	Seq     int64  // its number among the signals sent to the job
	Payload []byte // msgpack
}

// StepInfo is one checkpointed step (or a cursor's progress).
type StepInfo struct {
	Name   string
	Index  int    // position in the handler's step sequence (-1 for a cursor)
	Cursor bool   // a cursor's progress rather than a completed step
	Result []byte // msgpack of the step's result or the cursor value
	At     time.Time
}

// DecodeStep decodes the result of the step named name into v.
func (j *JobInfo) DecodeStep(name string, v any) error {
	for _, s := range j.Steps {
		if s.Name == name && !s.Cursor {
			return mpack.Unmarshal(s.Result, v)
		}
	}
	return fmt.Errorf("%w: job %s has no checkpoint of step %q", ErrNotFound, j.ID, name)
}

// waits reads a job's timers and kept signals from its steps (the store
// adds the timers of its hash to them).
func waits(m map[string][]byte) (timers []TimerInfo, signals []SignalInfo) {
	for field, b := range m {
		if name, at, ok := checkpoint.Timer(field, b); ok {
			timers = append(timers, TimerInfo{Name: name, Wake: at})
		} else if seq, name, ok := checkpoint.Signal(field); ok {
			signals = append(signals, SignalInfo{Name: name, Seq: seq, Payload: b})
		}
	}
	sort.Slice(timers, func(a, b int) bool { return timers[a].Name < timers[b].Name })
	sort.Slice(signals, func(a, b int) bool { return signals[a].Seq < signals[b].Seq })
	return timers, signals
}

func stepInfos(m map[string][]byte) ([]StepInfo, error) {
	var steps, cursors []StepInfo
	for field, b := range m {
		if !checkpoint.IsStep(field) && !checkpoint.IsCursor(field) { // a timer or a signal (waits)
			continue
		}
		if checkpoint.IsCursor(field) {
			cursors = append(cursors, StepInfo{Name: field[len(checkpoint.CursorPrefix):], Index: -1, Cursor: true, Result: b})
			continue
		}
		r, err := checkpoint.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%w: step %q: %v", ErrMalformed, field, err)
		}
		steps = append(steps, StepInfo{Name: field, Index: r.Index, Result: r.Result, At: r.Time()})
	}
	sort.Slice(steps, func(a, b int) bool { return steps[a].Index < steps[b].Index })
	sort.Slice(cursors, func(a, b int) bool { return cursors[a].Name < cursors[b].Name })
	return append(steps, cursors...), nil
}

// lastStep is the index in steps (stepInfos' order) of the last step with
// a position in the handler's sequence (no cursor, no change point), or
// -1.
func lastStep(steps []StepInfo) int {
	for i := len(steps) - 1; i >= 0; i-- {
		if !steps[i].Cursor && steps[i].Index >= 0 {
			return i
		}
	}
	return -1
}

// DecodeArgs decodes the job's arguments into v.
func (j *JobInfo) DecodeArgs(v any) error { return mpack.Unmarshal(j.Payload, v) }

// DecodeResult decodes the job's result (from RegisterResult) into v.
func (j *JobInfo) DecodeResult(v any) error { return mpack.Unmarshal(j.Result, v) }

// Job reads one job by ID in one round trip.
func (c *Client) Job(ctx context.Context, id string) (*JobInfo, error) {
	ref, ok := keys.ParseRef(c.opts.Namespace, id)
	if !ok {
		return nil, fmt.Errorf("%w: job ID %s is not of the form queue:partition:id", ErrInvalid, names.Quote(id))
	}
	j, recs, err := c.st.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(States, j.State) {
		// corrupt data: a JobInfo's State is one of States
		return nil, fmt.Errorf("%w: job %s: its state field %s names no state", ErrMalformed, id, names.Quote(j.State))
	}
	steps, err := stepInfos(j.Steps)
	if err != nil {
		return nil, err
	}
	timers, signals := waits(j.Steps)
	var progress time.Time
	var current string
	if i := lastStep(steps); i >= 0 {
		current, progress = steps[i].Name, steps[i].At
	}
	return &JobInfo{
		ID: id, Queue: ref.Queue, Kind: j.Kind, State: j.State, Payload: j.Payload,
		Priority: j.Priority, Attempt: j.Attempt, CrashAttempt: j.CrashAttempt,
		MaxAttempts: j.MaxAttempts, Fence: j.Fence, LeaseID: j.LeaseID, LeaseHolder: j.Worker,
		LeaseExpiry: j.LeaseExpiry, Created: j.Created, RunAt: j.RunAt, Finished: j.Finished,
		Timeout: j.Timeout, Deadline: j.Deadline, Reason: j.Reason, LastError: j.LastError,
		Errors: recs, Result: j.Result, Orphan: j.Orphan, Parent: j.Parent, Steps: steps,
		Progress: progress, CurrentStep: current, WaitingFor: j.WaitingFor, WaitingCount: j.WaitingCount,
		Tracking: j.Tracking, Stuck: j.Stuck,
		Redrives: j.Redrives, RedrivenAt: j.RedrivenAt, RedrivenFrom: j.RedrivenFrom, DeadEffects: j.DeadEffects,
		HeldBy: j.HeldByID(ref.Partition), Suspended: j.Suspended, AwaitingSignals: j.AwaitingSignals, Timers: timers, Signals: signals,
		PreferredWorker: j.PreferredWorker,
	}, nil
}
