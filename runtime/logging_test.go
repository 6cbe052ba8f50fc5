package runtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// obsArgs is the job of the logging, event and middleware tests.
type obsArgs struct{ N int }

func (obsArgs) Kind() string { return "obs" }

// jsonLog is a worker's log as a JSON handler writes it, for tests that
// check the exact records (keys, levels, values as an operator's log
// pipeline sees them).
type jsonLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *jsonLog) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns the records so far at level warn or above that match
// (nil: all), without their time.
func (l *jsonLog) records(t *testing.T, match func(map[string]any) bool) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		delete(m, "time")
		if m["level"] == "DEBUG" || m["level"] == "INFO" {
			continue
		}
		if match == nil || match(m) {
			out = append(out, m)
		}
	}
	return out
}

// about returns the warn and error records about job id.
func (l *jsonLog) about(t *testing.T, id string) []map[string]any {
	t.Helper()
	return l.records(t, func(m map[string]any) bool { return m["job"] == id })
}

func (l *jsonLog) dump(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("worker log:\n%s", l.buf.String())
}

// startLogged runs a worker on e logging as JSON to a jsonLog, dumped if
// the test fails.
func (e *env) startLogged(h runtime.Handlers, o runtime.Options) (*workerRun, *jsonLog) {
	e.T.Helper()
	l := &jsonLog{}
	o.Logger = l.logger()
	w := e.startWorker(h, o)
	t := e.T.(*testing.T)
	t.Cleanup(func() {
		if t.Failed() {
			l.dump(t)
		}
	})
	return w, l
}

func register(t *testing.T, work func(ctx context.Context, job *flow.Job[obsArgs]) error) *flow.Registry {
	t.Helper()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, work))
	return reg
}

// settled waits until a worker of e has settled job id in state (its
// records and events are out by then: a worker signals after them) and
// returns the job. WaitState may return earlier, once the state is in
// Redis.
func (e *env) settled(id, state string) *flow.JobInfo {
	e.T.Helper()
	e.Sig.Settled.WaitFor(e.T, func(s testsignal.Settled) bool { return s.JobID == id && s.State == state })
	return e.Job(id)
}

func rfc3339(t time.Time) string { return t.Format(time.RFC3339Nano) }

// TestLogFailedAttempt: a failed attempt whose job will run again is one
// warn record with the job, its kind and queue, attempt n of max, the
// error and when the job runs again (the time Redis scheduled it at).
func TestLogFailedAttempt(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return errors.New("upstream said no") })
	w, logs := e.startLogged(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour,
		Backoff: func(int) time.Duration { return 10 * time.Second }})
	id := e.Enqueue(obsArgs{}, flow.WithMaxAttempts(3))
	j := e.settled(id, flow.StateRetryable)
	want := []map[string]any{{
		"level": "WARN", "msg": "job attempt failed; will retry", "worker": w.ID(),
		"job": id, "kind": "obs", "queue": "default", "attempt": 1.0, "max_attempts": 3.0,
		"reason": "error", "err": "upstream said no", "duration": 0.0,
		"next_run": rfc3339(clk.Now().Add(10 * time.Second)),
	}}
	if diff := cmp.Diff(want, logs.about(t, id)); diff != "" {
		t.Errorf("records about the job (-want +got):\n%s", diff)
	}
	if !j.RunAt.Equal(clk.Now().Add(10 * time.Second)) {
		t.Errorf("job runs at %v, the record says %v", j.RunAt, clk.Now().Add(10*time.Second))
	}
}

// TestLogPanic: a panic is one error record with the panic's value, the
// top of the stack from the panicking function, the crash count and
// limit, and when the job runs again (the crash delay).
func TestLogPanic(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { panic("kaboom") })
	w, logs := e.startLogged(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, CrashDelay: 2 * time.Second})
	id := e.Enqueue(obsArgs{})
	j := e.settled(id, flow.StateRetryable)
	got := logs.about(t, id)
	if len(got) != 1 {
		t.Fatalf("%d records about the job, want 1: %v", len(got), got)
	}
	stack, _ := got[0]["stack"].(string)
	delete(got[0], "stack")
	want := map[string]any{
		"level": "ERROR", "msg": "job attempt crashed; will retry", "worker": w.ID(),
		"job": id, "kind": "obs", "queue": "default", "attempt": 1.0, "max_attempts": float64(flow.DefaultMaxAttempts),
		"crash": 1.0, "crash_limit": 3.0, "reason": "panic", "panic": "kaboom", "duration": 0.0,
		"next_run": rfc3339(clk.Now().Add(2 * time.Second)),
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	lines := strings.Split(stack, "\n")
	if !strings.HasPrefix(lines[0], "github.com/sluicehq/sluice/runtime_test.TestLogPanic.func") || len(lines) > 10 {
		t.Errorf("stack does not start at the panicking handler, or has more than 5 frames:\n%s", stack)
	}
	if !j.RunAt.Equal(clk.Now().Add(2 * time.Second)) {
		t.Errorf("job runs at %v, the record says %v", j.RunAt, clk.Now().Add(2*time.Second))
	}
}

