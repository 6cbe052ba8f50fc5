package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
