package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
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
	bad := f.deadEffect("j1")
	list := f.must("effects", "list", "--queue", "default")
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	f.st.Client().Del(f.ctx, bad)
	out, errs, code := f.sluice("effects", "redrive", id, id)
	if code != exitOK {
		t.Errorf("effects redrive of one dead effect given twice: exit %d\nstdout: %s\nstderr: %s\nwant exit 0: it was sent back", code, out, errs)
	}
}
