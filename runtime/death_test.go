package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// badArgs has the kind of workArgs but arguments workArgs cannot decode.
type badArgs struct{ N string }

func (badArgs) Kind() string { return "work" }

// orphanArgs is a kind no worker registers.
type orphanArgs struct{ N int }

func (orphanArgs) Kind() string { return "orphan" }

// deathView is the part of a Death the tests compare.
type deathView struct {
	ID, Kind, Queue, Reason, LastError string
	Attempt, MaxAttempts               int
	Fence                              int64
	HasPayload, HasErr                 bool
}

func viewDeath(d runtime.Death) deathView {
	return deathView{
		ID: d.Job.ID, Kind: d.Job.Kind, Queue: d.Job.Queue, Reason: d.Reason, LastError: d.LastError,
		Attempt: d.Job.Attempt, MaxAttempts: d.Job.MaxAttempts, Fence: d.Job.Fence,
		HasPayload: len(d.Job.Payload) > 0, HasErr: d.Err != nil,
	}
}

// TestDeathHandlerReasons: every way an attempt archives its job reports
// exactly one death, after the job is archived, with the reason, the last
// error and the job.
func TestDeathHandlerReasons(t *testing.T) {
	t.Parallel()
	const deadline = 5 * time.Second
	tests := []struct {
		name  string
		args  flow.Args
		opts  []flow.EnqueueOption
		work  func(ctx context.Context) error
		clock bool // advance the clock past the deadline once the job runs
		want  deathView
	}{
		{
			name: "attempts_exhausted", args: workArgs{N: 1}, opts: []flow.EnqueueOption{flow.WithMaxAttempts(1)},
			work: func(context.Context) error { return errors.New("flaky upstream") },
			want: deathView{Kind: "work", Reason: "attempts_exhausted", LastError: "flaky upstream", Attempt: 1, HasErr: true},
		},
		{
			name: "skipped", args: workArgs{N: 2},
			work: func(context.Context) error { return flow.Skip("not needed") },
			want: deathView{Kind: "work", Reason: "skipped", LastError: "not needed", HasErr: true},
		},
		{
			name: "deadline_exceeded", args: workArgs{N: 3}, clock: true,
			work: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			want: deathView{Kind: "work", Reason: "deadline_exceeded", LastError: runtime.ErrDeadline.Error(), HasErr: true},
		},
		{
			name: "malformed_payload", args: badArgs{N: "x"},
			want: deathView{Kind: "work", Reason: "malformed_payload", HasErr: true},
		},
		{
			name: "unknown_kind", args: orphanArgs{N: 5},
			want: deathView{Kind: "orphan", Reason: "unknown_kind", HasErr: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newTestClock(fakeStart())
			e := newEnv(t, clk)
			started := testkit.Chan[string]()
			reg := flow.NewRegistry()
			testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
				started <- job.ID
				return tt.work(ctx)
			}))
			deaths := testkit.Chan[runtime.Death]()
			o := runtime.Options{
				Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
				OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d },
			}
			w := e.startWorker(reg, o)
			opts := tt.opts
			if tt.clock {
				opts = append(opts, flow.WithDeadline(clk.Now().Add(deadline)))
			}
			id := e.Enqueue(tt.args, opts...)
			if tt.clock {
				testkit.Recv(t, started, "the handler to start")
				clk.waitTimers(t, deadline, 1)
				clk.Advance(deadline)
			}
			d := testkit.Recv(t, deaths, "the death report")
			j := e.Job(id)
			if j.State != flow.StateArchived {
				t.Fatalf("death reported for a job in state %s", j.State)
			}
			want := tt.want
			want.ID, want.Queue, want.Fence, want.HasPayload = id, "default", 1, true
			want.MaxAttempts = j.MaxAttempts
			if want.LastError == "" {
				want.LastError = j.LastError
			}
			if diff := cmp.Diff(want, viewDeath(d)); diff != "" {
				t.Errorf("death (-want +got):\n%s", diff)
			}
			if d.Reason != j.Reason || d.LastError != j.LastError || d.Job.Attempt != j.Attempt {
				t.Errorf("death %+v disagrees with the archived job (reason %q, error %q, attempt %d)", d, j.Reason, j.LastError, j.Attempt)
			}
			if !w.stop(clk, o) {
				t.Fatal("worker did not stop")
			}
			testkit.NoRecv(t, deaths, "second death report")
		})
	}
}

