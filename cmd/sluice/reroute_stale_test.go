package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// TestRerouteStaleWorkerMessage: `sluice jobs reroute --to W` with no
// fallback, W live but serving the job's queue as another count than the
// registry's (stale since a resize): admin.Reroute refuses it, and the CLI
// says why (restart it), not that W is not live.
func TestRerouteStaleWorkerMessage(t *testing.T) {
	f := newFixture(t)
	f.populate()
	w := sluicetype.WorkerInfo{ID: "worker-stale", Host: "h", PID: 1, Started: epoch, Queues: map[string]int{"default": 7}, Concurrency: 1}
	if err := f.st.Heartbeat(f.ctx, w, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, errs, code := f.sluice("jobs", "reroute", "default:0:a1", "--to", "worker-stale")
	if code == exitOK {
		t.Fatalf("answered ok")
	}
	if strings.Contains(errs, "no live worker has this ID") || !strings.Contains(errs, "restart") {
		t.Fatalf("exit %d, stderr %q: the worker is live; the reason (stale since a resize: restart it) is lost", code, errs)
	}
}
