package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestDeleteGolden: jobs delete by selector counts with --dry-run, then
// deletes the jobs of the state, kind and finish times it names, and
// lists an entry whose data is not a job (left as it is), and so does a
// redrive by selector; jobs delete ID
// still deletes one job. Every bad command line exits 2 (a state it does
// not take names those it does), an unknown queue or job 3, a running
// job deleted by ID 1. testdata/delete.golden holds what each prints.
func TestDeleteGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // archived a1 (kind email), a2; completed c1; available v1; scheduled s1
	f.enqueue("k1", sms{To: "+100"}, flow.WithDelay(time.Hour))
	p := keys.Partition{NS: f.ns, Queue: "default", Index: 0}
	rdb := f.st.Client()
	if err := rdb.Set(f.ctx, p.Job("bad"), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(f.ctx, p.Terminal(flow.StateArchived), redis.Z{Score: float64(epoch.UnixMilli()), Member: "bad"}).Err(); err != nil {
		t.Fatal(err)
	}

	tr := &transcript{f: f}
	// usage: exit 2
	tr.run(exitUsage, "jobs", "delete")
	tr.run(exitUsage, "jobs", "delete", "default:0:v1", "default:0:s1")
	tr.run(exitUsage, "jobs", "delete", "default:0:v1", "--queue", "default")
	tr.run(exitUsage, "jobs", "delete", "default:0:v1", "--dry-run")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "available")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "running")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "scheduled", "--reason", "skipped")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "archived", "--after", "yesterday")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "archived", "--batch", "0")
	tr.run(exitUsage, "jobs", "delete", "--queue", "bad queue!", "--state", "archived")
	tr.run(exitUsage, "jobs", "delete", "nope")
	// not found: exit 3
	tr.run(exitNotFound, "jobs", "delete", "--queue", "nosuchqueue", "--state", "archived")
	tr.run(exitNotFound, "jobs", "delete", "default:0:nope")

	// a dry run counts and changes nothing; the kind and times narrow it
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived", "--dry-run", "--batch", "1")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived", "--dry-run", "--before", "1s")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived", "--dry-run", "--reason", "skipped")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "scheduled", "--kind", "sms", "--dry-run")
	// a redrive by selector names the entry it cannot read as delete does
	tr.run(exitOK, "redrive", "--queue", "default", "--dry-run")
	if !f.exists("default:0:a1") || !f.exists("default:0:k1") {
		t.Fatal("a dry run deleted jobs")
	}
	// a2 finished 1.5s after a1: after a1's finish plus a second, a2 only
	a1, err := f.c.Job(f.ctx, "default:0:a1")
	if err != nil {
		t.Fatal(err)
	}
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived", "--after", a1.Finished.Add(time.Second).Format(time.RFC3339Nano))
	if !f.exists("default:0:a1") || f.exists("default:0:a2") {
		t.Fatalf("--after: a1 kept %v, a2 kept %v; want a1 only", f.exists("default:0:a1"), f.exists("default:0:a2"))
	}
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "scheduled", "--kind", "sms")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "completed", "--kind", "sms")
	tr.run(exitOK, "jobs", "delete", "default:0:v1") // by ID, as before
	if f.exists("default:0:a1") || f.exists("default:0:k1") || f.exists("default:0:v1") || !f.exists("default:0:s1") || !f.exists("default:0:c1") {
		t.Fatal("deleted the wrong jobs")
	}
	if v, err := rdb.Get(f.ctx, p.Job("bad")).Result(); v != "x" || err != nil {
		t.Fatalf("the unreadable entry's key holds %q, %v", v, err)
	}

	// a running job deleted by ID: exit 1
	f.enqueue("run1", email{To: "ray@example.com"})
	if res, err := f.st.Claim(f.ctx, p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "d"}); err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	tr.run(exitError, "jobs", "delete", "default:0:run1")
	golden(t, "delete", tr.b.String())

	var rep selectJSON
	if err := json.Unmarshal([]byte(f.must("--json", "jobs", "delete", "--queue", "default", "--state", "archived", "--dry-run")), &rep); err != nil {
		t.Fatal(err)
	}
	want := selectJSON{DryRun: true, Examined: 1, Total: 1, Batches: 1, Unreadable: []string{"default:0:bad"}}
	if d := cmp.Diff(want, rep); d != "" {
		t.Fatalf("jobs delete --json (-want +got):\n%s", d)
	}
	if err := json.Unmarshal([]byte(f.must("--json", "redrive", "--queue", "default", "--dry-run")), &rep); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, rep); d != "" {
		t.Fatalf("redrive --json (-want +got):\n%s", d)
	}
	if err := json.Unmarshal([]byte(f.must("--json", "jobs", "delete", "--queue", "default", "--state", "completed")), &rep); err != nil || rep.Matched != 1 || rep.DryRun || len(rep.Unreadable) != 0 {
		t.Fatalf("jobs delete --json: %+v, %v", rep, err)
	}
	if f.exists("default:0:c1") {
		t.Fatal("c1 not deleted")
	}
}

// TestDeleteProgress: a delete by selector draws a progress bar on stderr
// only when stderr is a terminal, and never with --json.
func TestDeleteProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	bar := "[==============================] 2/2 examined, 2 matched"
	args := []string{"jobs", "delete", "--queue", "default", "--state", "archived", "--dry-run", "--batch", "1"}
	if out, errs, code := f.sluice(args...); code != exitOK || errs != "" || strings.Contains(out, "examined,") {
		t.Fatalf("stderr no terminal: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	f.stderrTTY = true
	if _, errs, code := f.sluice(args...); code != exitOK || !strings.Contains(errs, bar) {
		t.Fatalf("stderr a terminal: exit %d, stderr %q", code, errs)
	}
	if out, errs, code := f.sluice(append(args, "--json")...); code != exitOK || strings.Contains(out+errs, "examined,") {
		t.Fatalf("--json on a terminal drew a bar: exit %d, stdout %q stderr %q", code, out, errs)
	}
}

// sms is a second kind of job.
type sms struct{ To string }

func (sms) Kind() string { return "sms" }