// TestDeathNotReportedForStaleArchive: worker A's attempt outlives its
// lease and B takes the job over. A's skip is rejected by the fence check,
// so A reports no death; B's skip archives the job and B reports exactly
// one, for its own attempt.
func TestDeathNotReportedForStaleArchive(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)

	type run struct {
		release chan struct{}
		started chan int64
		deaths  chan runtime.Death
	}
	newRun := func() run {
		return run{release: make(chan struct{}), started: testkit.Chan[int64](), deaths: testkit.Chan[runtime.Death]()}
	}
	worker := func(r run, clk *testClock) (*workerRun, runtime.Options) {
		reg := flow.NewRegistry()
		testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
			r.started <- job.Fence
			<-r.release // ignores its context
			return flow.Skip("by fence " + string(rune('0'+job.Fence)))
		}))
		o := runtime.Options{CrashDelay: noCrashDelay,
			Clock: clk, Lease: lease, Concurrency: 1, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
			OnDeath: func(_ context.Context, d runtime.Death) { r.deaths <- d },
		}
		return e.startWorker(reg, o), o
	}
	ra, rb := newRun(), newRun()
	t.Cleanup(func() {
		for _, c := range []chan struct{}{ra.release, rb.release} {
			select {
			case <-c:
			default:
				close(c)
			}
		}
	})
	a, oa := worker(ra, clkA)
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, ra.started, "A to start the job")
	worker(rb, newTestClock(start.Add(lease+time.Second)))
	if f := testkit.Recv(t, rb.started, "B to run the reaped job"); f != 2 {
		t.Fatalf("B runs fence %d, want 2", f)
	}

	close(ra.release)
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == a.ID() }); !errors.Is(s.Err, store.ErrStale) {
		t.Fatalf("A settled its skip %+v, want it rejected as stale", s)
	}
	if !a.stop(clkA, oa) {
		t.Fatal("A did not stop")
	}
	testkit.NoRecv(t, ra.deaths, "death reported by the stale attempt")
	if j := e.Job(id); j.State != flow.StateRunning || j.Fence != 2 {
		t.Fatalf("after A's stale skip: %+v, want running under fence 2", summarize(j))
	}

	close(rb.release)
	d := testkit.Recv(t, rb.deaths, "B's death report")
	if d.Job.ID != id || d.Job.Fence != 2 || d.Reason != "skipped" || d.LastError != "by fence 2" {
		t.Errorf("B's death: %+v", d)
	}
	if j := e.Job(id); j.State != flow.StateArchived {
		t.Errorf("job %s after B's skip, want archived", j.State)
	}
}

// TestDeathHandlerIsolated: a panicking death handler is recovered and
// logged, and a blocked one delays neither acks nor the worker's jobs.
func TestDeathHandlerIsolated(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		return flow.Skip("n" + string(rune('0'+job.Args.N)))
	}))
	unblock := make(chan struct{})
	t.Cleanup(func() { close(unblock) })
	deaths := testkit.Chan[string]()
	o := runtime.Options{
		Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
		OnDeath: func(_ context.Context, d runtime.Death) {
			deaths <- d.LastError
			switch d.LastError {
			case "n1":
				panic("death handler bug")
			case "n2":
				<-unblock
			}
		},
	}
	w := e.startWorker(reg, o)
	first := e.Enqueue(workArgs{N: 1})
	if got := testkit.Recv(t, deaths, "the first death"); got != "n1" {
		t.Fatalf("first death %q", got)
	}
	e.Sig.Delivered.WaitFor(t, func(d testsignal.Job) bool { return d.JobID == first })
	if w.logs.find(func(r logRec) bool { return r.Msg == "death handler panicked" && r.Attrs["job"] == first }) == nil {
		t.Errorf("the death handler's panic was not logged")
	}
	e.Enqueue(workArgs{N: 2})
	if got := testkit.Recv(t, deaths, "the second death"); got != "n2" {
		t.Fatalf("second death %q", got)
	}
	// The death handler is blocked; jobs still run and are acked.
	third := e.Enqueue(workArgs{N: 3})
	e.WaitState(third, flow.StateArchived)
	testkit.NoRecv(t, deaths, "a death delivered while the handler is blocked")
	unblock <- struct{}{}
	if got := testkit.Recv(t, deaths, "the third death"); got != "n3" {
		t.Fatalf("third death %q", got)
	}
}

// claimingTest starts a worker that reports deaths on the channel it
// returns and serves another queue, so that the test claims the default
// queue's jobs itself, with the store it returns.
func claimingTest(t *testing.T) (*testClock, *env, *workerRun, chan runtime.Death, *store.Store) {
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	deaths := testkit.Chan[runtime.Death]()
	w := e.startWorker(flow.NewRegistry(), runtime.Options{
		Clock: clk, Queues: map[string]int{"other": 1}, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
		OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d },
	})
	st := store.New(e.RDB, store.Config{NS: e.NS, RetainCompleted: time.Hour, RetainArchived: time.Hour, RetainCancelled: time.Hour, CrashLimit: 3, Now: clk.Now})
	return clk, e, w, deaths, st
}

// TestDeathAtClaim: a job archived by the claim script (its deadline passed
// while it waited) is reported through the claim path's hook, with the job
// read back from Redis.
func TestDeathAtClaim(t *testing.T) {
	t.Parallel()
	clk, e, w, deaths, st := claimingTest(t)
	id := e.Enqueue(workArgs{N: 7}, flow.WithDeadline(clk.Now().Add(time.Second)), flow.WithMaxAttempts(4))
	clk.Advance(2 * time.Second)
	res, err := st.Claim(context.Background(), e.partition(), store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "test", Nonce: "n", PromoteLimit: 10})
	testkit.Must(t, err)
	if len(res.Parked) != 1 || len(res.Jobs) != 0 {
		t.Fatalf("claim: %+v, want the job parked", res)
	}
	w.ArchivedAtClaim(e.partition(), res.Parked)
	d := testkit.Recv(t, deaths, "the death report")
	want := deathView{ID: id, Kind: "work", Queue: "default", Reason: "deadline_exceeded", MaxAttempts: 4, HasPayload: true}
	if diff := cmp.Diff(want, viewDeath(d), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("death (-want +got):\n%s", diff)
	}
}
