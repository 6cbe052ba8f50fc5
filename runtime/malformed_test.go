package runtime_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestUndecodableJobParkedAlone: a claimed job whose hash holds a field
// the worker cannot decode (one the claim script does not check) is
// archived as malformed, and the jobs claimed with it still run.
func TestUndecodableJobParkedAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	ran := make(chan int, 10)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(_ context.Context, job *flow.Job[workArgs]) error {
		ran <- job.Args.N
		return nil
	}))
	var ids []string
	for i := range 3 {
		ids = append(ids, e.Enqueue(workArgs{N: i}))
	}
	ref, ok := keys.ParseRef(e.NS, ids[1])
	if !ok {
		t.Fatalf("bad job ID %q", ids[1])
	}
	testkit.Must(t, e.RDB.HSet(ctx, ref.Job(ref.Local), keys.FieldPriority, "high").Err()) // not a number
	e.startWorker(reg, runtime.Options{ClaimBatch: 10})
	// First: WaitState skips the signals of other jobs (and the client
	// cannot decode this one to read its state).
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == ids[1] }); s.State != flow.StateArchived {
		t.Errorf("the undecodable job was settled %+v, want archived", s)
	}
	if h := e.rawJob(ids[1]); store.StateName(h[keys.FieldState]) != "archived" || h[keys.FieldReason] != "malformed" {
		t.Errorf("the undecodable job: state %q, reason %q; want archived as malformed", store.StateName(h[keys.FieldState]), h[keys.FieldReason])
	}
	for _, id := range []string{ids[0], ids[2]} {
		e.WaitState(id, flow.StateCompleted)
	}
	close(ran)
	for n := range ran {
		if n == 1 {
			t.Error("the undecodable job's handler ran")
		}
	}
}
