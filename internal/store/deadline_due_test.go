package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDueNoLaterThanDeadline: an attempt that ends with the job due again
// after its deadline (a retry's backoff, a snooze, a rate-limited delay)
// makes it due at its deadline instead, where the claim
// that meets it archives it (deadline_exceeded) and a parent joining it is
// told. Before, it sat retryable or scheduled past its deadline until the
// delay ran out (an hour here): a deadline bounds the job's useful life,
// as a join's recheck and a suspension's timers already stop at it. A
// delay that ends before the deadline is kept as it was.
func TestDueNoLaterThanDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			t0 := f.clk.Now()
			dl := t0.Add(time.Minute)
			outcomes := map[string]store.Ack{
				"retry":  {Code: store.CodeRetry, Delay: time.Hour, Reason: "error", Message: "boom"},
				"snooze": {Code: store.CodeSnooze, Delay: time.Hour},
				"free":   {Code: store.CodeFree, Delay: time.Hour},
				"early":  {Code: store.CodeRetry, Delay: 10 * time.Second, Reason: "error", Message: "boom"},
			}
			for local := range outcomes {
				f.enqueue(store.NewJob{Local: local, Deadline: dl})
			}
			for _, j := range f.claim(10, "w").Jobs {
				f.ack(j, outcomes[j.Local])
			}
			for local := range outcomes {
				want := dl
				if local == "early" {
					want = t0.Add(10 * time.Second)
				}
				if j, _ := f.get(local); !j.RunAt.Equal(want) {
					t.Errorf("%s is %s due at %v, want %v (its deadline %v)", local, j.State, j.RunAt, want, dl)
				}
			}
			f.clk.Advance(10 * time.Second)
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["early"] {
				t.Fatalf("at 10 s claimed %v, want early", got)
			}
			f.clk.Advance(50 * time.Second)
			f.claimArchivesLate(3, "the three due after it")
		})
	}
}

// claimArchivesLate claims at a deadline and wants n jobs (what) archived
// deadline_exceeded, none leased.
func (f *fixture) claimArchivesLate(n int, what string) {
	f.t.Helper()
	res := f.claim(10, "w")
	if len(res.Jobs) != 0 || len(res.Parked) != n {
		f.t.Fatalf("at the deadline claimed %v, parked %v; want %s archived", locals(res.Jobs), res.Parked, what)
	}
	for _, p := range res.Parked {
		if p.Reason != "deadline_exceeded" {
			f.t.Errorf("%s parked %s, want deadline_exceeded", p.Local, p.Reason)
		}
	}
}
