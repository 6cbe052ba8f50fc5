package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestCrashRecordCountsItsCrash: an error record holds the job's counters
// with its own failure counted (sluicetype.ErrorRecord: "the counters at
// the time"), as a retry's does: the first error of a job is attempt 1.
// A crash's record (a panic acked, a lease the worker gave up, a lease the
// reaper took back) held the crash counter from before the crash: the
// first crash read crash 0, and the record of the crash that quarantined
// a job at the limit of 3 read crash 2, beside a retry record of the same
// counters, so that the history told no crash apart from the error before
// it.
func TestCrashRecordCountsItsCrash(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "e1"})
			f.clk.Advance(time.Minute)
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "p1"})
			f.clk.Advance(time.Minute)
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeExpire, Reason: "lease_expired", Message: "given up"})
			f.clk.Advance(time.Minute)
			f.claimOne("holder")
			f.clk.Advance(time.Minute)
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 || reaped[0].State != "quarantined" {
				t.Fatalf("reap: %+v %v, want the job quarantined", reaped, err)
			}
			j, recs := f.get("job")
			if j.State != "quarantined" || j.Attempt != 1 || j.CrashAttempt != 3 || len(recs) != 4 {
				t.Fatalf("job %s attempt %d crash_attempt %d, %d records; want quarantined 1 3 4", j.State, j.Attempt, j.CrashAttempt, len(recs))
			}
			want := []struct {
				class    string
				a, crash int
			}{{"lease_expired", 1, 3}, {"lease_expired", 1, 2}, {"panic", 1, 1}, {"error", 1, 0}} // newest first
			for i, w := range want {
				if r := recs[i]; r.Class != w.class || r.Attempt != w.a || r.CrashAttempt != w.crash {
					t.Errorf("record %d: %s attempt %d crash %d, want %s attempt %d crash %d", i, r.Class, r.Attempt, r.CrashAttempt,
						w.class, w.a, w.crash)
				}
			}
		})
	}
}
