package store_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestAckClaimAsTwoCalls: an ack that carries a claim (store.AckClaim,
// one call) leaves Redis as the ack and then the claim, sent as two
// calls, do, and answers as they do. Two partitions of their own get the
// same jobs, leases and outcomes, with flow control (concurrency keys, a
// rate class), priorities, outcomes that make a job available or due at
// once (which the claim must see), and rounds where the partition is
// paused; one is sent each round's outcomes and claim together, the
// other apart. Their keys are compared whole, but for the calls' reply
// records.
func TestAckClaimAsTwoCalls(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for seed := range uint64(6) {
				one, two := newFixture(t, b), newFixture(t, b)
				rng := rand.New(rand.NewPCG(seed, 7))
				var jobs []store.NewJob
				for i := range 24 {
					j := store.NewJob{Local: fmt.Sprintf("j%02d", i), Priority: rng.IntN(3)}
					switch rng.IntN(4) {
					case 0:
						j.Limits = store.Limits{ConcurrencyKey: fmt.Sprintf("ck%d", rng.IntN(2)), ConcurrencyLimit: 1 + rng.IntN(2)}
					case 1:
						j.Limits = store.Limits{RateClass: "rc", RateJobs: 3, RatePer: time.Second, RateBurst: 3}
					}
					jobs = append(jobs, j)
				}
				one.enqueue(slices.Clone(jobs)...)
				two.enqueue(slices.Clone(jobs)...)
				held := map[string]*store.Job{}
				for _, j := range one.claimNonce(5, "c0") {
					held[j.Local] = j
				}
				for _, j := range two.claimNonce(5, "c0") {
					if h := held[j.Local]; h == nil || h.LeaseID != j.LeaseID || h.Fence != j.Fence {
						t.Fatalf("seed %d: the partitions' first claims differ at %s", seed, j.Local)
					}
				}
				for round := range 8 {
					paused := rng.IntN(5) == 0
					var acks []store.Ack
					for _, id := range slices.Sorted(maps.Keys(held)) {
						if rng.IntN(3) == 0 {
							continue // still running
						}
						acks = append(acks, randomOutcome(rng, held[id]))
						delete(held, id)
					}
					req := store.ClaimRequest{N: 1 + rng.IntN(6), Lease: 30 * time.Second, Worker: "w",
						Nonce: fmt.Sprintf("c%d", round+1), ID: fmt.Sprintf("c%d", round+1), PromoteLimit: 100}
					for _, f := range []*fixture{one, two} {
						if _, err := f.st.SetPaused(f.ctx, f.p, paused); err != nil {
							t.Fatal(err)
						}
					}
					res1, ob1, err := one.st.Ack(one.ctx, one.p, acks)
					if err != nil {
						t.Fatal(err)
					}
					cr1, err := one.st.Claim(one.ctx, one.p, req)
					if err != nil {
						t.Fatal(err)
					}
					res2, ob2, cr2, err := two.st.AckClaim(two.ctx, two.p, acks, &req)
					if err != nil {
						t.Fatal(err)
					}
					where := fmt.Sprintf("seed %d round %d (paused %v, %d outcomes, claim of %d)", seed, round, paused, len(acks), req.N)
					if a, b := describeAcks(res1, ob1), describeAcks(res2, ob2); a != b {
						t.Fatalf("%s: outcomes answered apart %s, together %s", where, a, b)
					}
					if a, b := describeClaim(cr1), describeClaim(cr2); a != b {
						t.Fatalf("%s: claim answered apart %s, together %s", where, a, b)
					}
					if diff := snapshotDiff(one.normalized(), two.normalized()); len(diff) > 0 {
						t.Fatalf("%s: the partitions differ (apart -> together):\n%s", where, strings.Join(diff, "\n"))
					}
					for _, j := range cr2.Jobs {
						held[j.Local] = j
					}
					one.clk.Advance(400 * time.Millisecond)
					two.clk.Advance(400 * time.Millisecond)
				}
			}
		})
	}
}

// claimNonce claims up to n jobs under nonce (its ID too).
func (f *fixture) claimNonce(n int, nonce string) []*store.Job {
	f.t.Helper()
	res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: n, Lease: 30 * time.Second, Worker: "w", Nonce: nonce, ID: nonce, PromoteLimit: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Jobs
}

// normalized is the partition's snapshot (but for reply records) with
// its prefix taken out of every key's name.
func (f *fixture) normalized() map[string]string {
	out := map[string]string{}
	for k, v := range (&sweep{fixture: f}).snapshot() {
		out[strings.Replace(k, f.p.Prefix(), "P:", 1)] = v
	}
	return out
}

