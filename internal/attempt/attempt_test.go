package attempt

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

var (
	errLost    = errors.New("lease lost")
	errNet     = errors.New("connection refused")
	errTimeout = errors.New("timed out")
)

// toldHost answers as told: lost, the lease is known lost; expired, the
// local clock says it may have run out; confirm, Confirm's answer (errLost
// also marks the lease lost, as the runtime's does). confirms counts
// Confirm's round trips.
type toldHost struct {
	lost, expired bool
	confirm       error
	confirms      *int
}

func (h *toldHost) Known(string) bool                            { return true }
func (h *toldHost) Send(store.Checkpoint) store.CheckpointResult { return store.CheckpointResult{} }
func (h *toldHost) Lose()                                        {}
func (h *toldHost) Committed(string, int)                        {}
func (h *toldHost) Relay(context.Context, []keys.Partition) bool { return false }
func (h *toldHost) Expired() bool                                { return h.expired }
func (h *toldHost) LeaseLeft() (time.Duration, <-chan struct{}) {
	return 0, nil
}

func (h *toldHost) Lost() error {
	if h.lost {
		return errLost
	}
	return nil
}

func (h *toldHost) Confirm(context.Context) error {
	*h.confirms++
	if h.confirm == errLost {
		h.lost = true
	}
	return h.confirm
}

// hooked is a State whose host answers as told (toldHost).
func hooked(lost, expired bool, confirm error, confirms *int) *State {
	return &State{Host: &toldHost{lost: lost, expired: expired, confirm: confirm, confirms: confirms}}
}

func cancelledCtx() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errTimeout)
	return ctx
}

// TestCheck: the step boundary asks Redis (Confirm) only when strict or
// when the lease may have expired by the worker's clock; a lease known
// lost is store.ErrStale wrapping why; a cancelled context is its cause.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cancel   bool
		strict   bool
		lost     bool
		expired  bool
		confirm  error
		want     []error // errors.Is targets; none: nil
		confirms int
	}{
		{name: "owned"},
		{name: "owned, strict", strict: true, confirms: 1},
		{name: "known lost", lost: true, want: []error{store.ErrStale, errLost}},
		{name: "known lost, strict", lost: true, strict: true, want: []error{store.ErrStale, errLost}},
		{name: "cancelled", cancel: true, want: []error{errTimeout}},
		{name: "cancelled, strict", cancel: true, strict: true, want: []error{errTimeout}},
		{name: "expired, still held", expired: true, confirms: 1},
		{name: "expired, gone", expired: true, confirm: errLost, want: []error{store.ErrStale, errLost}, confirms: 1},
		{name: "expired, Redis down", expired: true, confirm: errNet, want: []error{errNet}, confirms: 1},
		{name: "strict, gone", strict: true, confirm: errLost, want: []error{store.ErrStale, errLost}, confirms: 1},
		{name: "strict, Redis down", strict: true, confirm: errNet, want: []error{errNet}, confirms: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			confirms := 0
			s := hooked(tc.lost, tc.expired, tc.confirm, &confirms)
			ctx := context.Background()
			if tc.cancel {
				ctx = cancelledCtx()
			}
			check(t, s.Check(ctx, tc.strict), tc.want)
			if confirms != tc.confirms {
				t.Errorf("%d round trips (Confirm), want %d", confirms, tc.confirms)
			}
		})
	}
}

// TestOwned: Owned is the ownership half of Check: never strict, blind to
// the context's cancellation.
func TestOwned(t *testing.T) {
	confirms := 0
	check(t, hooked(false, false, nil, &confirms).Owned(cancelledCtx()), nil)
	check(t, hooked(true, false, nil, &confirms).Owned(context.Background()), []error{store.ErrStale, errLost})
	check(t, hooked(false, true, errLost, &confirms).Owned(context.Background()), []error{store.ErrStale, errLost})
	if confirms != 1 {
		t.Errorf("%d round trips, want 1 (the expired lease)", confirms)
	}
}

// TestCheckWithoutHost: a State nothing runs checks the context only,
// cannot be strict, and commits nothing.
func TestCheckWithoutHost(t *testing.T) {
	s := &State{}
	check(t, s.Check(context.Background(), false), nil)
	check(t, s.Check(cancelledCtx(), false), []error{errTimeout})
	check(t, s.Check(context.Background(), true), []error{errNoHost})
	check(t, s.Owned(context.Background()), nil)
	check(t, s.Commit("step", nil, "", "", nil), []error{errNoHost})
}

func check(t *testing.T, err error, want []error) {
	t.Helper()
	if len(want) == 0 && err != nil {
		t.Errorf("err %v, want nil", err)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("err %v, want it to match %v", err, w)
		}
	}
}
