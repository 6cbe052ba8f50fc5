package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// TestDeadEffectRecordHasStableKeys: the error record of a dead-lettered
// effect carries the keys docs/operations.md makes stable: its job, its
// queue and why it failed as err (it said "error", and no queue).
func TestDeadEffectRecordHasStableKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	home := keys.Partition{NS: e.NS, Queue: "default"}.Tag()
	bad := redistest.Elsewhere(e.NS, "list", home)
	testkit.Must(t, e.RDB.RPush(context.Background(), bad, "x").Err()) // INCRBY cannot apply to a list
	reg := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		return step.Commit(ctx, "pay", idempotency.IncrBy(bad, 5))
	})
	hooked := testkit.Chan[sluicetype.DeadEffect]()
	w, logs := e.startLogged(reg, runtime.Options{
		OnDeadEffect: func(_ context.Context, d sluicetype.DeadEffect) { hooked <- d }})
	id := e.Enqueue(obsArgs{})
	d := testkit.Recv(t, hooked, "OnDeadEffect to be called") // after its record
	recs := logs.records(t, func(m map[string]any) bool { return m["msg"] == "effect dead-lettered: it cannot be applied" })
	if len(recs) != 1 {
		t.Fatalf("%d dead-effect records, want 1", len(recs))
	}
	r := recs[0]
	if r["level"] != "ERROR" || r["worker"] != w.ID() || r["job"] != id || r["queue"] != "default" ||
		r["dead_effect"] != d.ID || r["op"] != "INCRBY" || r["key"] != bad {
		t.Errorf("record %v", r)
	}
	if err, _ := r["err"].(string); !strings.Contains(err, "holds a list") {
		t.Errorf("record %v: err %q, want why the effect failed", r, err)
	}
}