// TestLogArchiveAndQuarantine: an archive (attempts spent, skipped) and a
// quarantine are one error record each, with the reason.
func TestLogArchiveAndQuarantine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		work  func() error
		state string
		want  map[string]any
	}{
		{
			name: "attempts exhausted", work: func() error { return errors.New("still broken") },
			state: flow.StateArchived,
			want:  map[string]any{"msg": "job archived", "reason": "attempts_exhausted", "err": "still broken"},
		},
		{
			name: "skipped", work: func() error { return flow.Skip("not needed") },
			state: flow.StateArchived,
			want:  map[string]any{"msg": "job archived", "reason": "skipped", "err": "skip: not needed"},
		},
		{
			name: "quarantined", work: func() error { panic("again") },
			state: flow.StateQuarantined,
			want:  map[string]any{"msg": "job quarantined", "reason": "crash_limit", "crash": 1.0, "crash_limit": 1.0, "panic": "again"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return tt.work() })
			w, logs := e.startLogged(reg, runtime.Options{CrashLimit: 1})
			id := e.Enqueue(obsArgs{}, flow.WithMaxAttempts(1))
			e.settled(id, tt.state)
			got := logs.about(t, id)
			if len(got) != 1 {
				t.Fatalf("%d records about the job, want 1: %v", len(got), got)
			}
			if _, ok := got[0]["duration"].(float64); !ok {
				t.Errorf("record has no duration: %v", got[0])
			}
			delete(got[0], "duration")
			if _, ok := got[0]["stack"]; ok != (tt.state == flow.StateQuarantined) {
				t.Errorf("record has a stack: %v, want %v", ok, !ok)
			}
			delete(got[0], "stack")
			want := map[string]any{"level": "ERROR", "worker": w.ID(), "job": id, "kind": "obs", "queue": "default",
				"attempt": 1.0, "max_attempts": 1.0}
			for k, v := range tt.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got[0]); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLogLeaseLoss: worker A stalls past its lease; worker B reaps the job
// (an error record: a crash, lease_expired, lost by A) and runs it. When
// A's handler returns, its outcome is rejected and A logs the lost lease
// with the job's state and new holder, B.
func TestLogLeaseLoss(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)
	releaseA, releaseB := make(chan struct{}), make(chan struct{})
	started := testkit.Chan[string]()
	regA := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		started <- "A"
		<-releaseA // stalled: ignores its context
		return nil
	})
	a, logsA := e.startLogged(regA, runtime.Options{CrashDelay: noCrashDelay,
		Clock: clkA, Lease: lease, Concurrency: 1, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	regB := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		started <- "B"
		<-releaseB
		return nil
	})
	// Released before the workers stop (the cleanups registered last run
	// first), and again, in vain, if the test ends early.
	release := sync.OnceFunc(func() { close(releaseA); close(releaseB) })
	t.Cleanup(release)
	id := e.Enqueue(obsArgs{})
	if who := testkit.Recv(t, started, "A to start the job"); who != "A" {
		t.Fatalf("%s started the job, want A", who)
	}
	b, logsB := e.startLogged(regB, runtime.Options{CrashDelay: noCrashDelay,
		Clock: newTestClock(start.Add(lease + time.Second)), Lease: lease, IdlePoll: time.Hour})
	t.Cleanup(release)
	e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.By == testsignal.Reap })
	want := []map[string]any{{
		"level": "ERROR", "msg": "job attempt crashed; will retry", "worker": b.ID(),
		"job": id, "queue": "default", "reason": "lease_expired", "lost_by": a.ID(), "state": "available",
	}}
	if diff := cmp.Diff(want, logsB.about(t, id)); diff != "" {
		t.Errorf("B's records about the job (-want +got):\n%s", diff)
	}
	if who := testkit.Recv(t, started, "B to run the reaped job"); who != "B" {
		t.Fatalf("%s ran the reaped job, want B", who)
	}

	releaseA <- struct{}{}
	e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == a.ID() })
	want = []map[string]any{{
		"level": "ERROR", "msg": "job attempt lost its lease", "worker": a.ID(),
		"job": id, "kind": "obs", "queue": "default", "attempt": 1.0, "max_attempts": float64(flow.DefaultMaxAttempts),
		"err": runtime.ErrStale.Error(), "code": "ok", "state": "running", "holder": b.ID(), "duration": 0.0,
	}}
	if diff := cmp.Diff(want, logsA.about(t, id)); diff != "" {
		t.Errorf("A's records about the job (-want +got):\n%s", diff)
	}
}

