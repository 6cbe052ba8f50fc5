package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestShortRetentionKeepsThePendingDeathReport: with an archived
// retention shorter than a death report's grace (30 s), the job is kept
// DeathKeep, so that its pending report, which deleting it deletes, is
// still there for another worker's death sweep once its own worker died
// before its handler ran. Before, the retention sweep deleted both, and
// no handler ever ran for that death.
func TestShortRetentionKeepsThePendingDeathReport(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.st = store.New(b.rdb, store.Config{
				NS: redistest.NewNamespace(t), RetainCompleted: retainCompleted, RetainArchived: 5 * time.Second,
				RetainCancelled: retainCancelled, CrashLimit: 3, CrashDelay: time.Second, Now: f.clk.Now,
			})
			f.p = f.st.Partition("q", 0)
			f.enqueue(store.NewJob{Local: "d"})
			if r := f.ack(f.claimOne("w1"), store.Ack{Code: store.CodeSkip}); r.State != "archived" {
				t.Fatalf("skip: %+v", r)
			}
			if score, err := f.rdb.ZScore(f.ctx, f.p.Terminal("archived"), "d").Result(); err != nil ||
				score != float64(f.clk.Now().Add(store.DeathKeep).UnixMilli()) {
				t.Errorf("archived d deleted at %v (%v), want now + DeathKeep", score, err)
			}
			// w1 died before its death handler ran; maintenance goes on
			f.clk.Advance(6 * time.Second)
			if _, err := f.sweep(100); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(30 * time.Second)
			got, err := f.st.TakeDeaths(context.Background(), f.p, 100, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Local != "d" {
				t.Fatalf("a death sweep past the grace took %d reports, want d's (pending: %d)", len(got), f.rdb.ZCard(f.ctx, f.p.Deaths()).Val())
			}
			f.clk.Advance(store.DeathKeep)
			if _, err := f.sweep(100); err != nil {
				t.Fatal(err)
			}
			if f.rdb.Exists(f.ctx, f.p.Job("d")).Val() != 0 {
				t.Error("d is kept past DeathKeep")
			}
		})
	}
}
