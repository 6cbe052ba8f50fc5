package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestCheckpointOfAMarkedJob: a step commit whose worker knows the job is
// marked as having checkpoints (store.ModeOnceMarked) is checked and
// answered as a ModeOnce one: a stale attempt's writes nothing, a step
// done already is ErrStepDone, the same commit sent again is ok; only
// the mark is not read. A job's first commit, in ModeOnce, marks it, and
// the next claim of the job says so (Job.Checkpointed).
func TestCheckpointOfAMarkedJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			old := f.claimOne("a")
			if old.Checkpointed {
				t.Fatal("a job with no checkpoints claimed as having some")
			}
			commit := func(j *store.Job, field, record, mode string) error {
				_, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: field, Record: []byte(record), Mode: mode})
				return err
			}
			if err := commit(old, "s1", "r1", store.ModeOnce); err != nil {
				t.Fatal(err)
			}
			if v, _ := f.rdb.HGet(f.ctx, f.p.Job("job"), keys.FieldHasSteps).Result(); v == "" {
				t.Fatal("the first commit did not mark the job")
			}
			if err := commit(old, "s2", "r2", store.ModeOnceMarked); err != nil {
				t.Fatal(err)
			}
			if err := commit(old, "s2", "r2", store.ModeOnceMarked); err != nil {
				t.Fatalf("the same commit again: %v", err)
			}
			if err := commit(old, "s2", "other", store.ModeOnceMarked); !errors.Is(err, store.ErrStepDone) {
				t.Fatalf("a step done already: %v, want ErrStepDone", err)
			}
			f.clk.Advance(time.Minute)
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Minute) // past the crash delay
			cur := f.claimOne("b")
			if !cur.Checkpointed || string(cur.Steps["s2"]) != "r2" {
				t.Fatalf("claim of a job with checkpoints: Checkpointed %v, steps %q", cur.Checkpointed, cur.Steps)
			}
			if err := commit(old, "s3", "r3", store.ModeOnceMarked); !errors.Is(err, store.ErrStale) {
				t.Fatalf("a stale attempt's commit: %v, want ErrStale", err)
			}
			if v, _ := f.rdb.HGet(f.ctx, f.p.Steps("job"), "s3").Result(); v != "" {
				t.Fatalf("a stale commit wrote %q", v)
			}
			if err := commit(cur, "s3", "r3", store.ModeOnceMarked); err != nil {
				t.Fatal(err)
			}
		})
	}
}
