package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

func validState(s string) bool {
	for _, x := range flow.States {
		if x == s {
			return true
		}
	}
	return false
}

// CancelJob cancels a job that has not finished: it moves to cancelled
// with reason "operator" and is kept flow.ClientOptions.RetainCancelled
// when the client sets it, else as long as the workers of its queue keep
// the jobs they cancel (runtime.Options.RetainCancelled, which they record
// in Redis when they start: Retention), else, when none recorded it,
// flow.DefaultRetainCancelled; the Cancelled it returns says which. A running
// job's lease is revoked at once: the worker holding it is told over
// pub/sub (or at its next lease renewal at the latest) and cancels the
// handler's context with cause runtime.ErrCancelled; any write that
// attempt still makes (checkpoint, effect, completion) is rejected as
// stale. As the docs of package runtime say, external side effects of
// handler code that ignores its context cannot be undone.
//
// Errors: ErrInvalid (bad ID), ErrNotFound, a *StateError
// (ErrWrongState) when the job already finished, or one wrapping
// ErrMalformed, with nothing cancelled, when the retention recorded for
// its queue cannot be read and the client sets none.
func (c *Client) CancelJob(ctx context.Context, id string) (Cancelled, error) {
	return c.cancelJob(ctx, id, store.Created{})
}

// CancelJobOf cancels as CancelJob does only if job id is the one created
// at or after from and before before, checked in the same script call as
// the cancel: a job given the ID since a tool showed the job (deleted and
// enqueued again) is not cancelled. Another job is an *OtherJobError
// (ErrWrongState), nothing written; from not before before is
// flow.ErrInvalid; a job whose created-time field is no whole number of
// ms (corrupt data, which tells no job) is ErrMalformed, nothing written.
// Given a Shown, a job that ran again or was redriven since the tool
// showed it is a *MovedOnError (ErrWrongState), nothing written. Other
// errors as CancelJob's.
func (c *Client) CancelJobOf(ctx context.Context, id string, from, before time.Time, shown ...Shown) (Cancelled, error) {
	cr, err := created(from, before, shown)
	if err != nil {
		return Cancelled{}, err
	}
	return c.cancelJob(ctx, id, cr)
}

func (c *Client) cancelJob(ctx context.Context, id string, cr store.Created) (Cancelled, error) {
	ref, err := c.ref(id)
	if err != nil {
		return Cancelled{}, err
	}
	res, err := c.cancelRetention(ctx, ref.Queue)
	if err != nil {
		return Cancelled{}, err
	}
	res.Previous, err = c.b.Store.CancelOf(ctx, ref, res.Kept, cr)
	if err != nil {
		return Cancelled{}, stateError(id, err)
	}
	return res, nil
}

// DeleteJob deletes a job that is not running, with all its keys (errors,
// step checkpoints, children's results). A job deleted before it finished
// tells its parent, if any, that it ended as cancelled. Cancel a running
// job first.
//
// Errors: ErrInvalid, ErrNotFound, or a *StateError (ErrWrongState) for a
// running job.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	return c.deleteJob(ctx, id, store.Created{})
}

// DeleteJobOf deletes as DeleteJob does only if job id is the one
// created at or after from and before before, checked in the same
// script call as the delete: a job given the ID since a tool showed the
// job is not deleted. Another job is an *OtherJobError (ErrWrongState),
// nothing deleted; one that moved on since (shown) a *MovedOnError;
// other errors as CancelJobOf's.
func (c *Client) DeleteJobOf(ctx context.Context, id string, from, before time.Time, shown ...Shown) error {
	cr, err := created(from, before, shown)
	if err != nil {
		return err
	}
	return c.deleteJob(ctx, id, cr)
}

func (c *Client) deleteJob(ctx context.Context, id string, cr store.Created) error {
	ref, err := c.ref(id)
	if err != nil {
		return err
	}
	_, err = c.b.Store.DeleteOf(ctx, ref, cr)
	return stateError(id, err)
}

// Shown is more of what a tool showed of a job than its creation time,
// for CancelJobOf, DeleteJobOf, RunNowOf, RedriveOf and ReleaseOf to
// check in the same script call as they act: a job that ran again
// (another Fence) or was redriven (another Redrives) since the tool
// showed it, keeping its creation time, is refused, a *MovedOnError
// (ErrWrongState), nothing written. A nil field is not checked.
type Shown struct {
	Fence    *int64 // the job's flow.JobInfo.Fence: the attempts it began
	Redrives *int   // the job's flow.JobInfo.Redrives
}

// MovedOnError: a call given a Shown found the job moved on since: it ran
// again or was redriven. It matches ErrWrongState.
type MovedOnError = sluicetype.MovedOnError

// created is the store's Created of a creation time range a caller
// gives (CancelJobOf and the others of its kind), and of what else it
// shows of the job: flow.ErrInvalid when the range holds no time, or
// what it shows is no fence or count (negative, or given twice).
func created(from, before time.Time, shown []Shown) (store.Created, error) {
	if from.IsZero() || !from.Before(before) {
		return store.Created{}, fmt.Errorf("%w: creation time range %s to %s holds no time", flow.ErrInvalid, from, before)
	}
	cr := store.Created{From: from, Before: before}
	if len(shown) > 1 {
		return store.Created{}, fmt.Errorf("%w: %d Shown given: a call takes one", flow.ErrInvalid, len(shown))
	}
	for _, s := range shown {
		if s.Fence != nil {
			if *s.Fence < 0 {
				return store.Created{}, fmt.Errorf("%w: fence %d (it counts attempts from 0)", flow.ErrInvalid, *s.Fence)
			}
			f := *s.Fence
			cr.Fence = &f
		}
		if s.Redrives != nil {
			if *s.Redrives < 0 {
				return store.Created{}, fmt.Errorf("%w: redrives %d (it counts from 0)", flow.ErrInvalid, *s.Redrives)
			}
			n := int64(*s.Redrives)
			cr.Redrives = &n
		}
	}
	return cr, nil
}

// summary turns a listed job into a JobInfo.
func summary(p keys.Partition, j *store.Job) flow.JobInfo {
	ref := keys.Ref{Partition: p, Local: j.Local}
	return flow.JobInfo{
		ID: ref.String(), Queue: p.Queue, Kind: j.Kind, State: j.State, Priority: j.Priority,
		Attempt: j.Attempt, CrashAttempt: j.CrashAttempt, MaxAttempts: j.MaxAttempts,
		LeaseHolder: j.Worker, LeaseExpiry: j.LeaseExpiry, Created: j.Created, RunAt: j.RunAt,
		Finished: j.Finished, Timeout: j.Timeout, Deadline: j.Deadline, Reason: j.Reason,
		LastError: j.LastError, Parent: j.Parent, Redrives: j.Redrives, RedrivenAt: j.RedrivenAt,
		Suspended: j.Suspended, AwaitingSignals: j.AwaitingSignals, HeldBy: j.HeldByID(p),
	}
}
