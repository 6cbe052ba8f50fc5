package flow

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/keys"
)

// Reroute changes the worker job id prefers (sticky routing): to is a
// sticky.To option, or nil to unpin the job. An available job moves to its
// new worker at once; a running one keeps its attempt and goes to its new
// worker when it is next ready (retry, snooze, redrive).
func (c *Client) Reroute(ctx context.Context, id string, to EnqueueOption) error {
	ref, ok := keys.ParseRef(c.opts.Namespace, id)
	if !ok {
		return fmt.Errorf("%w: job ID %q is not of the form queue:partition:id", ErrInvalid, id)
	}
	var o enqueueOptions
	if to != nil {
		if err := to(&o); err != nil {
			return err
		}
		if o.sticky.Worker == "" {
			return fmt.Errorf("%w: Reroute takes a sticky routing option (sticky.To) or nil", ErrInvalid)
		}
	}
	_, err := c.st.Reroute(ctx, ref, o.sticky)
	return err
}
