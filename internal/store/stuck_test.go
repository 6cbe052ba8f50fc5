package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestProgressIsFenced: a running attempt's progress report is written to
// its job; a report of an attempt that lost the job, or of a job no longer
// running, is not.
func TestProgressIsFenced(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			a := f.claimOne("worker-a")
			ok, err := f.st.Progress(f.ctx, f.p, []store.ProgressReport{
				{Lease: lease(a), Percent: 12.5, State: "importing"},
				{Lease: store.Lease{Local: "job", LeaseID: "other", Fence: a.Fence}, Percent: 99, State: "stale"},
			})
			if err != nil || !cmp.Equal(ok, []bool{true, false}) {
				t.Fatalf("progress = %v, %v; want [true false]", ok, err)
			}
			want := &sluicetype.Tracking{Percent: 12.5, State: "importing", At: epoch, Fence: a.Fence}
			if j, _ := f.get("job"); !cmp.Equal(j.Tracking, want) {
				t.Fatalf("tracking %+v, want %+v", j.Tracking, want)
			}
			f.ack(a, store.Ack{Code: store.CodeSnooze, Delay: time.Minute})
			ok, err = f.st.Progress(f.ctx, f.p, []store.ProgressReport{{Lease: lease(a), Percent: 50}})
			if err != nil || ok[0] {
				t.Fatalf("progress after the ack = %v, %v; want not written", ok, err)
			}
			if j, _ := f.get("job"); !cmp.Equal(j.Tracking, want) {
				t.Fatalf("tracking %+v after a stale report, want %+v", j.Tracking, want)
			}
		})
	}
}

// TestStuckEvidence: evidence of a stuck attempt is written while the job's
// lease ID and fence are the attempt's, even after its outcome was settled
// without it, but never once a newer attempt claimed the job.
func TestStuckEvidence(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			a := f.claimOne("worker-a")
			f.ack(a, store.Ack{Code: store.CodeRetry, Reason: "timeout", Message: "timed out"})
			rep := sluicetype.StuckInfo{
				Case: "ignored_stop", Why: "told to stop", Since: epoch.Add(-time.Minute), Step: "rows", Cursor: "3",
				Stack: strings.Repeat("x", store.StuckStackMax+10),
			}
			if ok, err := f.st.Stuck(f.ctx, f.p, lease(a), rep); err != nil || !ok {
				t.Fatalf("stuck = %v, %v; want written", ok, err)
			}
			want := rep
			want.LeaseID, want.Fence, want.At, want.Stack = a.LeaseID, a.Fence, epoch, rep.Stack[:store.StuckStackMax]
			j, _ := f.get("job")
			if !cmp.Equal(j.Stuck, &want) {
				t.Fatalf("stuck evidence %+v, want %+v", j.Stuck, want)
			}
			if j.State != "retryable" || j.Attempt != 1 {
				t.Fatalf("job %s attempt %d after the evidence, want retryable 1", j.State, j.Attempt)
			}
			f.clk.Advance(time.Hour)
			if _, err := f.promote(10); err != nil {
				t.Fatal(err)
			}
			bj := f.claimOne("worker-b")
			if ok, err := f.st.Stuck(f.ctx, f.p, lease(a), sluicetype.StuckInfo{Case: "no_progress"}); err != nil || ok {
				t.Fatalf("stale stuck = %v, %v; want not written", ok, err)
			}
			if j, _ := f.get("job"); !cmp.Equal(j.Stuck, &want) || j.Fence != bj.Fence {
				t.Fatalf("after a stale report: %+v fence %d", j.Stuck, j.Fence)
			}
			if ok, err := f.st.Stuck(f.ctx, f.p, store.Lease{Local: "gone", LeaseID: "x", Fence: 1}, rep); err != nil || ok {
				t.Fatalf("stuck on a missing job = %v, %v", ok, err)
			}
			if n, _ := f.rdb.Exists(f.ctx, keys.Ref{Partition: f.p, Local: "gone"}.Job("gone")).Result(); n != 0 {
				t.Fatal("a report created a missing job's hash")
			}
		})
	}
}
