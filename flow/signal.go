package flow

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// MaxSignalPayload bounds a signal's encoded payload.
const MaxSignalPayload = 64 << 10

// Signal sends the signal name, with payload (msgpack-encoded; nil for
// none), to the job id: a workflow waiting for it (step.WaitSignal,
// step.OnSignal) wakes at once; one that has not reached the wait yet
// finds it there when it does. Each signal is taken by one wait, once.
//
// Errors: ErrInvalid (a malformed ID or name, a payload that does not
// encode or is over MaxSignalPayload), ErrNotFound (no such job), or a
// *sluicetype.StateError (ErrWrongState) for a job that has finished.
func (c *Client) Signal(ctx context.Context, id, name string, payload any) error {
	ref, ok := keys.ParseRef(c.opts.Namespace, id)
	if !ok {
		return fmt.Errorf("%w: job ID %q is not of the form queue:partition:id", ErrInvalid, id)
	}
	if !store.ValidWaitName(name) {
		return fmt.Errorf("%w: signal name %q (1 to %d letters, digits and _./-)", ErrInvalid, name, store.MaxWaitName)
	}
	b, err := msgpack.Marshal(payload)
	if err != nil {
		return fmt.Errorf("%w: signal %q to job %s: encoding the payload: %v", ErrInvalid, name, id, err)
	}
	if len(b) > MaxSignalPayload {
		return fmt.Errorf("%w: signal %q to job %s: payload of %d bytes, the limit is %d", ErrInvalid, name, id, len(b), MaxSignalPayload)
	}
	if _, err := c.st.Signal(ctx, ref, name, b); err != nil {
		var se *sluicetype.StateError
		if errors.As(err, &se) {
			se.ID = id
		}
		return fmt.Errorf("signal %q to job %s: %w", name, id, err)
	}
	return nil
}
