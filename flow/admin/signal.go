package admin

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/store"
)

// SignalResult is what Signal did.
type SignalResult struct {
	// Duplicate says a signal with the same key (flow.WithSignalKey) was
	// sent to the job before, so this one was not kept again; the call
	// succeeds all the same, as a retry should.
	Duplicate bool
}

// Signal sends the signal name with payload to the job id, as
// flow.Client.Signal does (a workflow waiting for it wakes; one that has
// not reached the wait yet finds it there), and says whether it was kept
// or was a duplicate, so that an operator's tool can tell which. Errors
// as flow.Client.Signal's.
func (c *Client) Signal(ctx context.Context, id, name string, payload any, opts ...flow.SignalOption) (SignalResult, error) {
	dup, err := c.b.Signal(ctx, id, name, payload, opts)
	return SignalResult{Duplicate: dup}, err
}

// DiscardSignals discards the signals named name sent to job id and not
// yet taken by a wait, and returns how many it discarded (0: none was
// kept). A signal whose payload the job's wait cannot decode parks the
// job (reason bad_signal) again at every redrive while it is kept:
// discard it, then redrive the job, which waits for the next one. A
// running job is refused (its attempt may be taking one), as is a
// completed one: a *StateError (ErrWrongState). No such job:
// flow.ErrNotFound. An invalid name: flow.ErrInvalid.
func (c *Client) DiscardSignals(ctx context.Context, id, name string) (int, error) {
	if !store.ValidWaitName(name) {
		return 0, fmt.Errorf("%w: signal name %s", flow.ErrInvalid, names.Quote(name))
	}
	ref, err := c.ref(id)
	if err != nil {
		return 0, err
	}
	n, _, err := c.b.Store.Unsignal(ctx, ref, name)
	return n, stateError(id, err)
}
