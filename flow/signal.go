package flow

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
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
// A call that fails may have been applied (its reply lost); calling again
// then sends a second signal, which a later wait would take. To retry
// safely, give the signal an idempotency key (WithSignalKey): a signal
// with the key of one sent to the job before is not kept again, and the
// call succeeds, also once the job has finished, for as long as the job is
// kept (a job deleted on completion answers ErrNotFound: gone, whether or
// not it took the signal).
//
// A signal names its job by ID alone. Where IDs come back (WithID, after
// the job is deleted), a signal sent, or retried, once another job has
// the ID is that job's: compare JobInfo.Created with the job you mean
// before you send.
//
// Errors: ErrInvalid (a malformed ID, name or key, a payload that does not
// encode or is over MaxSignalPayload), ErrNotFound (no such job), or a
// *sluicetype.StateError (ErrWrongState) for a job that has finished.
func (c *Client) Signal(ctx context.Context, id, name string, payload any, opts ...SignalOption) error {
	_, err := c.signal(ctx, id, name, payload, opts...)
	return err
}

// signal is Signal, and says whether the signal was a duplicate (its key
// used before: not kept again), which the operator's Signal reports.
func (c *Client) signal(ctx context.Context, id, name string, payload any, opts ...SignalOption) (duplicate bool, err error) {
	ref, ok := keys.ParseRef(c.opts.Namespace, id)
	if !ok {
		return false, fmt.Errorf("%w: job ID %s is not of the form queue:partition:id", ErrInvalid, names.Quote(id))
	}
	if !store.ValidWaitName(name) {
		return false, fmt.Errorf("%w: signal name %s (1 to %d letters, digits and _./-)", ErrInvalid, names.Quote(name), store.MaxWaitName)
	}
	b, err := msgpack.Marshal(payload)
	if err != nil {
		return false, fmt.Errorf("%w: signal %q to job %s: encoding the payload: %v", ErrInvalid, name, id, err)
	}
	if len(b) > MaxSignalPayload {
		return false, fmt.Errorf("%w: signal %q to job %s: payload of %d bytes, the limit is %d", ErrInvalid, name, id, len(b), MaxSignalPayload)
	}
	var o signalOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.keyed && (o.key == "" || len(o.key) > MaxSignalKey || !utf8.ValidString(o.key)) {
		return false, fmt.Errorf("%w: signal key %s: 1 to %d bytes of UTF-8", ErrInvalid, names.Quote(o.key), MaxSignalKey)
	}
	res, err := c.st.Signal(ctx, ref, name, b, o.key)
	if err != nil {
		var se *sluicetype.StateError
		if errors.As(err, &se) { // it names the job
			se.ID = id
			return false, fmt.Errorf("signal %q: %w", name, err)
		}
		return false, fmt.Errorf("signal %q to job %s: %w", name, id, err)
	}
	return res.Duplicate, nil
}

// MaxSignalKey bounds a signal's idempotency key.
const MaxSignalKey = 200

// SignalOption changes one Signal call.
type SignalOption func(*signalOptions)

type signalOptions struct {
	key   string
	keyed bool // WithSignalKey was given: an empty key is a mistake, not "no key"
}

// WithSignalKey makes the signal idempotent per job: a signal with the key
// of one sent to the job before is not kept again (a retry after an
// uncertain failure, a second click). Keys last as long as the job. An
// empty key is ErrInvalid (most likely an unset variable): the retry it
// was meant to make safe would keep the signal twice.
func WithSignalKey(key string) SignalOption {
	return func(o *signalOptions) { o.key, o.keyed = key, true }
}
