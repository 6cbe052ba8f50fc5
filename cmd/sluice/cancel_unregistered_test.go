package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

// TestCancelInUnregisteredQueueSaysWhy: a job whose queue no client or
// worker of this release has registered yet (its jobs were enqueued by an
// older release, before the registry) exists: jobs show shows it. jobs
// cancel, with no --retain, cannot read how long to keep it (no worker
// recorded a retention, and the queue is not registered), refuses, and
// admin says so ("queue not found ... nothing was cancelled; give the
// retention explicitly: ... sluice jobs cancel --retain"). The command
// printed instead "job ... not found in namespace", exit 3: it said the
// job does not exist, and hid the way out (--retain). schedules trigger
// already keeps a queue's not-found error from reading as its subject's.
func TestCancelInUnregisteredQueueSaysWhy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("v1", email{To: "ann@example.com"})
	// as before the registry: the job, and no entry for its queue
	if err := f.st.Client().HDel(f.ctx, keys.Queues(f.ns), "default").Err(); err != nil {
		t.Fatal(err)
	}
	f.must("jobs", "show", "default:0:v1")
	out, errs, code := f.sluice("jobs", "cancel", "default:0:v1")
	if code == exitOK {
		t.Fatalf("cancel with no retention to read: exit 0\n%s%s", out, errs)
	}
	if strings.Contains(errs, "job default:0:v1 not found") || !strings.Contains(errs, "--retain") {
		t.Errorf("jobs cancel of an existing job: exit %d, stderr %q; want why it was refused (its queue), naming --retain, not that the job does not exist", code, errs)
	}
	if j, err := f.c.Job(f.ctx, "default:0:v1"); err != nil || j.State != "available" {
		t.Fatalf("after the refused cancel: %+v %v", j, err)
	}
	f.must("jobs", "cancel", "default:0:v1", "--retain", "1h") // the way out
}
