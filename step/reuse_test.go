package step_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/step"
)

type deposit struct{ Cents int64 }

func (deposit) Kind() string { return "deposit" }

// TestReusedIDCommitsApart: a job enqueued again under the ID of a job
// deleted before names its commits apart from the old job's: its step's
// and its completion's effects on keys in other slots are relayed, not
// taken for the old job's (whose relay markers are kept seven days).
func TestReusedIDCommitsApart(t *testing.T) {
	t.Parallel()
	rdb := shared.Server.Client()
	reg := flow.NewRegistry()
	var ledger, done string
	register(t, reg, func(ctx context.Context, job *flow.Job[deposit]) error {
		if err := step.Commit(ctx, "credit", idempotency.IncrBy(ledger, job.Args.Cents)); err != nil {
			return err
		}
		return step.OnComplete(ctx, idempotency.IncrBy(done, 1))
	})
	e := newEnv(t, rdb, reg)
	home := keys.Partition{NS: e.NS, Queue: "default"}.Tag()
	ledger, done = redistest.Elsewhere(e.NS, "ledger", home), redistest.Elsewhere(e.NS, "done", home)
	ctx := context.Background()
	for i, cents := range []int64{5, 7} {
		res, err := e.Client.Enqueue(ctx, deposit{Cents: cents}, flow.WithID("order-1"))
		if err != nil || res.Duplicate {
			t.Fatalf("enqueue %d: %+v %v", i, res, err)
		}
		e.WaitState(res.ID, flow.StateCompleted)
		if err := admin.New(e.Client).DeleteJob(ctx, res.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.waitValue(ledger, "12")
	e.waitValue(done, "2")
}
