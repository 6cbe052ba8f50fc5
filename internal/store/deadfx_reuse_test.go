package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestDeadEffectOfDeletedJob: a completed job's relayed effect that
// cannot apply is dead-lettered after the job was deleted and a new job
// enqueued under its ID: the new job, which committed nothing, is not
// charged the old one's dead effect and error, and the dead effect is
// listed. A helper's audit found it charged to the new job.
func TestDeadEffectOfDeletedJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			bad := redistest.Elsewhere(f.p.NS, "list", f.p.Tag())
			f.rdb.RPush(f.ctx, bad, "x") // INCRBY cannot apply to a list
			f.commitElsewhere("X", bad, "5")
			if _, err := f.st.Delete(f.ctx, f.ref("X")); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Second)
			f.enqueue(store.NewJob{Local: "X"}) // a new job under the deleted one's ID, later
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || len(res.Dead) != 1 {
				t.Fatalf("relay: %+v %v, want 1 dead", res, err)
			}
			got, recs := f.get("X")
			if got.DeadEffects != 0 || len(recs) != 0 {
				t.Fatalf("the new job X (never run) is charged %d dead effects, errors %+v", got.DeadEffects, recs)
			}
			if dead, err := f.st.DeadEffects(f.ctx, f.p, "", 10); err != nil || len(dead) != 1 || dead[0].Job != "X" {
				t.Errorf("dead effects %+v, %v: want the old job's, listed", dead, err)
			}
		})
	}
}
