package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
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
	must(t, flow.Register(reg, func(_ context.Context, job *flow.Job[workArgs]) error {
		ran <- job.Args.N
		return nil
	}))
	var ids []string
	for i := range 3 {
		ids = append(ids, e.enqueue(workArgs{N: i}))
	}
	ref, ok := keys.ParseRef(e.ns, ids[1])
	if !ok {
		t.Fatalf("bad job ID %q", ids[1])
	}
	must(t, e.rdb.HSet(ctx, ref.Job(ref.Local), "pr", "high").Err()) // not a number
	e.startWorker(reg, runtime.Options{ClaimBatch: 10})
	for _, id := range []string{ids[0], ids[2]} {
		e.waitState(id, flow.StateCompleted)
	}
	eventually(t, "the undecodable job archived as malformed", func() (bool, string) {
		h := e.rawJob(ids[1])
		s := store.StateName(h["s"])
		return s == "archived" && h["xr"] == "malformed", fmt.Sprintf("state %q, reason %q", s, h["xr"])
	})
	close(ran)
	for n := range ran {
		if n == 1 {
			t.Error("the undecodable job's handler ran")
		}
	}
}
