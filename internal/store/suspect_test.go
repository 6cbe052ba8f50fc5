package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestSuspectIsolation: a claim leases at most one job with a crash on
// record, and none for a worker that runs one already; the suspects it
// passes over keep their place at the front of their lists (a priority
// list's flag included), and a claim left short by them asks to be made
// again soon rather than after the idle poll.
func TestSuspectIsolation(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "s1"}, store.NewJob{Local: "s2"}, store.NewJob{Local: "s3", Priority: 5})
			for _, j := range f.claim(3, "w").Jobs {
				if r := f.ack(j, store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"}); r.State != "retryable" {
					t.Fatalf("crash: %+v", r)
				}
			}
			f.clk.Advance(time.Minute)
			if _, err := f.promote(10); err != nil {
				t.Fatal(err)
			}
			f.enqueue(store.NewJob{Local: "h1"}, store.NewJob{Local: "h2"})

			res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: time.Minute, Worker: "w", Nonce: "x1", NoSuspect: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := locals(res.Jobs); len(got) != 2 || !got["h1"] || !got["h2"] {
				t.Fatalf("a worker running a suspect claimed %v, want [h1 h2]", got)
			}
			if !res.Dry || !res.HeldSuspects {
				t.Fatalf("held back suspects: dry %v, held %v; want both", res.Dry, res.HeldSuspects)
			}
			if order := f.availableOrder(0); !slices.Equal(order, []string{"s1", "s2"}) {
				t.Fatalf("list 0 after the claim: %v, want [s1 s2]", order)
			}
			got := f.claim(10, "w2").Jobs
			if len(got) != 1 || got[0].Local != "s3" {
				t.Fatalf("claim: %v, want the one suspect s3 (priority 5 first)", locals(got))
			}
			if got := locals(f.claim(10, "w3").Jobs); len(got) != 1 || !got["s1"] {
				t.Fatalf("next claim: %v, want [s1] alone", got)
			}
		})
	}
}
