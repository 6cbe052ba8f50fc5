package runtime_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// workArgs is the job most tests run; N tells jobs apart.
type workArgs struct{ N int }

func (workArgs) Kind() string { return "work" }

// slowArgs is a second kind, for per-kind options.
type slowArgs struct{ N int }

func (slowArgs) Kind() string { return "slow" }

// counters is what a handler saw of its attempt.
type counters struct{ Attempt, CrashAttempt int }

// TestPanicsCountAsCrashesAndErrorsAsAttempts: a handler that always
// panics is quarantined at the crash limit without spending an attempt;
// one that returns an ordinary error spends attempts until MaxAttempts and
// is archived, never touching crash_attempt.
func TestPanicsCountAsCrashesAndErrorsAsAttempts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		work      func(job *flow.Job[workArgs]) error
		opts      []flow.EnqueueOption
		want      summary
		wantClass string
		wantMsg   string
		wantSeen  []counters
	}{
		{
			name: "panic",
			work: func(job *flow.Job[workArgs]) error { panic(fmt.Sprintf("boom %d", job.Args.N)) },
			want: summary{State: flow.StateQuarantined, Reason: "crash_limit", CrashAttempt: 3, Fence: 3},
			// panics are recorded before the crash counter moves
			wantClass: "panic", wantMsg: "panic: boom 1",
			wantSeen: []counters{{0, 0}, {0, 1}, {0, 2}},
		},
		{
			name:      "returned error",
			work:      func(*flow.Job[workArgs]) error { return errors.New("flaky upstream") },
			opts:      []flow.EnqueueOption{flow.WithMaxAttempts(2)},
			want:      summary{State: flow.StateArchived, Reason: "attempts_exhausted", Attempt: 2, Fence: 2},
			wantClass: "error", wantMsg: "flaky upstream",
			wantSeen: []counters{{0, 0}, {1, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newTestClock(fakeStart())
			e := newEnv(t, clk)
			seen := testkit.Chan[counters]()
			reg := flow.NewRegistry()
			if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
				seen <- counters{job.Attempt, job.CrashAttempt}
				return tt.work(job)
			}); err != nil {
				t.Fatal(err)
			}
			// No backoff: the retry is due at once, so the fake clock need
			// not move.
			e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay,
				Clock: clk, Backoff: func(int) time.Duration { return 0 }, IdlePoll: time.Hour,
			})
			id := e.Enqueue(workArgs{N: 1}, tt.opts...)
			j := e.WaitState(id, tt.want.State)
			checkSummary(t, "final", j, tt.want)
			var got []counters
			for range tt.wantSeen {
				got = append(got, testkit.Recv(t, seen, "an attempt"))
			}
			testkit.NoRecv(t, seen, "attempt after the terminal state")
			if fmt.Sprint(got) != fmt.Sprint(tt.wantSeen) {
				t.Errorf("handler saw (attempt, crash_attempt) %v, want %v", got, tt.wantSeen)
			}
			if len(j.Errors) != len(tt.wantSeen) {
				t.Fatalf("%d errors recorded, want %d: %+v", len(j.Errors), len(tt.wantSeen), j.Errors)
			}
			for i, r := range j.Errors {
				if r.Class != tt.wantClass || r.Message != tt.wantMsg {
					t.Errorf("error %d: class %q message %q, want %q %q", i, r.Class, r.Message, tt.wantClass, tt.wantMsg)
				}
				if tt.wantClass == "panic" && !strings.Contains(r.Stack, "TestPanicsCountAsCrashesAndErrorsAsAttempts") {
					t.Errorf("error %d: stack does not show the panicking handler:\n%s", i, r.Stack)
				}
			}
		})
	}
}

// blockUntilDone is a handler body that reports its context's cause when
// it is cancelled.
func blockUntilDone(started chan<- string, causes chan<- error) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		started <- id
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}
}

// TestTimeoutSpendsAnAttempt: an attempt that outlives its timeout (set on
// the job or per kind) has its context cancelled with ErrTimeout and is
// retried later with attempt+1 and an error of class "timeout".
func TestTimeoutSpendsAnAttempt(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	tests := []struct {
		name string
		args flow.Args
		opts []flow.EnqueueOption
		wo   runtime.Options
	}{
		{name: "WithTimeout", args: workArgs{N: 1}, opts: []flow.EnqueueOption{flow.WithTimeout(timeout)}},
		{name: "KindTimeout", args: slowArgs{N: 1}, wo: runtime.Options{KindTimeout: map[string]time.Duration{"slow": timeout}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newTestClock(fakeStart())
			e := newEnv(t, clk)
			started, causes := testkit.Chan[string](), testkit.Chan[error]()
			body := blockUntilDone(started, causes)
			reg := flow.NewRegistry()
			testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return body(ctx, job.ID) }))
			testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[slowArgs]) error { return body(ctx, job.ID) }))
			o := tt.wo
			o.Clock, o.IdlePoll = clk, time.Hour
			o.Backoff = func(int) time.Duration { return time.Minute }
			e.startWorker(reg, o)

			id := e.Enqueue(tt.args, tt.opts...)
			testkit.Recv(t, started, "the handler to start")
			clk.waitTimers(t, timeout, 1) // the attempt's timeout is armed
			clk.Advance(timeout - time.Millisecond)
			testkit.NoRecv(t, causes, "cancellation before the timeout")
			clk.Advance(time.Millisecond)
			if cause := testkit.Recv(t, causes, "the timeout to cancel the handler"); !errors.Is(cause, runtime.ErrTimeout) {
				t.Errorf("cause %v, want ErrTimeout", cause)
			}
			j := e.WaitState(id, flow.StateRetryable)
			checkSummary(t, "after the timeout", j, summary{State: flow.StateRetryable, Attempt: 1, Fence: 1})
			if want := clk.Now().Add(time.Minute); !j.RunAt.Equal(want) {
				t.Errorf("retry due at %v, want %v (now + backoff)", j.RunAt, want)
			}
			if len(j.Errors) != 1 || j.Errors[0].Class != "timeout" || !strings.Contains(j.Errors[0].Message, "timed out") {
				t.Errorf("errors %+v, want one of class timeout", j.Errors)
			}
		})
	}
}

