package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// transcript runs command lines and records each one's stdout, stderr
// and exit code, the namespace written as NS; it fails a command whose
// exit code is not the one wanted, and any stderr line that is not one
// "sluice: " error (or the usage hint after one).
type transcript struct {
	f *fixture
	b strings.Builder
}

func (tr *transcript) run(want int, args ...string) {
	tr.f.t.Helper()
	out, errs, code := tr.f.sluice(args...)
	if code != want {
		tr.f.t.Errorf("sluice %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
	}
	for _, l := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
		if l != "" && strings.Count(l, "sluice:") > 1 {
			tr.f.t.Errorf("sluice %q: stderr line with two prefixes: %q", args, l)
		}
	}
	if want != exitOK && !strings.HasPrefix(errs, "sluice: ") {
		tr.f.t.Errorf("sluice %q: exit %d without a \"sluice: \" error: %q", args, code, errs)
	}
	if want == exitOK && errs != "" {
		tr.f.t.Errorf("sluice %q: exit 0 with stderr %q", args, errs)
	}
	ns := strings.NewReplacer(tr.f.ns, "NS")
	fmt.Fprintf(&tr.b, "$ sluice %s\n", ns.Replace(strings.Join(args, " ")))
	if out != "" {
		fmt.Fprintf(&tr.b, "%s", ns.Replace(out))
	}
	if errs != "" {
		fmt.Fprintf(&tr.b, "%s", ns.Replace(errs))
	}
	fmt.Fprintf(&tr.b, "[exit %d]\n\n", code)
}

// TestErrorsGolden: every kind of bad command line exits 2, everything
// named that does not exist exits 3 (saying which namespace was looked
// in), a job whose state refuses the command exits 1 naming the job, and
// an empty listing says where it looked; testdata/errors.golden holds
// what each prints.
func TestErrorsGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	tr := &transcript{f: f}

	// usage: exit 2
	tr.run(exitUsage)
	tr.run(exitUsage, "nope")
	tr.run(exitUsage, "job")
	tr.run(exitUsage, "jobs")
	tr.run(exitUsage, "jobs", "lst")
	tr.run(exitUsage, "queues", "pasue", "default")
	tr.run(exitUsage, "--bogus", "workers")
	tr.run(exitUsage, "workers", "--bogus")
	tr.run(exitUsage, "workers", "extra")
	tr.run(exitUsage, "jobs", "list")
	tr.run(exitUsage, "jobs", "list", "--state", "dead")
	tr.run(exitUsage, "jobs", "list", "--state", "archived", "--limit", "5000")
	tr.run(exitUsage, "jobs", "list", "--state", "archived", "--limit", "x")
	tr.run(exitUsage, "jobs", "list", "--state", "archived", "--cursor", "-") // no listing gives it: the last page has none
	tr.run(exitUsage, "jobs", "list", "--state", "archived", "--cursor", "-,-")
	tr.run(exitUsage, "jobs", "show")
	tr.run(exitUsage, "jobs", "show", "nope")
	tr.run(exitUsage, "jobs", "show", "ma il:0:x") // no queue has that name: malformed, not not found
	tr.run(exitUsage, "jobs", "show", "default:0:a1", "default:0:a2")
	tr.run(exitUsage, "jobs", "cancel", "default:0:v1", "--retain", "-1h")
	tr.run(exitUsage, "jobs", "cancel", "default:0:v1", "--retain", "0")
	tr.run(exitUsage, "queues", "stats", "default", "--interval", "5s") // --watch's
	tr.run(exitUsage, "jobs", "reroute", "default:0:v1")
	tr.run(exitUsage, "jobs", "reroute", "default:0:v1", "--to", "b", "--unpin")
	tr.run(exitUsage, "jobs", "reroute", "default:0:v1", "--to", "b", "--after", "1s", "--fail-after", "1s")
	tr.run(exitUsage, "jobs", "signal", "default:0:v1")
	tr.run(exitUsage, "jobs", "signal", "default:0:v1", "go", "--data", "{")
	tr.run(exitUsage, "jobs", "signal", "default:0:v1", "bad name")
	tr.run(exitUsage, "jobs", "signal", "default:0:v1", "go", "--key", "") // an unset variable
	tr.run(exitUsage, "jobs", "signal", "default:0:v1", "go", "--data", `{"a": 1e999}`)
	tr.run(exitUsage, "--namespace", "", "queues", "pause", "default") // an unset variable: not the default namespace
	tr.run(exitUsage, "--redis", "", "queues", "list")
	tr.run(exitUsage, "redrive")
	tr.run(exitUsage, "redrive", "--queue", "default", "default:0:a1")
	tr.run(exitUsage, "redrive", "--queue", "default", "--after", "yesterday")
	tr.run(exitUsage, "redrive", "--queue", "default", "--state", "completed")
	tr.run(exitUsage, "release")
	tr.run(exitUsage, "--partitions", "q=0", "workers")
	tr.run(exitUsage, "--redis", "http://x", "workers")
	tr.run(exitUsage, "queues", "pause")
	tr.run(exitUsage, "queues", "stats", "default", "--window", "3h")
	tr.run(exitUsage, "queues", "stats", "default", "--window", "90s")
	tr.run(exitUsage, "schedules", "pause")
	tr.run(exitUsage, "schedules", "trigger", "bad name!")
	tr.run(exitUsage, "effects", "list")
	tr.run(exitUsage, "effects", "list", "--queue", "default", "--limit", "0")
	tr.run(exitUsage, "effects", "redrive", "not-an-id")
	tr.run(exitUsage, "completion", "tcsh")

	// not found: exit 3
	tr.run(exitNotFound, "jobs", "show", "default:0:nope")
	tr.run(exitNotFound, "jobs", "cancel", "default:0:nope")
	tr.run(exitNotFound, "jobs", "delete", "default:0:nope")
	tr.run(exitNotFound, "jobs", "reroute", "default:0:nope", "--to", "b")
	tr.run(exitNotFound, "jobs", "reroute", "default:0:v1", "--to", "nosuchworker")
	tr.run(exitNotFound, "jobs", "signal", "default:0:nope", "go")
	tr.run(exitNotFound, "redrive", "default:0:nope", "default:0:gone")
	tr.run(exitNotFound, "release", "default:0:nope")
	tr.run(exitNotFound, "jobs", "list", "--state", "archived", "--queue", "nosuchqueue")
	tr.run(exitNotFound, "queues", "pause", "nosuchqueue")
	tr.run(exitNotFound, "queues", "resume", "default", "nosuchqueue")
	tr.run(exitNotFound, "queues", "stats", "nosuchqueue")
	tr.run(exitNotFound, "redrive", "--queue", "nosuchqueue", "--dry-run")
	tr.run(exitNotFound, "effects", "list", "--queue", "nosuchqueue")
	tr.run(exitNotFound, "effects", "redrive", "default:0:1-0")
	tr.run(exitNotFound, "schedules", "pause", "nosuch")
	tr.run(exitNotFound, "schedules", "resume", "nosuch")
	tr.run(exitNotFound, "schedules", "trigger", "nosuch")
	tr.run(exitNotFound, "--namespace", f.ns+"-empty", "queues", "stats")
	tr.run(exitNotFound, "--namespace", f.ns+"-empty", "workers")
	tr.run(exitNotFound, "--namespace", f.ns+"-empty", "--json", "workers")
	tr.run(exitNotFound, "--namespace", f.ns+"-empty", "schedules", "list")
	tr.run(exitNotFound, "jobs", "reroute", "default:0:c1", "--to", "b") // a completed job has no run to reroute

	// a state that refuses the command: exit 1, naming the job
	tr.run(exitError, "jobs", "cancel", "default:0:a1")
	tr.run(exitError, "jobs", "signal", "default:0:c1", "go")
	tr.run(exitError, "redrive", "default:0:v1")
	tr.run(exitError, "release", "default:0:a1")
	tr.run(exitError, "redrive", "default:0:v1", "default:0:nope") // mixed failures

	// nothing to list: exit 0, saying where it looked
	tr.run(exitOK, "jobs", "list", "--state", "running")
	tr.run(exitOK, "jobs", "list", "--state", "archived", "--kind", "sms")
	tr.run(exitOK, "workers")
	tr.run(exitOK, "schedules", "list")
	tr.run(exitOK, "effects", "list", "--queue", "default")

	// a queue not paused stays so: the unknown one stopped the command first
	if out := f.must("queues", "stats", "default"); !strings.Contains(out, "\ndefault  no ") {
		t.Errorf("queues resume default nosuchqueue changed default:\n%s", out)
	}
	golden(t, "errors", tr.b.String())
}

