package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
)

// TestCancelRetainWholeMilliseconds: the store keeps a cancelled job's
// retention in whole milliseconds, so --retain 500us kept the job 1ms
// while the command said (--json "kept") 500µs. A --retain that is not
// whole milliseconds is refused (exit 2), and the job is not cancelled.
func TestCancelRetainWholeMilliseconds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	for _, bad := range []string{"500us", "1ns", "1.5ms"} {
		out, errs, code := f.sluice("jobs", "cancel", "default:0:s1", "--retain", bad, "--json")
		if code != exitUsage || !strings.Contains(errs, "--retain") || !strings.Contains(errs, "whole milliseconds") {
			t.Fatalf("--retain %s: exit %d, want %d naming --retain\nstdout: %s\nstderr: %s", bad, code, exitUsage, out, errs)
		}
	}
	if j, err := f.c.Job(f.ctx, "default:0:s1"); err != nil || j.State != "scheduled" {
		t.Fatalf("after refused cancels: %v, %v; want it scheduled", j, err)
	}
	f.must("jobs", "cancel", "default:0:s1", "--retain", "2ms")
	ms, err := f.st.Client().ZScore(f.ctx, keys.Partition{NS: f.ns, Queue: "default"}.Terminal("cancelled"), "s1").Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.UnixMilli(int64(ms)).Sub(f.clk.Now()); d != 2*time.Millisecond {
		t.Fatalf("--retain 2ms: kept %v", d)
	}
}