// TestOnDeathSweepsQuarantine: a quarantine whose worker has no OnDeath
// stays pending in the job's slot and reaches another worker's OnDeath
// through its sweep, as a quarantine.
func TestOnDeathSweepsQuarantine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { panic("kaboom") })
	e.startWorker(reg, runtime.Options{CrashLimit: 1})
	id := e.Enqueue(obsArgs{})
	e.WaitState(id, flow.StateQuarantined)

	deaths := testkit.Chan[runtime.Death]()
	const tick = time.Second
	clk := newTestClock(fakeStart().Add(31 * time.Second)) // past the report's grace
	w := e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: tick,
		OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d }})
	e.Sig.Swept.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	clk.Advance(tick)
	d := testkit.Recv(t, deaths, "the quarantine's death report")
	if d.Job.ID != id || d.State != flow.StateQuarantined || d.Reason != "crash_limit" || d.Job.CrashAttempt != 1 ||
		d.LastError != "panic: kaboom" {
		t.Fatalf("death %+v", d)
	}
}

// TestLogArchivedAtClaim: a job whose deadline passed while it waited is
// archived by the claim that finds it, with an error record giving the
// reason.
func TestLogArchivedAtClaim(t *testing.T) {
	t.Parallel()
	start := fakeStart()
	e := newEnv(t, newTestClock(start))
	id := e.Enqueue(obsArgs{}, flow.WithDeadline(start.Add(time.Second)))
	w, logs := e.startLogged(register(t, func(context.Context, *flow.Job[obsArgs]) error { return nil }),
		runtime.Options{Clock: newTestClock(start.Add(2 * time.Second)), IdlePoll: time.Hour})
	e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.By == testsignal.Claim })
	want := []map[string]any{{
		"level": "ERROR", "msg": "job archived", "worker": w.ID(), "job": id, "queue": "default", "reason": "deadline_exceeded",
	}}
	if diff := cmp.Diff(want, logs.about(t, id)); diff != "" {
		t.Errorf("records about the job (-want +got):\n%s", diff)
	}
}

// TestLogLeaseLossAtRenewal: a renewal that finds the lease gone (worker
// B reaped the job and runs it) cancels A's attempt, which then logs the
// lost lease with the job's new holder.
func TestLogLeaseLossAtRenewal(t *testing.T) {
	t.Parallel()
	const lease, renew = 30 * time.Second, 10 * time.Second
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)
	started := testkit.Chan[string]()
	releaseB := make(chan struct{})
	regA := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		started <- "A"
		<-ctx.Done()
		return ctx.Err()
	})
	a, logsA := e.startLogged(regA, runtime.Options{CrashDelay: noCrashDelay, Clock: clkA, Lease: lease,
		RenewInterval: renew, Concurrency: 1, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	id := e.Enqueue(obsArgs{})
	if who := testkit.Recv(t, started, "A to start the job"); who != "A" {
		t.Fatalf("%s started the job, want A", who)
	}
	regB := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		started <- "B"
		<-releaseB
		return nil
	})
	b := e.startWorker(regB, runtime.Options{CrashDelay: noCrashDelay,
		Clock: newTestClock(start.Add(lease + time.Second)), Lease: lease, IdlePoll: time.Hour})
	t.Cleanup(func() { close(releaseB) }) // before B stops
	if who := testkit.Recv(t, started, "B to run the reaped job"); who != "B" {
		t.Fatalf("%s ran the reaped job, want B", who)
	}
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == a.ID() && p.N == 0 }) // A's renewal timer is armed
	clkA.Advance(renew)
	s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == a.ID() })
	if !errors.Is(s.Err, runtime.ErrLeaseLost) {
		t.Fatalf("A settled %+v, want its lease lost", s)
	}
	want := []map[string]any{{
		"level": "ERROR", "msg": "job attempt lost its lease", "worker": a.ID(),
		"job": id, "kind": "obs", "queue": "default", "attempt": 1.0, "max_attempts": float64(flow.DefaultMaxAttempts),
		"err": runtime.ErrLeaseLost.Error(), "state": "running", "holder": b.ID(), "duration": float64(renew),
	}}
	if diff := cmp.Diff(want, logsA.about(t, id)); diff != "" {
		t.Errorf("A's records about the job (-want +got):\n%s", diff)
	}
}
