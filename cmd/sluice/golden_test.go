package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestJobsGolden: jobs list and show print tables that match the golden
// files, and their --json output parses back to the same jobs.
func TestJobsGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	golden(t, "jobs_list_archived", f.must("jobs", "list", "--state", "archived"))
	golden(t, "jobs_list_available", f.must("jobs", "list", "--state", "available", "--queue", "default"))
	golden(t, "jobs_list_paged", f.must("jobs", "list", "--state", "archived", "--limit", "1"))
	golden(t, "jobs_show", f.must("jobs", "show", "default:0:a1"))
	golden(t, "jobs_show_completed", f.must("jobs", "show", "default:0:c1"))

	var page listJSON
	if err := json.Unmarshal([]byte(f.must("--json", "jobs", "list", "--state", "archived", "--limit", "1")), &page); err != nil {
		t.Fatal(err)
	}
	at := epoch.Add(250*time.Millisecond + time.Second + 1500*time.Millisecond)
	want := listJSON{Next: page.Next, Jobs: []jobJSON{{
		ID: "default:0:a2", Queue: "default", Kind: "email", State: "archived", Priority: 3, Attempt: 1, MaxAttempts: 1,
		Created: ts(epoch.Add(1250 * time.Millisecond)), Finished: ts(at), Reason: "attempts_exhausted",
		LastError: fail.Message,
	}}}
	if d := cmp.Diff(want, page); d != "" || page.Next == "" {
		t.Fatalf("jobs list --json (-want +got):\n%s", d)
	}
	var next listJSON
	if err := json.Unmarshal([]byte(f.must("jobs", "list", "--state", "archived", "--limit", "1", "--cursor", page.Next, "--json")), &next); err != nil {
		t.Fatal(err)
	}
	if len(next.Jobs) != 1 || next.Jobs[0].ID != "default:0:a1" {
		t.Fatalf("second page: %+v", next)
	}

	var job jobJSON
	if err := json.Unmarshal([]byte(f.must("jobs", "show", "--json", "default:0:a1")), &job); err != nil {
		t.Fatal(err)
	}
	args, _ := job.Args.(map[string]any)
	if job.ID != "default:0:a1" || job.State != "archived" || len(job.Errors) != 1 || job.Errors[0].Message != fail.Message ||
		args["To"] != "ann@example.com" {
		t.Fatalf("jobs show --json: %+v", job)
	}
}

// TestStatsGolden: queues stats as a table and as JSON.
func TestStatsGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	f.must("queues", "pause", "default")
	golden(t, "queues_stats", f.must("queues", "stats", "default", "--window", "10m"))
	var st []statsJSON
	if err := json.Unmarshal([]byte(f.must("--json", "queues", "stats", "default")), &st); err != nil {
		t.Fatal(err)
	}
	want := []statsJSON{{
		Queue: "default", Partitions: 1, Paused: 1, Window: "5m0s",
		Depth: map[string]int64{"scheduled": 1, "available": 1, "running": 0, "retryable": 0, "completed": 1,
			"archived": 2, "quarantined": 0, "cancelled": 0},
		Finished: map[string]int64{"completed": 1, "archived": 2}, CompletedPerMinute: 0.2,
		RunTimeCount: 1, RunTimeP50: "44.255ms", RunTimeP90: "44.255ms", RunTimeP99: "44.255ms",
	}}
	if d := cmp.Diff(want, st); d != "" {
		t.Fatalf("queues stats --json (-want +got):\n%s", d)
	}
	if out := f.must("queues", "resume", "default"); out != "resumed default\n" {
		t.Fatalf("resume: %q", out)
	}
	// a queue named twice is paused once, and said once (it said "paused
	// default" twice, the second a change that was none: an audit)
	if out := f.must("queues", "pause", "default", "default"); out != "paused default\n" {
		t.Fatalf("pause default default: %q", out)
	}
}