// TestCommandsGolden: what each command that changes something prints
// when it succeeds, in testdata/commands.golden.
func TestCommandsGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	f.enqueue("w1", email{To: "wes@example.com"})
	tr := &transcript{f: f}
	tr.run(exitOK, "jobs", "cancel", "default:0:v1", "--retain", "2h")
	tr.run(exitOK, "--json", "jobs", "cancel", "default:0:w1")
	tr.run(exitOK, "jobs", "delete", "default:0:w1")
	tr.run(exitOK, "redrive", "default:0:v1", "default:0:a1")
	tr.run(exitOK, "redrive", "--queue", "default", "--dry-run")
	tr.run(exitOK, "redrive", "--queue", "default", "--json")
	tr.run(exitOK, "jobs", "reroute", "default:0:a1", "--to", "worker-b", "--fail-after", "1m")
	tr.run(exitOK, "jobs", "reroute", "default:0:a1", "--unpin")
	w := sluicetype.WorkerInfo{ID: "worker-live", Host: "h", PID: 1, Started: epoch, Queues: map[string]int{"default": 1}, Concurrency: 1}
	if err := f.st.Heartbeat(f.ctx, w, time.Minute); err != nil {
		t.Fatal(err)
	}
	tr.run(exitOK, "jobs", "reroute", "default:0:a1", "--to", "worker-live") // live: no fallback needed
	tr.run(exitOK, "jobs", "signal", "default:0:s1", "approved", "--data", `{"By":"ann"}`, "--key", "k1")
	tr.run(exitOK, "jobs", "signal", "default:0:s1", "approved", "--data", `{"By":"ann"}`, "--key", "k1") // a retry: not sent again
	tr.run(exitOK, "--json", "jobs", "signal", "default:0:s1", "approved", "--key", "k1")
	tr.run(exitOK, "queues", "pause", "default")
	tr.run(exitOK, "queues", "pause", "default")      // said to change nothing
	tr.run(exitOK, "jobs", "run-now", "default:0:s1") // a note: the queue is paused
	tr.run(exitOK, "--json", "queues", "resume", "default")
	tr.run(exitOK, "queues", "resume", "default") // said to change nothing
	tr.run(exitOK, "release", "--queue", "default", "--dry-run")
	golden(t, "commands", tr.b.String())
}
