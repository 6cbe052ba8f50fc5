package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestRunNowRepeatedID: `jobs run-now ID ID` makes the job available
// once and reports no failure for the repeat, as redrive by ID and queues
// pause take each target once. A helper's audit found it printed
// "available now ID", then "it is available" as an error (exit 1), and
// --json listed the ID under both "available" and "failed".
func TestRunNowRepeatedID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("s1", email{To: "s1@example.com"}, flow.WithDelay(time.Hour))
	f.enqueue("s2", email{To: "s2@example.com"}, flow.WithDelay(time.Hour))
	out, errs, code := f.sluice("jobs", "run-now", "default:0:s1", "default:0:s1")
	if code != exitOK {
		t.Errorf("run-now of one scheduled job given twice: exit %d\nstdout: %s\nstderr: %s\nwant exit 0: the job was made available", code, out, errs)
	}
	out, errs, code = f.sluice("--json", "jobs", "run-now", "default:0:s2", "default:0:s2")
	var rep runNowJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if _, failed := rep.Failed["default:0:s2"]; failed || code != exitOK {
		t.Errorf("run-now --json of one job given twice: exit %d, %+v (stderr %q): the job is both available and failed", code, rep, errs)
	}
}

// TestEffectsRedriveRepeatedID: `effects redrive ID ID` sends the dead
// effect back once, and reports no failure for the repeat. A helper's
// audit found the repeat reported "not found" (exit 3) for the effect it
// had just sent back: admin.Client.RedriveEffects takes each ID once, but
// the command called it one ID at a time.
func TestEffectsRedriveRepeatedID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := keys.Partition{NS: f.ns, Queue: "default", Index: 0}
	bad := redistest.Elsewhere(f.ns, "list", p.Tag())
	f.st.Client().RPush(f.ctx, bad, "x")
	f.enqueue("j1", email{To: "ann@example.com"})
	res, err := f.st.Claim(f.ctx, p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "fx"})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %+v %v", res, err)
	}
	j := res.Jobs[0]
	ack := store.Ack{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}, Code: store.CodeOK,
		Commit: "j1:#complete", Effects: []sluicetype.Effect{{Op: "INCRBY", Key: bad, Args: []string{"5"}}}}
	if r, _, err := f.st.Ack(f.ctx, p, []store.Ack{ack}); err != nil || r[0].State != "completed" {
		t.Fatalf("ack: %+v %v", r, err)
	}
	if r, err := f.st.RelayOutbox(f.ctx, p, "", 10); err != nil || len(r.Dead) != 1 {
		t.Fatalf("relay: %+v %v", r, err)
	}
	list := f.must("effects", "list", "--queue", "default")
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	f.st.Client().Del(f.ctx, bad)
	out, errs, code := f.sluice("effects", "redrive", id, id)
	if code != exitOK {
		t.Errorf("effects redrive of one dead effect given twice: exit %d\nstdout: %s\nstderr: %s\nwant exit 0: it was sent back", code, out, errs)
	}
}