// TestWorkersGolden: the registry as a table and as JSON.
func TestWorkersGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := sluicetype.WorkerInfo{ID: "host-1:42:abc", Host: "host-1", PID: 42, Started: epoch, Queues: map[string]int{"default": 1, "mail": 4},
		Concurrency: 8, Jobs: []string{"default:0:a1", "mail:3:b7"}}
	if err := f.st.Heartbeat(f.ctx, w, time.Minute); err != nil {
		t.Fatal(err)
	}
	for q, n := range w.Queues { // as the worker's start would
		if _, _, err := f.st.RegisterLayout(f.ctx, q, n); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "workers", f.must("workers"))
	var ws []workerJSON
	if err := json.Unmarshal([]byte(f.must("workers", "--json")), &ws); err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].ID != w.ID || !cmp.Equal(ws[0].Jobs, w.Jobs) || ws[0].Queues["mail"] != 4 {
		t.Fatalf("workers --json: %+v", ws)
	}
	// queues stats without a queue covers the workers' queues
	out := f.must("queues", "stats")
	if !strings.Contains(out, "\ndefault ") || !strings.Contains(out, "\nmail ") {
		t.Fatalf("queues stats of the workers' queues:\n%s", out)
	}
}

// TestShowHistoryGolden: jobs show prints the newest panic's stack and a
// stuck attempt's stacks, and counts the attempts of a redriven job
// against its limit plus one per redrive.
func TestShowHistoryGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("p1", email{To: "pat@example.com"}, flow.WithMaxAttempts(1))
	stack := "goroutine 7 [running]:\nmain.send(...)\n\t/src/mail/send.go:42 +0x1d\n"
	f.settle(10*time.Millisecond, store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "runtime error: index out of range [3] with length 3", Data: []byte(stack)})
	golden(t, "jobs_show_crashed", f.must("jobs", "show", "default:0:p1"))

	f.clk.Advance(time.Hour) // due again after the crash delay
	f.settle(10*time.Millisecond, fail)
	f.must("redrive", "default:0:p1")
	f.settle(10*time.Millisecond, fail)
	out := f.must("jobs", "show", "default:0:p1")
	if !strings.Contains(out, "Attempts:    2 failed (limit 1, +1 per redrive), 1 crash\n") {
		t.Fatalf("a redriven job's attempts:\n%s", out)
	}
	var job jobJSON
	if err := json.Unmarshal([]byte(f.must("jobs", "show", "default:0:p1", "--json")), &job); err != nil {
		t.Fatal(err)
	}
	if job.Attempt != 2 || job.MaxAttempts != 1 || job.Redrives != 1 || len(job.Errors) != 3 || job.Errors[2].Stack != stack {
		t.Fatalf("jobs show --json: %+v", job)
	}

	f.enqueue("k1", email{To: "kim@example.com"})
	p := keys.Partition{NS: f.ns, Queue: "default", Index: 0}
	res, err := f.st.Claim(f.ctx, p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "k"})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	l := store.Lease{Local: res.Jobs[0].Local, LeaseID: res.Jobs[0].LeaseID, Fence: res.Jobs[0].Fence}
	stuck := sluicetype.StuckInfo{Case: "no_progress", Why: "no progress for 5m0s", Since: epoch, Step: "send",
		Stack: "goroutine 9 [select]:\nmain.wait()\n\t/src/mail/wait.go:7\n"}
	if ok, err := f.st.Stuck(f.ctx, p, l, stuck); !ok || err != nil {
		t.Fatalf("stuck: %v, %v", ok, err)
	}
	out = f.must("jobs", "show", "default:0:k1")
	if !strings.Contains(out, "Stacks of the stuck attempt (fence 1, found ") || !strings.Contains(out, "\n  main.wait()\n  \t/src/mail/wait.go:7\n") {
		t.Fatalf("jobs show of a stuck job:\n%s", out)
	}
	if err := json.Unmarshal([]byte(f.must("jobs", "show", "default:0:k1", "--json")), &job); err != nil || job.Stuck == nil || job.Stuck.Stack != stuck.Stack {
		t.Fatalf("jobs show --json of a stuck job: %+v, %v", job.Stuck, err)
	}
}
