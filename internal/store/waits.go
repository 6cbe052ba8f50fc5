package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// MaxWaitName bounds the name of a timer or a signal.
const MaxWaitName = 100

// ValidWaitName reports whether name can name a timer or a signal: 1 to
// MaxWaitName letters, digits and "_./-", as step names.
func ValidWaitName(name string) bool { return names.Valid(name, MaxWaitName, "_./-") }

// WaitSpec is the Ack.Data of a CodeWait ack that names the children it
// waits for (sluicetype.WaitingError.Children): a packed list, which
// lua/ack.lua tells from a count by its first byte.
func WaitSpec(children []string) []byte {
	l := newArgList(16 * len(children))
	for _, c := range children {
		l.str(c)
	}
	return l.done()
}

// SuspendSpec is the Ack.Data of a CodeSuspend ack: e's waits, one per
// line, as lua/lib_waits.lua's parse_waits reads them.
func SuspendSpec(e *sluicetype.SuspendedError) (string, error) {
	if len(e.Timers)+len(e.Signals) == 0 {
		return "", fmt.Errorf("%w: a suspension with nothing to wait for", ErrInvalidWait)
	}
	var b strings.Builder
	for _, t := range e.Timers {
		if !ValidWaitName(t.Name) {
			return "", fmt.Errorf("%w: timer name %q", ErrInvalidWait, t.Name)
		}
		switch {
		case !t.At.IsZero() && !TimeInRange(t.At):
			return "", fmt.Errorf("%w: timer %q at %v, past %v", ErrInvalidWait, t.Name, t.At, MaxTime)
		// wake times in whole milliseconds, rounded up: a timer never fires
		// before the time it was given (SleepUntil returned up to a
		// millisecond early, by the store's clock)
		case !t.At.IsZero():
			fmt.Fprintf(&b, "t %s a %d\n", t.Name, max(unixMSUp(t.At), 0))
		case t.After >= 0:
			fmt.Fprintf(&b, "t %s d %s\n", t.Name, strconv.FormatInt(msUp(t.After), 10))
		default:
			return "", fmt.Errorf("%w: timer %q after %s", ErrInvalidWait, t.Name, t.After)
		}
	}
	for _, s := range e.Signals {
		if !ValidWaitName(s) {
			return "", fmt.Errorf("%w: signal name %q", ErrInvalidWait, s)
		}
		b.WriteString("s " + s + "\n")
	}
	return b.String(), nil
}

// ErrInvalidWait: a suspension names a timer or signal that cannot be, or
// nothing to wait for.
var ErrInvalidWait = errors.New("sluice: invalid wait")

// SignalResult is what sending a signal did.
type SignalResult struct {
	State     string // the job's state after the call
	Duplicate bool   // a signal with the same key was sent before: nothing kept
}

// Signal keeps the signal name with payload for the job of ref until one of
// its steps takes it, and wakes the job if it is suspended waiting for it
// (lua/signal.lua). key, when not "", makes it idempotent: a signal with
// the key of one sent to the job before keeps nothing (Duplicate), also
// once the job has finished. Errors: ErrNotFound, or a
// *sluicetype.StateError for a finished job the key was not sent to, or
// one whose deadline has passed by store time (archived by the claim
// that meets it: no wait of it takes a signal).
func (s *Store) Signal(ctx context.Context, ref keys.Ref, name string, payload []byte, key string) (SignalResult, error) {
	return s.SignalOf(ctx, ref, name, payload, key, Created{})
}

// SignalOf is Signal to the job of ref only if it is the one created in
// of's range (the zero Created: any job of the ID), checked in the same
// script call: a job given the ID since is sent nothing, a
// *sluicetype.OtherJobError.
func (s *Store) SignalOf(ctx context.Context, ref keys.Ref, name string, payload []byte, key string, of Created) (SignalResult, error) {
	args := []any{ref.Local, name, payload, key}
	if !of.From.IsZero() {
		lo, hi, idAt := of.args(ref.Local)
		args = append(args, lo, hi, idAt)
	}
	v, err := s.run(ctx, lua.Signal, ref.Partition, args...).Result()
	if err != nil {
		return SignalResult{}, err
	}
	r, err := strs(v)
	if err == nil && len(r) == 3 && r[0] == statusConflict {
		return SignalResult{State: r[1]}, otherJob(ref, r[2])
	}
	if err != nil || len(r) != 2 {
		return SignalResult{}, fmt.Errorf("%w: signal reply %v", ErrMalformed, v)
	}
	if r[0] == statusExists {
		return SignalResult{State: r[1], Duplicate: true}, nil
	}
	if dl, ok := strings.CutPrefix(r[0], statusPastDeadline); ok {
		ms, _ := strconv.ParseInt(dl, 10, 64)
		return SignalResult{State: r[1]}, &sluicetype.StateError{ID: ref.Local, Op: "signal", State: r[1],
			Why: "its deadline " + time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) + " has passed: it is archived (deadline_exceeded) instead of running, and no wait of it takes a signal"}
	}
	state, err := adminStatus("signal", ref.Local, r[0], r[1])
	return SignalResult{State: state}, err
}

// Unsignal discards the next signal named name kept for the job of ref
// and not yet taken (the earliest, which a wait would take next;
// lua/unsignal.lua) and returns its sequence number (0: none was kept)
// and payload, with the job's state. With only > 0 it discards that
// signal only if it is the next one, and answers the next one's number
// negated otherwise, nothing discarded. Errors: ErrNotFound, a
// *sluicetype.StateError for a running job (its attempt may be taking
// it) or a completed one, ErrMalformed for corrupt signal data.
func (s *Store) Unsignal(ctx context.Context, ref keys.Ref, name string, only int64) (seq int64, payload []byte, state string, err error) {
	return s.UnsignalOf(ctx, ref, name, only, time.Time{}, time.Time{})
}

// UnsignalOf is Unsignal of the job of ref only if it was created at or
// after from and before before (from zero: any job of the ID), checked
// in the same script call as the discard: a job given the ID since
// (which numbers its signals from 1 again) loses nothing. Another job is
// a *sluicetype.OtherJobError, nothing discarded.
func (s *Store) UnsignalOf(ctx context.Context, ref keys.Ref, name string, only int64, from, before time.Time) (seq int64, payload []byte, state string, err error) {
	want := ""
	if only > 0 {
		want = strconv.FormatInt(only, 10)
	}
	lo, hi, idAt := Created{From: from, Before: before}.args(ref.Local)
	v, err := s.run(ctx, lua.Unsignal, ref.Partition, ref.Local, name, want, lo, hi, idAt).Result()
	if err != nil {
		return 0, nil, "", err
	}
	r, ok := v.([]any)
	var status, body string
	if ok && len(r) == 4 {
		status, _ = r[0].(string)
		state, _ = r[1].(string)
		body, _ = r[3].(string)
		seq, ok = r[2].(int64)
	}
	if !ok || status == "" {
		return 0, nil, "", fmt.Errorf("%w: unsignal reply %v", ErrMalformed, v)
	}
	if status == statusConflict {
		return 0, nil, state, &sluicetype.OtherJobError{ID: ref.String(), Created: time.UnixMilli(seq)}
	}
	if state, err = adminStatus("discard a signal of", ref.Local, status, state); err != nil || seq <= 0 {
		return seq, nil, state, err
	}
	return seq, []byte(body), state, nil
}

// ModeTake is the mode of a step commit that takes the signal kept in
// field (a checkpoint.SignalPrefix field) with its checkpoint.
func ModeTake(field string) string { return "take:" + field }
