package admin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// ErrSignalNotFound: DiscardSignal named a signal the job does not keep.
var ErrSignalNotFound = sluicetype.ErrSignalNotFound

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

// SignalOf is Signal only to the job of the ID created at or after from
// and before before (its creation time as a tool showed it, to the
// precision shown), checked in the call that keeps it: another job under
// the ID (the one meant was deleted and the ID given to a new job) is
// sent nothing, an *OtherJobError naming its creation time.
func (c *Client) SignalOf(ctx context.Context, id, name string, payload any, from, before time.Time, opts ...flow.SignalOption) (SignalResult, error) {
	all := append(slices.Clip(opts), c.b.SignalCreatedIn(from, before).(flow.SignalOption))
	return c.Signal(ctx, id, name, payload, all...)
}

// DiscardSignal discards the next signal named name sent to job id and
// not yet taken by a wait: the earliest, which a wait would take next. It
// returns the signal discarded, so that it can be sent again corrected;
// none of the name kept is ErrSignalNotFound, naming job and signal. A
// signal whose payload the job's wait cannot decode parks the job
// (reason bad_signal) again at every redrive while it is kept: discard
// it, then redrive the job, which takes the next signal of the name or
// waits for one. (A job parked bad_signal whose wait decided on a signal
// before, and whose code no longer decodes that payload, keeps no signal
// to discard: it needs code that decodes it.) A discarded signal sent
// with a key (flow.WithSignalKey) keeps its key used: a corrected one
// needs another key. A running job is refused (its attempt may be taking
// it), as is a completed one: a *StateError (ErrWrongState). No such
// job: flow.ErrNotFound. An invalid name: flow.ErrInvalid. Corrupt
// signal data: ErrMalformed.
func (c *Client) DiscardSignal(ctx context.Context, id, name string) (flow.SignalInfo, error) {
	return c.discardSignal(ctx, id, name, 0, time.Time{}, time.Time{})
}

// DiscardSignalSeq discards signal name number seq (flow.SignalInfo.Seq,
// as JobInfo.Signals lists it) of job id, as DiscardSignal does, only if
// it is still the next one of its name kept: a tool that showed an
// operator that signal discards no other (one a wait took since, or that
// another operator discarded, is followed by the next). Otherwise it
// discards nothing and returns ErrSignalNotFound naming the next kept, if
// any. seq below 1 is flow.ErrInvalid; other errors as DiscardSignal's.
func (c *Client) DiscardSignalSeq(ctx context.Context, id, name string, seq int64) (flow.SignalInfo, error) {
	if seq < 1 {
		return flow.SignalInfo{}, fmt.Errorf("%w: signal number %d (they start at 1)", flow.ErrInvalid, seq)
	}
	return c.discardSignal(ctx, id, name, seq, time.Time{}, time.Time{})
}

// OtherJobError: DiscardSignalOf found another job under the ID, created
// at another time than the range it was given. It matches ErrWrongState.
type OtherJobError = sluicetype.OtherJobError

// DiscardSignalOf discards as DiscardSignalSeq does (seq 0: as
// DiscardSignal does, the next one kept) only if job id is the one
// created at or after from and before before, checked in the same
// script call as the discard: a job given the ID since a tool showed the
// job (deleted and created again, numbering its signals from 1 again)
// loses nothing. Another job is an *OtherJobError (ErrWrongState),
// nothing discarded; from not before before is flow.ErrInvalid; a job
// whose created-time field is no whole number of ms (corrupt data, which
// tells no job) is ErrMalformed, nothing discarded. Other errors as
// DiscardSignalSeq's.
func (c *Client) DiscardSignalOf(ctx context.Context, id, name string, seq int64, from, before time.Time) (flow.SignalInfo, error) {
	if seq < 0 {
		return flow.SignalInfo{}, fmt.Errorf("%w: signal number %d (they start at 1)", flow.ErrInvalid, seq)
	}
	if from.IsZero() || !from.Before(before) {
		return flow.SignalInfo{}, fmt.Errorf("%w: creation time range %s to %s holds no time", flow.ErrInvalid, from, before)
	}
	return c.discardSignal(ctx, id, name, seq, from, before)
}

// notNextSignal says that signal name number seq of job id is not the
// next one of its name the job keeps, next: one below was taken by a
// wait or discarded, one above is behind it (or another name's).
func notNextSignal(id, name string, seq, next int64) string {
	if seq < next {
		return fmt.Sprintf("signal %s #%d of job %s is not the next one kept (a wait took it, or it was discarded; the next is #%d)", name, seq, id, next)
	}
	return fmt.Sprintf("signal %s #%d of job %s is not the next one kept (#%d comes first)", name, seq, id, next)
}

func (c *Client) discardSignal(ctx context.Context, id, name string, only int64, from, before time.Time) (flow.SignalInfo, error) {
	if !store.ValidWaitName(name) {
		return flow.SignalInfo{}, fmt.Errorf("%w: signal name %s", flow.ErrInvalid, names.Quote(name))
	}
	ref, err := c.ref(id)
	if err != nil {
		return flow.SignalInfo{}, err
	}
	seq, payload, _, err := c.b.Store.UnsignalOf(ctx, ref, name, only, from, before)
	if err != nil {
		return flow.SignalInfo{}, stateError(id, err)
	}
	switch {
	case seq == 0 && only > 0:
		return flow.SignalInfo{}, fmt.Errorf("%w: job %s keeps no signal %s (sent and not yet taken; #%d was taken by a wait, discarded, or never sent): nothing discarded",
			ErrSignalNotFound, id, name, only)
	case seq == 0:
		return flow.SignalInfo{}, fmt.Errorf("%w: job %s keeps no signal %s (sent and not yet taken)", ErrSignalNotFound, id, name)
	case seq < 0:
		return flow.SignalInfo{}, fmt.Errorf("%w: %s: nothing discarded", ErrSignalNotFound, notNextSignal(id, name, only, -seq))
	}
	return flow.SignalInfo{Name: name, Seq: seq, Payload: payload}, nil
}
