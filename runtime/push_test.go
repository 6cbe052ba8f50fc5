package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// textArgs carries a payload of any size.
type textArgs struct{ Text string }

func (textArgs) Kind() string { return "text" }

// TestIdleWorkerTakesPushedJobs: an idle worker's claim left an offer, so
// plain jobs enqueued next are leased to it by their enqueues and run
// under the pushed leases (nonce.p<k>), a payload kept in its own key
// included; a job with an option is listed and claimed as ever.
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
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })

	big := strings.Repeat("x", 4000) // beyond what the job hash keeps
	for _, text := range []string{"small", big} {
		id := e.Enqueue(textArgs{Text: text})
		r := testkit.Recv(t, ran, "the idle worker to run the job")
		if !strings.Contains(r.lease, ".p") || r.text != text {
			t.Fatalf("job ran under lease %q with %d bytes; want a pushed lease (nonce.p<k>) and its %d bytes",
				r.lease, len(r.text), len(text))
		}
		checkSummary(t, id, e.WaitState(id, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
	}
	id := e.Enqueue(textArgs{Text: "with a priority"}, flow.WithPriority(2))
	if r := testkit.Recv(t, ran, "the listed job"); strings.Contains(r.lease, ".p") {
		t.Fatalf("a job with an option ran under pushed lease %q", r.lease)
	}
	e.WaitState(id, flow.StateCompleted)
}

// TestPushWithNoFreeSlotHandedBack: a worker with one slot offers a job
// on each of its two queues; while the first pushed job holds the slot, a
// job pushed on the other queue is handed back, charging nothing, and
// runs once the slot frees.
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
	w := e.startWorker(reg, runtime.Options{Concurrency: 1, Queues: map[string]int{"a": 1, "b": 1},
		IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	defer dry.Close()
	seen := map[string]bool{}
	for len(seen) < 2 {
		d := dry.WaitFor(t, func(d testsignal.Dry) bool { return d.Worker == w.ID() })
		seen[d.Queue] = true
	}
	handed := e.Sig.Settled.Subscribe()
	defer handed.Close()
	first := e.Enqueue(workArgs{N: 1}, flow.WithQueue("a"))
	if got := testkit.Recv(t, started, "the first job"); got != first {
		t.Fatalf("started %s, want %s", got, first)
	}
	second := e.Enqueue(workArgs{N: 2}, flow.WithQueue("b"))
	s := handed.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == second && s.By == testsignal.HandBack })
	if s.Err != nil || s.State != flow.StateAvailable {
		t.Fatalf("hand-back: %+v", s)
	}
	testkit.NoRecv(t, started, "a second job while the only slot is taken")
	close(release)
	if got := testkit.Recv(t, started, "the second job once the slot is free"); got != second {
		t.Fatalf("started %s, want %s", got, second)
	}
	// fence 1 the push's, 2 the claim's; no attempt or crash charged
	checkSummary(t, second, e.WaitState(second, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 2})
	e.WaitState(first, flow.StateCompleted)
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
