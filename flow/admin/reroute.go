package admin

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/store"
)

// Reroute changes the worker job id prefers (sticky routing): to is a
// sticky.To option, or nil to unpin the job. An available job moves to its
// new worker at once; a running one keeps its attempt and goes to its new
// worker when it is next ready (retry, snooze, redrive). A completed job,
// which never runs again, is refused with a *StateError (ErrWrongState).
func (c *Client) Reroute(ctx context.Context, id string, to flow.EnqueueOption) error {
	ref, err := c.ref(id)
	if err != nil {
		return err
	}
	var s store.Sticky
	if to != nil {
		var ok bool
		if s, ok, err = c.b.Sticky(to); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: Reroute takes a sticky routing option (sticky.To) or nil", flow.ErrInvalid)
		}
	}
	_, err = c.b.Store.Reroute(ctx, ref, s)
	return stateError(id, err)
}
