package admin_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestJobBriefsCorruptFields: JobBriefs gives a job whose state field
// names no state, or whose attempt counter or creation time is not a
// number, its own Err
// (ErrMalformed), as it does a job key of another type, instead of a
// brief with that non-state, or a counter of 0, and no error; the other
// job is read as usual.
func TestJobBriefsCorruptFields(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	good := a.enqueue(email{To: "good"})
	noState := a.enqueue(email{To: "no state"})
	badCount := a.enqueue(email{To: "bad count"})
	badCreated := a.enqueue(email{To: "bad created"}, flow.WithID("bad-created"))
	rdb := a.st.Client()
	ref, _ := keys.ParseRef(a.ns, noState)
	testkit.Must(t, rdb.HSet(a.ctx, ref.Job(ref.Local), keys.FieldState, "bogus").Err())
	ref, _ = keys.ParseRef(a.ns, badCount)
	testkit.Must(t, rdb.HSet(a.ctx, ref.Job(ref.Local), keys.FieldAttempt, "zz").Err())
	ref, _ = keys.ParseRef(a.ns, badCreated)
	testkit.Must(t, rdb.HSet(a.ctx, ref.Job(ref.Local), keys.FieldCreated, "1.5e12").Err())

	bs, err := a.ops.JobBriefs(a.ctx, []string{good, noState, badCount, badCreated})
	if err != nil {
		t.Fatal(err)
	}
	if b := bs[good]; b.State != flow.StateAvailable || b.Err != nil {
		t.Errorf("brief of the readable job: %+v", b)
	}
	for _, id := range []string{noState, badCount, badCreated} {
		if b := bs[id]; !errors.Is(b.Err, flow.ErrMalformed) || b.State != "" {
			t.Errorf("brief of %s: %+v, want ErrMalformed and no state", id, b)
		}
	}
}
