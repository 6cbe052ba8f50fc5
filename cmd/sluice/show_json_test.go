package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestShowJSONSaysWhatTextSays: what `jobs show` prints of a job, its
// --json carries too: here the quarantined job a held job waits behind
// (held_by), and a running job's lease ID (lease_id). --json left them
// out before: a script saw a scheduled job due in a far year and nothing
// to say why.
func TestShowJSONSaysWhatTextSays(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("q1", email{To: "poison"}, flow.WithQuarantineHold())
	for range 3 { // the fixture's crash limit
		f.settle(time.Millisecond, store.Ack{Code: store.CodeCrash, Reason: "crash", Message: "worker died"})
		f.clk.Advance(time.Hour)
	}
	if j, err := f.c.Job(f.ctx, "default:0:q1"); err != nil || j.State != flow.StateQuarantined {
		t.Fatalf("q1: %+v %v", j, err)
	}
	e, err := f.c.Enqueue(f.ctx, email{To: "poison"}, flow.WithQuarantineHold(), flow.WithID("q2"))
	if err != nil || e.HeldBy != "default:0:q1" {
		t.Fatalf("q2: %+v %v", e, err)
	}
	if text := f.must("jobs", "show", "default:0:q2"); !strings.Contains(text, "behind quarantined job default:0:q1") {
		t.Fatalf("text: %s", text)
	}
	var got struct {
		HeldBy string `json:"held_by"`
	}
	if out := f.must("--json", "jobs", "show", "default:0:q2"); json.Unmarshal([]byte(out), &got) != nil || got.HeldBy != "default:0:q1" {
		t.Errorf("jobs show says the job is held behind default:0:q1; --json says held_by %q:\n%s", got.HeldBy, out)
	}

	f.enqueue("r1", email{To: "slow"})
	res, err := f.st.Claim(f.ctx, keys.Partition{NS: f.ns, Queue: "default", Index: 0},
		store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "n"})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %+v %v", res, err)
	}
	j := res.Jobs[0]
	text := f.must("jobs", "show", "default:0:r1")
	var run struct {
		LeaseID string `json:"lease_id"`
	}
	if out := f.must("--json", "jobs", "show", "default:0:r1"); json.Unmarshal([]byte(out), &run) != nil ||
		run.LeaseID != j.LeaseID || !strings.Contains(text, j.LeaseID) {
		t.Errorf("running job, lease %s: --json lease_id %q; text:\n%s", j.LeaseID, run.LeaseID, text)
	}
}
