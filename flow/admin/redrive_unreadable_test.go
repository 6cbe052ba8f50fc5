package admin_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestRedriveByIDOfAJobKeyOfAnotherType: Redrive and Release by ID name
// a job whose key holds another type than a hash ErrMalformed in its
// own Failed entry (docs/errors.md: an operator's call on such a job),
// not ErrNotFound, which tells the operator there is nothing there; the
// other jobs of the call are moved all the same.
func TestRedriveByIDOfAJobKeyOfAnotherType(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	dead := a.enqueue(email{To: "dead"}, flow.WithMaxAttempts(1))
	a.finish("default", 1, 0, failAck)
	p0 := keys.Partition{NS: a.ns, Queue: "default", Index: 0}
	testkit.Must(t, a.st.Client().Set(a.ctx, p0.Job("bad"), "not a hash", 0).Err())
	bad := keys.Ref{Partition: p0, Local: "bad"}.String()

	rep, err := a.ops.Redrive(a.ctx, dead, bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Moved) != 1 || rep.Moved[0] != dead {
		t.Fatalf("moved %v, want %s", rep.Moved, dead)
	}
	if e := rep.Failed[bad]; !errors.Is(e, flow.ErrMalformed) || errors.Is(e, flow.ErrNotFound) {
		t.Errorf("redrive of a job key of another type: %v, want ErrMalformed", e)
	}
	rep, err = a.ops.Release(a.ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if e := rep.Failed[bad]; !errors.Is(e, flow.ErrMalformed) || errors.Is(e, flow.ErrNotFound) {
		t.Errorf("release of a job key of another type: %v, want ErrMalformed", e)
	}
}

// TestRedriveByIDOfAJobWhoseStateNamesNoState: Redrive and Release by ID
// of a job whose state field names no state (corrupt data) report
// ErrMalformed in its entry, not a *StateError (ErrWrongState) naming a
// state that does not exist, which tells the operator the job is fine
// and in another state; nothing is written for it.
func TestRedriveByIDOfAJobWhoseStateNamesNoState(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	bad := a.enqueue(email{To: "bad"}, flow.WithMaxAttempts(1))
	a.finish("default", 1, 0, failAck)
	ref, _ := keys.ParseRef(a.ns, bad)
	testkit.Must(t, a.st.Client().HSet(a.ctx, ref.Job(ref.Local), keys.FieldState, "bogus").Err())
	for name, call := range map[string]func() (admin.RedriveReport, error){
		"redrive": func() (admin.RedriveReport, error) { return a.ops.Redrive(a.ctx, bad) },
		"release": func() (admin.RedriveReport, error) { return a.ops.Release(a.ctx, bad) },
	} {
		rep, err := call()
		if err != nil {
			t.Fatal(err)
		}
		if e := rep.Failed[bad]; !errors.Is(e, flow.ErrMalformed) || errors.Is(e, admin.ErrWrongState) {
			t.Errorf("%s of a job whose state names no state: %v, want ErrMalformed", name, e)
		}
	}
	if s, _ := a.st.Client().HGet(a.ctx, ref.Job(ref.Local), keys.FieldState).Result(); s != "bogus" {
		t.Errorf("state field %q after the refusals, want it untouched", s)
	}
}
