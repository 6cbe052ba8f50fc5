package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// TestConfinedWorkerFinishesWatchedJobOnce: a worker whose Redis user may
// use the namespace's channels only (&<ns>:*, as docs/operations.md says
// suffices) completes a job a caller waits on (flow.Client.Wait, from an
// unconfined client): its completion effect applies once, and Wait
// returns the completed job. Before, finish published on
// "{ns:default:0}:fin", outside ns:*: Redis refused the PUBLISH inside the
// ack script after its first writes, the script raised, and the ack's
// re-send applied the effect again (found by an audit).
func TestConfinedWorkerFinishesWatchedJobOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	confined := nsUser(t, e)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		return step.OnComplete(ctx, idempotency.IncrBy("{"+e.NS+":default:0}:audit-count", 1))
	}))
	id := e.Enqueue(workArgs{N: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	type outcome struct {
		info *flow.JobInfo
		err  error
	}
	out := make(chan outcome, 1)
	go func() {
		info, err := e.Client.Wait(ctx, id)
		out <- outcome{info, err}
	}()
	ref, _ := keys.ParseRef(e.NS, id)
	redistest.Eventually(t, "the job to be watched", func() bool {
		n, _ := e.RDB.HExists(context.Background(), ref.Job(ref.Local), keys.FieldWatched).Result()
		return n
	})
	sig := testsignal.NewWorker()
	testkit.StartWorker(t, confined, reg, runtime.Options{Namespace: e.NS, IdlePoll: time.Hour, MaintenanceInterval: time.Hour}, sig)
	o := <-out
	h, _ := e.RDB.HGetAll(context.Background(), ref.Job(ref.Local)).Result()
	run, _ := e.RDB.ZScore(context.Background(), ref.Prefix()+"run", ref.Local).Result()
	t.Logf("job hash state field %q, run index score %v", h[keys.FieldState], run)
	n, _ := e.RDB.Get(context.Background(), "{"+e.NS+":default:0}:audit-count").Int()
	stats, _ := e.RDB.HGetAll(context.Background(), ref.Prefix()+"stats").Result()
	t.Logf("completion effect applied %d times; partition stats %v", n, stats)
	if n != 1 {
		t.Errorf("the job's completion effect was applied %d times, want 1", n)
	}
	if o.err != nil || o.info.State != flow.StateCompleted {
		t.Fatalf("Wait: %v %v, want the completed job", o.info, o.err)
	}
}
