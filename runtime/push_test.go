package runtime_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// textArgs carries a payload of any size.
type textArgs struct{ Text string }

func (textArgs) Kind() string { return "text" }

// TestIdleWorkerTakesPushedJobs: an idle worker's claim left an offer, so
// plain jobs enqueued next are leased to it by their enqueues and run
// under the pushed leases (nonce.p<k>), a payload chunked in the hash
// included; a job with an option, or a payload kept in its own key, is
// listed and claimed as ever.
func TestIdleWorkerTakesPushedJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	type run struct{ lease, text string }
	ran := testkit.Chan[run]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[textArgs]) error {
		ran <- run{job.LeaseID, job.Args.Text}
		return nil
	}))
	// a worker ID with ".p" in it, as a host name gives one (the default
	// ID starts with it): the lease ID names its worker
	w := e.startWorker(reg, runtime.Options{WorkerID: "node-1.prod:1", IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })

	for _, text := range []string{"small", strings.Repeat("x", 500)} { // the second chunked
		id := e.Enqueue(textArgs{Text: text})
		r := testkit.Recv(t, ran, "the idle worker to run the job")
		if !testkit.PushedLease(r.lease) || r.text != text {
			t.Fatalf("job ran under lease %q with %d bytes; want a pushed lease (nonce.p<k>) and its %d bytes",
				r.lease, len(r.text), len(text))
		}
		checkSummary(t, id, e.WaitState(id, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
	}
	big := strings.Repeat("x", 4000) // beyond what the job hash keeps
	for _, c := range []struct {
		what string
		id   string
	}{
		{"with a priority", e.Enqueue(textArgs{Text: "with a priority"}, flow.WithPriority(2))},
		{"with a big payload", e.Enqueue(textArgs{Text: big})},
	} {
		if r := testkit.Recv(t, ran, "the listed job"); testkit.PushedLease(r.lease) {
			t.Fatalf("a job %s ran under pushed lease %q", c.what, r.lease)
		}
		e.WaitState(c.id, flow.StateCompleted)
	}
}

// TestPushWithNoFreeSlotHandedBack: a worker with four slots offers two on
// each of its two queues; while four jobs of the first hold the slots
// (two pushed, two claimed), the two jobs one call pushes on the other
// queue are handed back, charging nothing, in their order (the first at
// the front), and run in that order once the slots free.
func TestPushWithNoFreeSlotHandedBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	started := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		if job.Args.N == 1 {
			<-release
		}
		return nil
	}))
	dry := e.Sig.Dry.Subscribe()
	defer dry.Close()
	w := e.startWorker(reg, runtime.Options{Concurrency: 4, ClaimBatch: 4, Queues: map[string]int{"a": 1, "b": 1},
		IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	seen := map[string]bool{}
	for len(seen) < 2 {
		d := dry.WaitFor(t, func(d testsignal.Dry) bool { return d.Worker == w.ID() })
		seen[d.Queue] = true
	}
	handed := e.Sig.Settled.Subscribe()
	defer handed.Close()
	in := func(q string, n ...int) []flow.Item {
		var items []flow.Item
		for _, k := range n {
			items = append(items, flow.Item{Args: workArgs{N: k}, Opts: []flow.EnqueueOption{flow.WithQueue(q)}})
		}
		return items
	}
	// two pushed to a's offer of two, two listed and claimed: the slots full
	_, err := e.Client.EnqueueMany(context.Background(), in("a", 1, 1, 1, 1)...)
	testkit.Must(t, err)
	for range 4 {
		testkit.Recv(t, started, "the jobs of a")
	}
	res, err := e.Client.EnqueueMany(context.Background(), in("b", 2, 3)...)
	testkit.Must(t, err)
	b1, b2 := res[0].ID, res[1].ID
	for back := map[string]bool{}; len(back) < 2; {
		s := handed.WaitFor(t, func(s testsignal.Settled) bool { return s.By == testsignal.HandBack })
		if (s.JobID != b1 && s.JobID != b2) || s.Err != nil || s.State != flow.StateAvailable {
			t.Fatalf("hand-back %+v; want %s and %s handed back, available", s, b1, b2)
		}
		back[s.JobID] = true
	}
	testkit.NoRecv(t, started, "a job of b while the slots are taken")
	pb := keys.Partition{NS: e.NS, Queue: "b"}
	listed, err := e.RDB.LRange(context.Background(), pb.Available(0), 0, -1).Result()
	testkit.Must(t, err)
	if want := []string{strings.TrimPrefix(b1, "b:0:"), strings.TrimPrefix(b2, "b:0:")}; !slices.Equal(listed, want) {
		t.Fatalf("b lists %v after the hand-backs, want %v: their order changed", listed, want)
	}
	close(release)
	for range 2 {
		testkit.Recv(t, started, "the jobs of b once the slots are free")
	}
	// fence 1 the push's, 2 the claim's; no attempt or crash charged
	for _, id := range []string{b1, b2} {
		checkSummary(t, id, e.WaitState(id, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 2})
	}
}

// TestStoppedWorkerGetsNoPush: once a worker has stopped, its offer
// pushes nothing: a job enqueued after is listed for the next worker.
func TestStoppedWorkerGetsNoPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }))
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	testkit.Must(t, w.Stop())
	id := e.Enqueue(workArgs{N: 1})
	checkSummary(t, id, e.Job(id), summary{State: flow.StateAvailable})
	if got := e.available(); len(got) != 1 || got[0] != id {
		t.Fatalf("available %v, want %s listed", got, id)
	}
}
