package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestRenewalsApplyInTheirOrder: a renewal numbered no higher than the
// last one applied to its attempt moves nothing, whenever it reaches
// Redis: the re-send of the one that ran (go-redis sends a call again
// when its reply is lost) answers the lease held, as its first run did;
// one that arrives after a later one (a call that timed out on its way,
// sent before an ExtendLease) answers late, from which the worker reckons
// nothing. Before, every renewal set the lease to its own duration,
// so one of an older, shorter duration arriving last cut short a lease
// the worker reckoned with at its new length, and another worker could
// take the job while it still ran. Unnumbered renewals (0, an older
// worker's) apply as they always did, and a new attempt's numbers start
// afresh.
func TestRenewalsApplyInTheirOrder(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			expiry := func() time.Time {
				t.Helper()
				s, ok := f.score(f.p.Running(), "job")
				if !ok {
					t.Fatal("the job is not in the run index")
				}
				return time.UnixMilli(int64(s))
			}
			// renew sends renewal seq, and checks that it is answered held,
			// and late (it moved nothing: a later one ran first) or not
			renew := func(d time.Duration, seq int64, wantLate bool) {
				t.Helper()
				lost, late, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(j), Duration: d, Seq: seq}})
				if err != nil || len(lost) != 0 || (len(late) == 1) != wantLate || (wantLate && late[0] != j.LeaseID) {
					t.Fatalf("renewal %d: lost %+v, late %v, %v; want held, late %v", seq, lost, late, err, wantLate)
				}
			}

			f.clk.Advance(time.Second)
			renew(10*time.Minute, 2, false) // an ExtendLease
			long := epoch.Add(time.Second + 10*time.Minute)
			if got := expiry(); !got.Equal(long) {
				t.Fatalf("after renewal 2 the lease ends %v, want %v", got, long)
			}
			f.clk.Advance(time.Second)
			renew(30*time.Second, 1, true) // the loop's renewal sent before it, arriving late
			if got := expiry(); !got.Equal(long) {
				t.Fatalf("after a late renewal 1 the lease ends %v, want %v (renewal 2's)", got, long)
			}
			renew(10*time.Minute, 2, false) // a re-send of renewal 2: held, as its first run
			if got := expiry(); !got.Equal(long) {
				t.Fatalf("after a re-sent renewal 2 the lease ends %v, want %v (its first run's)", got, long)
			}

			f.clk.Advance(time.Second)
			renew(time.Minute, 3, false) // a later renewal applies, shorter or not
			short := epoch.Add(3*time.Second + time.Minute)
			if got := expiry(); !got.Equal(short) {
				t.Fatalf("after renewal 3 the lease ends %v, want %v", got, short)
			}
			f.clk.Advance(time.Second)
			renew(2*time.Minute, 0, false) // unnumbered: applied
			if got, want := expiry(), epoch.Add(4*time.Second+2*time.Minute); !got.Equal(want) {
				t.Fatalf("after an unnumbered renewal the lease ends %v, want %v", got, want)
			}

			// the next attempt numbers its renewals from 1 again
			f.clk.Advance(3 * time.Minute)
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 {
				t.Fatalf("reap: %+v, %v", reaped, err)
			}
			f.clk.Advance(time.Minute) // past the crash delay
			j = f.claimOne("w")
			renew(5*time.Minute, 1, false)
			if got, want := expiry(), f.clk.Now().Add(5*time.Minute); !got.Equal(want) {
				t.Fatalf("the next attempt's renewal 1: the lease ends %v, want %v", got, want)
			}
		})
	}
}

// TestRenewLateIsNoState: a renewal answered late is told apart from a
// lost lease whatever the job's state field holds: a corrupt state that
// reads as the late answer's text ("-4", "late") is a lost lease's state.
// Before, a state field reading "late" made a lost lease look held. And a
// corrupt mark of the last renewal applied makes renewals late, not held.
func TestRenewLateIsNoState(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			// a mark numbered past every renewal (corrupt data): each is
			// answered late, as it moves nothing, not held (the worker
			// would reckon a lease Redis never renewed)
			f.rdb.HSet(f.ctx, f.p.Job("job"), keys.FieldRenewal, j.LeaseID+" 9007199254740000")
			if lost, late, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(j), Duration: time.Minute, Seq: 1}}); err != nil ||
				len(lost) != 0 || len(late) != 1 {
				t.Fatalf("under a corrupt mark: lost %+v, late %v, %v; want late", lost, late, err)
			}
			for _, corrupt := range []string{"-4", "late"} {
				f.rdb.HSet(f.ctx, f.p.Job("job"), keys.FieldState, corrupt)
				lost, late, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(j), Duration: time.Minute, Seq: 1}})
				if err != nil || len(late) != 0 || len(lost) != 1 || lost[0].State != corrupt {
					t.Fatalf("state %q: lost %+v, late %v, %v; want the lease lost, in state %q", corrupt, lost, late, err, corrupt)
				}
			}
		})
	}
}
