package admin

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// RunNow makes a scheduled or retryable job available now instead of at
// its due time: it goes to the back of its priority's available list (or
// its preferred worker's, with sticky routing), as when its due time
// comes, and keeps its priority, attempts, errors, unique key, sticky
// routing and deadline. A parent waiting for its children (flow.Join)
// runs now and checks on them again, as after flow.JoinRecheck.
//
// A suspended workflow (step.Sleep, step.WaitSignal, step.Select) is
// refused: the wake times of its timers are part of its recorded history
// (a later wait on the same timer waits for the same moment), so running
// it early would only suspend it again. Send the signal it waits for
// instead (Signal). A job held behind a quarantined twin
// (flow.WithQuarantineHold) is refused too: release or delete that job.
//
// Errors: ErrInvalid (bad ID), ErrNotFound, or a *sluicetype.StateError
// (ErrWrongState) naming the job and its state: available (it runs when
// a worker is free), running, finished, or scheduled with
// StateError.Why saying why (suspended, held). Calling it twice is safe:
// the second call finds the job available and returns that StateError.
func (c *Client) RunNow(ctx context.Context, id string) error {
	return c.runNow(ctx, id, store.Created{})
}

// RunNowOf runs as RunNow does only if job id is the one created at or
// after from and before before, checked in the same script call: a job
// given the ID since a tool showed the job is not run. Another job is an
// *OtherJobError (ErrWrongState), nothing written; one that moved on
// since (shown) a *MovedOnError; other errors as CancelJobOf's.
func (c *Client) RunNowOf(ctx context.Context, id string, from, before time.Time, shown ...Shown) error {
	cr, err := created(from, before, shown)
	if err != nil {
		return err
	}
	return c.runNow(ctx, id, cr)
}

func (c *Client) runNow(ctx context.Context, id string, cr store.Created) error {
	ref, err := c.ref(id)
	if err != nil {
		return err
	}
	_, err = c.b.Store.RunNowOf(ctx, ref, cr)
	return stateError(id, err)
}