// randomOutcome is an outcome of j's attempt: any code that moves a job
// somewhere a claim may look next (available at once, due at once or
// later, finished), with delays of 0 among them.
func randomOutcome(rng *rand.Rand, j *store.Job) store.Ack {
	a := store.Ack{Lease: lease(j)}
	switch rng.IntN(8) {
	case 0, 1:
		a.Code = store.CodeOK
	case 2:
		a.Code, a.Reason, a.Message, a.Delay = store.CodeRetry, "error", "boom", time.Duration(rng.IntN(2))*time.Second
	case 3:
		a.Code = store.CodeRelease
	case 4:
		a.Code, a.Delay = store.CodeFree, time.Duration(rng.IntN(2))*time.Second
	case 5:
		a.Code, a.Delay = store.CodeSnooze, time.Duration(rng.IntN(2))*300*time.Millisecond
	case 6:
		a.Code, a.Reason, a.Message = store.CodeCrash, "panic", "crashed"
	case 7:
		a.Code, a.Reason = store.CodePark, "unknown_kind"
	}
	return a
}

func describeAcks(res []store.AckResult, outboxed int) string {
	var b strings.Builder
	for _, r := range res {
		fmt.Fprintf(&b, "%s/%v ", r.State, r.Err)
	}
	fmt.Fprintf(&b, "outboxed %d", outboxed)
	return b.String()
}

func describeClaim(r store.ClaimResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dry %v scheduled %v next %v held %v parked %v jobs", r.Dry, r.Scheduled, r.NextDue, r.HeldSuspects, r.Parked)
	for _, j := range r.Jobs {
		fmt.Fprintf(&b, " %s=%s/%d/%d/%s/%v", j.Local, j.LeaseID, j.Fence, j.LeaseExpiry.UnixMilli(), j.Payload, j.Steps)
	}
	return b.String()
}

// TestAckClaimNeedsAnID: a claim sent with acks without an ID is refused
// before anything is sent (a re-send could not be answered its jobs): the
// attempt still runs.
func TestAckClaimNeedsAnID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[0])
	f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
	j := f.claimOne("w")
	_, _, _, err := f.st.AckClaim(f.ctx, f.p, []store.Ack{{Lease: lease(j), Code: store.CodeOK}},
		&store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "n"})
	if err == nil || !strings.Contains(err.Error(), "needs an ID") {
		t.Fatalf("AckClaim without an ID: %v, want refused", err)
	}
	if got, _ := f.get("a"); got.State != "running" {
		t.Fatalf("a is %s, want still running: nothing sent", got.State)
	}
	if errors.Is(err, store.ErrMalformed) {
		t.Fatalf("a caller's mistake reported as malformed data: %v", err)
	}
}

// TestAckClaimPartsAnsweredAlone: after an ack that claims ran, its two
// parts sent again alone, as a worker sends them after an error that may
// have lost the reply (its ack loop the acks, its fetch loop the claim,
// by the claim's ID), are answered what the call did, and change nothing.
func TestAckClaimPartsAnsweredAlone(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"}, store.NewJob{Local: "d"})
			held := f.claimLeases(2, "w")
			acks := []store.Ack{{Lease: held["a"], Code: store.CodeOK}, {Lease: held["b"], Code: store.CodeRetry, Reason: "error", Message: "boom"}}
			req := store.ClaimRequest{N: 3, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", ID: "n1", PromoteLimit: 100}
			res, ob, cr, err := f.st.AckClaim(f.ctx, f.p, acks, &req)
			if err != nil {
				t.Fatal(err)
			}
			if got := describeAcks(res, ob); got != "completed/<nil> retryable/<nil> outboxed 0" {
				t.Fatalf("outcomes: %s", got)
			}
			// b's retry is due at once (no delay): the claim, which sees
			// what the outcomes wrote, promotes and leases it after c and d
			var got []string
			for _, j := range cr.Jobs {
				got = append(got, fmt.Sprintf("%s/%d", j.Local, j.Fence))
			}
			if want := []string{"c/1", "d/1", "b/2"}; !slices.Equal(got, want) || cr.Dry {
				t.Fatalf("claim: %s, want %v and not dry", describeClaim(cr), want)
			}
			before := f.normalized()
			res2, ob2, err := f.st.Ack(f.ctx, f.p, acks)
			if err != nil || describeAcks(res2, ob2) != describeAcks(res, ob) {
				t.Fatalf("the acks sent again alone: %s %v, want %s", describeAcks(res2, ob2), err, describeAcks(res, ob))
			}
			cr2, err := f.st.Claim(f.ctx, f.p, req)
			if err != nil || describeClaim(cr2) != describeClaim(cr) {
				t.Fatalf("the claim sent again alone: %s %v, want %s", describeClaim(cr2), err, describeClaim(cr))
			}
			if diff := snapshotDiff(before, f.normalized()); len(diff) > 0 {
				t.Fatalf("the parts sent again changed:\n%s", strings.Join(diff, "\n"))
			}
		})
	}
}
