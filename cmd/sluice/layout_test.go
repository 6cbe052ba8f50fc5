package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestLayoutGolden: a queue another process created with 4 partitions is
// one the CLI and a worker, both started with no partition configuration,
// agree on: the CLI lists it with its layout and pauses and resumes it
// whole (all 4 partitions), the worker runs its jobs in all 4; resizing it is
// refused until it is paused, then changes the count; a --partitions that
// disagrees with Redis fails naming both counts; an unknown queue exits 3
// and a bad count 2; namespaces lists this one. testdata/layout.golden
// holds what each prints.
func TestLayoutGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other, err := flow.NewClient(f.st.Client(), flow.ClientOptions{Namespace: f.ns, Clock: f.clk, Partitions: map[string]int{"big": 4}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 { // spread over the 4 partitions
		if _, err := other.Enqueue(f.ctx, email{To: strings.Repeat("x", i+1)}, flow.WithQueue("big")); err != nil {
			t.Fatal(err)
		}
	}
	f.populate() // the default queue, 1 partition
	paused := func() int {
		t.Helper()
		st, err := admin.New(f.c).QueueStats(context.Background(), "big", admin.MaxStatsWindow)
		if err != nil {
			t.Fatal(err)
		}
		return st.Paused
	}

	tr := &transcript{f: f}
	tr.run(exitOK, "queues", "list")
	tr.run(exitOK, "--json", "queues", "list")
	tr.run(exitOK, "queues", "pause", "big")
	if n := paused(); n != 4 {
		t.Fatalf("queues pause big paused %d partitions of 4", n)
	}
	tr.run(exitOK, "queues", "list")
	tr.run(exitOK, "queues", "resume", "big")
	if n := paused(); n != 0 {
		t.Fatalf("queues resume big left %d partitions paused", n)
	}
	// A worker given no partition count serves all 4.
	reg := flow.NewRegistry()
	ran := testkit.Chan[string]()
	testkit.Must(t, flow.Register(reg, func(_ context.Context, j *flow.Job[email]) error {
		ran <- j.ID
		return nil
	}))
	w := testkit.StartWorker(t, f.st.Client(), reg, runtime.Options{Namespace: f.ns, Queues: map[string]int{"big": 4}, Clock: f.clk}, nil)
	seen := map[string]bool{}
	for range 8 {
		id := testkit.Recv(t, ran, "a job of queue big")
		seen[id[:strings.LastIndex(id, ":")]] = true
	}
	testkit.Must(t, w.Stop())
	if len(seen) != 4 {
		t.Fatalf("the worker ran jobs of partitions %v, want all 4", seen)
	}
	tr.run(exitError, "queues", "resize", "big", "2") // not paused
	tr.run(exitOK, "queues", "resize", "big", "4")    // its count already: nothing to do, no restart asked for
	tr.run(exitError, "--partitions", "big=2", "queues", "pause", "big")
	// every command checks --partitions, not only those that look a queue up
	tr.run(exitError, "--partitions", "big=2", "queues", "list")
	tr.run(exitNotFound, "--partitions", "nosuchqueue=2", "queues", "list")
	if n := paused(); n != 0 {
		t.Fatalf("a mismatched --partitions paused %d partitions", n)
	}
	tr.run(exitNotFound, "queues", "resize", "nosuchqueue", "2")
	tr.run(exitUsage, "queues", "resize", "big", "0")
	tr.run(exitUsage, "queues", "resize", "big", "two")
	tr.run(exitUsage, "queues", "resize", "big")
	tr.run(exitOK, "queues", "pause", "big")
	tr.run(exitOK, "queues", "resize", "big", "6") // growing: the 2 new partitions start paused
	tr.run(exitOK, "queues", "list")
	tr.run(exitNotFound, "--namespace", f.ns+"-empty", "queues", "list")
	golden(t, "layout", tr.b.String())

	if out := f.must("namespaces"); !strings.Contains("\n"+out, "\n"+f.ns+"\n") {
		t.Errorf("namespaces does not list %s:\n%s", f.ns, out)
	}
	lay, err := f.st.ReadLayout(f.ctx, "big")
	if err != nil || lay.Partitions != 6 {
		t.Errorf("after the resize Redis records %+v (%v)", lay, err)
	}
}

// TestResizeToItsCountBringsBackRetired: `queues resize Q N` with the
// count Q has is how an operator brings back the partitions a shrink
// retired and did not record (it failed midway, or a resume cancelled
// it). It said "nothing changed" and did nothing before, leaving them
// taking no job; it now brings them back, paused, and names them.
func TestResizeToItsCountBringsBackRetired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, _, err := f.st.RegisterLayout(f.ctx, "big", 4); err != nil {
		t.Fatal(err)
	}
	f.must("queues", "pause", "big")
	if out := f.must("queues", "resize", "big", "4"); out != "big has 4 partitions already: nothing changed\n" {
		t.Errorf("with none retired: %q", out)
	}
	for _, i := range []int{2, 3} { // a shrink to 2 that retired these, then failed
		testkit.Must(t, f.st.Retire(f.ctx, f.st.Partition("big", i)))
	}
	out := f.must("queues", "resize", "big", "4")
	if !strings.Contains(out, "brought back partitions 2, 3") || !strings.Contains(out, "sluice queues resume big") {
		t.Errorf("with partitions 2 and 3 retired: %q", out)
	}
	retired, err := admin.New(f.c).RetiredPartitions(f.ctx, "big")
	if err != nil || len(retired) != 0 {
		t.Errorf("after the resize, retired partitions %v (%v), want none", retired, err)
	}
	if _, err := admin.New(f.c).RetiredPartitions(f.ctx, "nosuchqueue"); !errors.Is(err, admin.ErrQueueNotFound) {
		t.Errorf("RetiredPartitions of a queue nothing registered: %v, want ErrQueueNotFound", err)
	}
	if out := f.must("--json", "queues", "resize", "big", "4"); !strings.Contains(out, `"brought_back": []`) {
		t.Errorf("--json, none retired any more: %s", out)
	}
	f.must("queues", "resume", "big")
	if n, err := admin.New(f.c).QueueStats(f.ctx, "big", admin.MaxStatsWindow); err != nil || n.Paused != 0 {
		t.Errorf("after resume: %+v %v, want no partition paused", n, err)
	}
}
