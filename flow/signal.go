package flow

import (
	"context"
	"errors"
	"fmt"
	"time"
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
// A signal names its job by ID alone, unless WithSignalJobCreated names
// its creation time too. Where IDs come back (WithID, after the job is
// deleted), a signal sent, or retried, once another job has the ID is
// that job's; with WithSignalJobCreated it is refused, checked in the
// call that would keep it.
//
// Errors: ErrInvalid (a malformed ID, name or key, a payload that does not
// encode or is over MaxSignalPayload), ErrNotFound (no such job), a
// *sluicetype.StateError (ErrWrongState) for a job that has finished or
// whose deadline (WithDeadline) has passed by Redis's clock (it is
// archived, deadline_exceeded, instead of running: no wait takes the
// signal; a retry with the key of one kept before succeeds), or
// a *sluicetype.OtherJobError (ErrWrongState) for another job under the
// ID than WithSignalJobCreated names.
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
		return false, fmt.Errorf("%w: signal %q to job %s: encoding the payload: %v", ErrInvalid, name, names.Quote(id), err)
	}
	if len(b) > MaxSignalPayload {
		return false, fmt.Errorf("%w: signal %q to job %s: payload of %d bytes, the limit is %d", ErrInvalid, name, names.Quote(id), len(b), MaxSignalPayload)
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
	var of store.Created
	if o.dated {
		if o.from.IsZero() || !o.before.After(o.from) {
			return false, fmt.Errorf("%w: a signal to the job created %s (JobInfo.Created names a job)", ErrInvalid, o.from)
		}
		of = store.Created{From: o.from, Before: o.before}
	}
	res, err := c.st.SignalOf(ctx, ref, name, b, o.key, of)
	if err != nil {
		var se *sluicetype.StateError
		if errors.As(err, &se) { // it names the job
			se.ID = id
			return false, fmt.Errorf("signal %q: %w", name, err)
		}
		// the ID as given, which names no job when it is not found: cut
		// when long, as the refusals above cut it
		return false, fmt.Errorf("signal %q to job %s: %w", name, names.Quote(id), err)
	}
	return res.Duplicate, nil
}

// MaxSignalKey bounds a signal's idempotency key.
const MaxSignalKey = 200

// SignalOption changes one Signal call.
type SignalOption func(*signalOptions)

type signalOptions struct {
	key          string
	keyed        bool      // WithSignalKey was given: an empty key is a mistake, not "no key"
	from, before time.Time // the job's creation time, at or after from and before before
	dated        bool      // WithSignalJobCreated was given: a zero time is a mistake
}

// WithSignalKey makes the signal idempotent per job: a signal with the key
// of one sent to the job before is not kept again (a retry after an
// uncertain failure, a second click). Keys last as long as the job. An
// empty key is ErrInvalid (most likely an unset variable): the retry it
// was meant to make safe would keep the signal twice.
func WithSignalKey(key string) SignalOption {
	return func(o *signalOptions) { o.key, o.keyed = key, true }
}

// WithSignalJobCreated sends the signal only to the job of the ID that was
// created at created (JobInfo.Created; kept to the millisecond), checked
// in the call that keeps it: a job given the ID since (the one meant was
// deleted and the ID enqueued again) is sent nothing, and the call fails
// with a *sluicetype.OtherJobError naming its creation time. The zero
// time is ErrInvalid.
func WithSignalJobCreated(created time.Time) SignalOption {
	if created.IsZero() {
		return signalCreatedIn(created, created)
	}
	at := time.UnixMilli(created.UnixMilli()) // kept to the ms
	return signalCreatedIn(at, at.Add(time.Millisecond))
}

// signalCreatedIn sends a signal only to the job created at or after from
// and before before (admin.Client.SignalOf: a time as a tool shows it, to
// its precision).
func signalCreatedIn(from, before time.Time) SignalOption {
	return func(o *signalOptions) { o.from, o.before, o.dated = from, before, true }
}