// TestDeadlineArchives: a job whose deadline passes is archived with
// reason deadline_exceeded, without spending an attempt: while it runs
// (its context is cancelled with ErrDeadline) or before it is claimed (it
// never runs).
func TestDeadlineArchives(t *testing.T) {
	t.Parallel()
	const dl = 5 * time.Second
	tests := []struct {
		name      string
		lateBy    time.Duration // how far past the deadline the worker's clock starts
		wantRun   bool
		wantFence int64
	}{
		{name: "while running", lateBy: -dl, wantRun: true, wantFence: 1},
		{name: "before claim", lateBy: time.Second, wantRun: false, wantFence: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := fakeStart()
			e := newEnv(t, runtime.NewFakeClock(start))
			deadline := start.Add(dl)
			clk := newTestClock(deadline.Add(tt.lateBy))
			started, causes := testkit.Chan[string](), testkit.Chan[error]()
			body := blockUntilDone(started, causes)
			reg := flow.NewRegistry()
			testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return body(ctx, job.ID) }))
			e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour})

			id := e.Enqueue(workArgs{N: 1}, flow.WithDeadline(deadline))
			if tt.wantRun {
				testkit.Recv(t, started, "the handler to start")
				clk.waitTimers(t, dl, 1) // the deadline is armed
				clk.Advance(dl)
				if cause := testkit.Recv(t, causes, "the deadline to cancel the handler"); !errors.Is(cause, runtime.ErrDeadline) {
					t.Errorf("cause %v, want ErrDeadline", cause)
				}
			}
			j := e.WaitState(id, flow.StateArchived)
			checkSummary(t, "after the deadline", j, summary{State: flow.StateArchived, Reason: "deadline_exceeded", Fence: tt.wantFence})
			if !tt.wantRun {
				testkit.NoRecv(t, started, "a run of a job past its deadline")
				return
			}
			if len(j.Errors) != 1 || j.Errors[0].Class != "deadline" {
				t.Errorf("errors %+v, want one of class deadline", j.Errors)
			}
		})
	}
}

// TestPanicDoesNotDisturbOtherJobs: a handler panicking (until it is
// quarantined) while another job runs in the same worker leaves that job
// running, uncancelled, to complete normally.
func TestPanicDoesNotDisturbOtherJobs(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	started := testkit.Chan[string]()
	release := make(chan struct{})
	steadyErr := testkit.Chan[error]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-release
		steadyErr <- ctx.Err()
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[slowArgs]) error {
		panic("poison")
	}))
	w := e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay, Clock: clk, Concurrency: 2, IdlePoll: time.Hour})

	steady := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the steady job to start")
	poison := e.Enqueue(slowArgs{N: 1})
	checkSummary(t, "poison", e.WaitState(poison, flow.StateQuarantined),
		summary{State: flow.StateQuarantined, Reason: "crash_limit", CrashAttempt: 3, Fence: 3})

	checkSummary(t, "steady while the poison crashed", e.Job(steady),
		summary{State: flow.StateRunning, Fence: 1, Holder: w.ID()})
	close(release)
	if err := testkit.Recv(t, steadyErr, "the steady job to finish"); err != nil {
		t.Errorf("steady job's context was cancelled: %v", err)
	}
	checkSummary(t, "steady", e.WaitState(steady, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
	select {
	case <-w.Done():
		t.Errorf("Run returned (%v) after a handler panicked", w.Err())
	default:
	}
}

// TestHandlerGoexitIsSettled: a handler that ends its goroutine with
// runtime.Goexit instead of returning (t.FailNow inside a handler does
// that) must not leave its job running forever, its lease renewed by a
// worker that waits for a result that never comes. Like a panic, it is a
// crash.
func TestHandlerGoexitIsSettled(t *testing.T) {
	t.Parallel()
	const (
		window = 13 * time.Second
		grace  = 3 * time.Second
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	calls := testkit.Chan[int64]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		calls <- job.Fence
		goruntime.Goexit()
		return nil
	}))
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay, Clock: clk, ShutdownWindow: window, CancelGrace: grace, IdlePoll: time.Hour})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, calls, "the handler to run")
	settled, last := redisproc.Poll(5*time.Second, func() (bool, string) {
		j := e.Job(id)
		return j.State != flow.StateRunning || j.Fence > 1, fmt.Sprintf("%+v", summarize(j))
	})
	if !settled {
		// (The cleanup unsticks the worker: it ends the shutdown window
		// and the cancel grace on the fake clock.)
		t.Fatalf("a handler that called runtime.Goexit left its job running (%s); it is never settled", last)
	}
	checkSummary(t, "after three Goexits", e.WaitState(id, flow.StateQuarantined),
		summary{State: flow.StateQuarantined, Reason: "crash_limit", CrashAttempt: 3, Fence: 3})
}
