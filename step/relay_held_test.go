package step_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/step"
)

// TestRelayPastHeldEntries: an effect behind more held outbox entries than
// one relay call reads (notifications to a parent whose partition is at a
// newer data model, left for a newer process) is relayed all the same.
// The relay audit found that the held entries, which stay at the front of
// the outbox, filled every pass's batch: nothing behind them was relayed
// until the hold ended, and an effect waiting six days was dead-lettered
// unapplied.
func TestRelayPastHeldEntries(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"redis", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			rdb := backendClient(backend)
			reg := flow.NewRegistry()
			var foreign string
			register(t, reg, func(ctx context.Context, job *flow.Job[transfer]) error {
				return step.Commit(ctx, "credit", idempotency.IncrBy(foreign, job.Args.Cents))
			})
			e := newEnv(t, rdb, reg)
			foreign = e.NS + ":ledger:bank"
			ctx := context.Background()
			parent := keys.Partition{NS: e.NS, Queue: "parents", Index: 0}
			if err := rdb.Set(ctx, parent.DataModel(), "999", 0).Err(); err != nil {
				t.Fatal(err)
			}
			outbox := keys.Partition{NS: e.NS, Queue: "default", Index: 0}.Outbox()
			const held = 300 // past the relay's batch of 256
			pipe := rdb.Pipeline()
			for i := range held {
				pipe.XAdd(ctx, &redis.XAddArgs{Stream: outbox, Values: []any{
					"t", "n", "p", fmt.Sprintf("parents:0:parent%d", i), "s", "spawn", "c", fmt.Sprintf("child%d", i), "st", "completed", "r", ""}})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			e.run(transfer{Cents: 250}, flow.StateCompleted)
			e.waitValue(foreign, "250")
			// the effect's entry is deleted once its batch is done
			testkit.Until(t, &e.Sig.Relayed, nil, "the outbox to hold the held notifications alone", func() (bool, string) {
				n, err := rdb.XLen(ctx, outbox).Result()
				return err == nil && n == held, fmt.Sprintf("%d entries (%v), want %d", n, err, held)
			})
		})
	}
}
