package flow

import (
	"context"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
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

// ErrorRecord is one of a job's recent errors: its class (error, timeout,
// panic, lease_expired, deadline, ...), when, the counters at the time, the
// message and, for panics, the stack.
type ErrorRecord = store.ErrorRecord

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
	Created      time.Time
	RunAt        time.Time // when scheduled or retryable: due time
	Finished     time.Time // when in a terminal state
	Timeout      time.Duration
	Deadline     time.Time
	Reason       string // why it was archived, quarantined or cancelled
	LastError    string
	Errors       []ErrorRecord // newest first, at most 10
	Result       []byte        // msgpack-encoded result; see DecodeResult
	Orphan       Orphan
}

// DecodeArgs decodes the job's arguments into v.
func (j *JobInfo) DecodeArgs(v any) error { return msgpack.Unmarshal(j.Payload, v) }

// DecodeResult decodes the job's result (from RegisterResult) into v.
func (j *JobInfo) DecodeResult(v any) error { return msgpack.Unmarshal(j.Result, v) }

// Job reads one job by ID in one round trip.
func (c *Client) Job(ctx context.Context, id string) (*JobInfo, error) {
	ref, ok := keys.ParseRef(c.opts.Namespace, id)
	if !ok {
		return nil, fmt.Errorf("%w: job ID %q is not of the form queue:partition:id", ErrInvalid, id)
	}
	j, recs, err := c.st.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &JobInfo{
		ID: id, Queue: ref.Queue, Kind: j.Kind, State: j.State, Payload: j.Payload,
		Priority: j.Priority, Attempt: j.Attempt, CrashAttempt: j.CrashAttempt,
		MaxAttempts: j.MaxAttempts, Fence: j.Fence, LeaseID: j.LeaseID, LeaseHolder: j.Worker,
		LeaseExpiry: j.LeaseExpiry, Created: j.Created, RunAt: j.RunAt, Finished: j.Finished,
		Timeout: j.Timeout, Deadline: j.Deadline, Reason: j.Reason, LastError: j.LastError,
		Errors: recs, Result: j.Result, Orphan: j.Orphan,
	}, nil
}
