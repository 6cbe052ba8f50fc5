package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestEffectsCommands: a dead-lettered effect is listed with its job and
// what it would write, sent back once its cause is mended, and a second
// send-back of the same ID exits 3; `jobs show` counts it on the job.
func TestEffectsCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	check := func(want int, args ...string) string {
		t.Helper()
		out, errs, code := f.sluice(args...)
		if code != want {
			t.Fatalf("sluice %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
		}
		return out + errs
	}
	if out := check(exitNotFound, "effects", "list", "--queue", "default"); !strings.Contains(out, `queue "default" not found in namespace "`+f.ns+`"`) {
		t.Fatalf("a queue no client or worker has used: %q", out)
	}
	if _, _, err := f.st.RegisterLayout(f.ctx, "default", 1); err != nil { // as a first enqueue would
		t.Fatal(err)
	}
	if out := check(exitOK, "effects", "list", "--queue", "default"); !strings.Contains(out, `no dead-lettered effects in queue "default" (namespace "`+f.ns+`")`) {
		t.Fatalf("empty list: %q", out)
	}
	check(exitUsage, "effects", "list")
	check(exitUsage, "effects", "redrive")

	bad := f.deadEffect("j1")
	out := check(exitOK, "effects", "list", "--queue", "default")
	if !strings.Contains(out, "default:0:j1") || !strings.Contains(out, "INCRBY "+bad+" 5") || !strings.Contains(out, "holds a list") {
		t.Fatalf("list: %q", out)
	}
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	if show := check(exitOK, "jobs", "show", "default:0:j1"); !strings.Contains(show, "1 could not be applied") {
		t.Fatalf("jobs show: %q", show)
	}
	f.st.Client().Del(f.ctx, bad)
	// one sent back, one refused: --json says both, and the exit is the
	// refusal's (2: malformed)
	out, errs, code := f.sluice("--json", "effects", "redrive", id, "not-an-id")
	var got effectsRedriveJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitUsage ||
		len(got.Redriven) != 1 || got.Redriven[0] != id || len(got.Failed) != 1 || got.Failed["not-an-id"] == "" {
		t.Fatalf("effects redrive --json %s not-an-id: exit %d, stdout %q (%v), stderr %q; want %s redriven, not-an-id failed, exit 2",
			id, code, out, err, errs, id)
	}
	if out := check(exitNotFound, "effects", "redrive", id); !strings.Contains(out, id) {
		t.Fatalf("second redrive names no ID: %q", out)
	}
	check(exitUsage, "effects", "redrive", "not-an-id")
}

// deadEffect completes job local of queue default's partition 0 with an
// effect, INCRBY 5, on a key in another slot that holds a list, and
// relays it: it is dead-lettered. It returns that key.
func (f *fixture) deadEffect(local string) string {
	f.t.Helper()
	p := keys.Partition{NS: f.ns, Queue: "default", Index: 0}
	bad := redistest.Elsewhere(f.ns, "list", p.Tag()) // in another slot than the job's: relayed
	f.st.Client().RPush(f.ctx, bad, "x")
	f.enqueue(local, email{To: "ann@example.com"})
	res, err := f.st.Claim(f.ctx, p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "fx"})
	if err != nil || len(res.Jobs) != 1 {
		f.t.Fatalf("claim: %+v %v", res, err)
	}
	j := res.Jobs[0]
	ack := store.Ack{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}, Code: store.CodeOK,
		Commit: local + ":#complete", Effects: []sluicetype.Effect{{Op: "INCRBY", Key: bad, Args: []string{"5"}}}}
	if r, _, err := f.st.Ack(f.ctx, p, []store.Ack{ack}); err != nil || r[0].State != "completed" {
		f.t.Fatalf("ack: %+v %v", r, err)
	}
	if r, err := f.st.RelayOutbox(f.ctx, p, "", 10); err != nil || len(r.Dead) != 1 {
		f.t.Fatalf("relay: %+v %v", r, err)
	}
	return bad
}
