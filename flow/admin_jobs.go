package flow

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// DefaultRetainCancelled is how long a job cancelled by CancelJob is kept
// before the workers' retention sweep deletes it, unless
// ClientOptions.RetainCancelled says otherwise: the workers' default
// (runtime.Options.RetainCancelled).
const DefaultRetainCancelled = 24 * time.Hour

// States lists every job state, in lifecycle order.
var States = []string{
	StateScheduled, StateAvailable, StateRunning, StateRetryable,
	StateCompleted, StateArchived, StateQuarantined, StateCancelled,
}

func validState(s string) bool {
	for _, x := range States {
		if x == s {
			return true
		}
	}
	return false
}

// partitions names every partition of queue (ClientOptions.Partitions).
func (c *Client) partitions(queue string) []keys.Partition {
	n := max(c.opts.Partitions[queue], 1)
	ps := make([]keys.Partition, n)
	for i := range ps {
		ps[i] = c.st.Partition(queue, i)
	}
	return ps
}

func (c *Client) ref(id string) (keys.Ref, error) {
	ref, ok := keys.ParseRef(c.opts.Namespace, id)
	if !ok {
		return ref, fmt.Errorf("%w: job ID %q is not of the form queue:partition:id", ErrInvalid, id)
	}
	return ref, nil
}

// admin is the store the operator calls write through: the client's, with
// the retention a cancelled job gets.
func (c *Client) admin() *store.Store {
	cfg := store.Config{NS: c.opts.Namespace, RetainCancelled: c.opts.RetainCancelled, RetainArchived: 7 * 24 * time.Hour}
	if c.opts.Clock != nil {
		cfg.Now = c.opts.Clock.Now
	}
	return store.New(c.st.Client(), cfg)
}

// CancelJob cancels a job that has not finished: it moves to cancelled
// with reason "operator" and is kept ClientOptions.RetainCancelled. A running
// job's lease is revoked at once: the worker holding it is told over
// pub/sub (or at its next lease renewal at the latest) and cancels the
// handler's context with cause runtime.ErrCancelled; any write that
// attempt still makes (checkpoint, effect, completion) is rejected as
// stale. As the docs of package runtime say, external side effects of
// handler code that ignores its context cannot be undone.
//
// Errors: ErrInvalid (bad ID), ErrNotFound, or a *StateError
// (ErrWrongState) when the job already finished.
func (c *Client) CancelJob(ctx context.Context, id string) error {
	ref, err := c.ref(id)
	if err != nil {
		return err
	}
	_, err = c.admin().Cancel(ctx, ref)
	return stateError(id, err)
}

// DeleteJob deletes a job that is not running, with all its keys (errors,
// step checkpoints, children's results). A job deleted before it finished
// tells its parent, if any, that it ended as cancelled. Cancel a running
// job first.
//
// Errors: ErrInvalid, ErrNotFound, or a *StateError (ErrWrongState) for a
// running job.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	ref, err := c.ref(id)
	if err != nil {
		return err
	}
	_, err = c.st.Delete(ctx, ref)
	return stateError(id, err)
}

// summary turns a listed job into a JobInfo.
func summary(p keys.Partition, j *store.Job) JobInfo {
	ref := keys.Ref{Partition: p, Local: j.Local}
	return JobInfo{
		ID: ref.String(), Queue: p.Queue, Kind: j.Kind, State: j.State, Priority: j.Priority,
		Attempt: j.Attempt, CrashAttempt: j.CrashAttempt, MaxAttempts: j.MaxAttempts,
		LeaseHolder: j.Worker, LeaseExpiry: j.LeaseExpiry, Created: j.Created, RunAt: j.RunAt,
		Finished: j.Finished, Timeout: j.Timeout, Deadline: j.Deadline, Reason: j.Reason,
		LastError: j.LastError, Parent: j.Parent, Redrives: j.Redrives, RedrivenAt: j.RedrivenAt,
	}
}
