package admin

import (
	"context"

	"github.com/sluicehq/sluice/flow"
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
