package runtime_test

// Integration tests of the worker runtime against a real redis-server
// (started once in TestMain, shared; every test has its own namespace).
//
// Synchronisation never sleeps: tests wait on the worker's test signals
// (internal/testsignal: a job settled or claimed, the fetch loop idle, a
// renewal round or a maintenance pass done; testkit.Env.WaitState), on
// channels their handlers send on, or on the fake clock's timer hooks
// (testClock). Only the state of worker processes is polled.

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// shared is the package's redis-server.
var shared redistest.Env

// noCrashDelay is the CrashDelay of tests whose fake clock does not move
// while a crashed job should run again.
const noCrashDelay = -1

// waitTimeout bounds every wait of a test: generous, for -race on 2 cores.
const waitTimeout = testkit.Timeout

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "":
	case "poison":
		os.Exit(poisonChildMain())
	case "deathexit":
		os.Exit(deathExitChildMain())
	case "callbackpanic":
		os.Exit(callbackChildMain())
	case "twoworkers":
		os.Exit(twoWorkersChildMain(2, 1))
	case "oneworker":
		os.Exit(twoWorkersChildMain(1, 2))
	default:
		// Re-executed by a crash test: be a worker process, not a test run.
		os.Exit(childMain())
	}
	redistest.Main(m, &shared, false)
}

// env is one test's namespace with a Redis client, a flow client and
// the signals of the workers it starts (testkit.Env).
type env struct {
	*testkit.Env
}

// newEnv makes a namespace; clk (may be nil for Redis TIME) is the flow
// client's clock.
func newEnv(t *testing.T, clk runtime.Clock) *env {
	t.Helper()
	return &env{testkit.NewEnv(t, shared.Client(t), flow.ClientOptions{Clock: clk})}
}

// partition is the default queue's only partition of this namespace.
func (e *env) partition() keys.Partition {
	return keys.Partition{NS: e.NS, Queue: "default", Index: 0}
}

// available lists the IDs waiting at priority 0, head first.
func (e *env) available() []string {
	e.T.Helper()
	p := e.partition()
	locals, err := e.RDB.LRange(context.Background(), p.Available(0), 0, -1).Result()
	if err != nil {
		e.T.Fatal(err)
	}
	ids := make([]string, len(locals))
	for i, l := range locals {
		ids[i] = keys.Ref{Partition: p, Local: l}.String()
	}
	return ids
}

// rawJob is the job's hash exactly as stored.
func (e *env) rawJob(id string) map[string]string {
	e.T.Helper()
	ref, ok := keys.ParseRef(e.NS, id)
	if !ok {
		e.T.Fatalf("bad job ID %q", id)
	}
	m, err := e.RDB.HGetAll(context.Background(), ref.Job(ref.Local)).Result()
	if err != nil {
		e.T.Fatal(err)
	}
	return m
}

// summary is the part of a job most tests assert on, comparable with ==.
type summary struct {
	State        string
	Reason       string
	Attempt      int
	CrashAttempt int
	Fence        int64
	Holder       string // lease holder while running
	OrphanHolder string
	OrphanCount  int
}

func summarize(j *flow.JobInfo) summary {
	return summary{
		State: j.State, Reason: j.Reason, Attempt: j.Attempt, CrashAttempt: j.CrashAttempt,
		Fence: j.Fence, Holder: j.LeaseHolder, OrphanHolder: j.Orphan.Holder, OrphanCount: j.Orphan.Count,
	}
}

func checkSummary(t *testing.T, what string, j *flow.JobInfo, want summary) {
	t.Helper()
	if got := summarize(j); got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// fakeStart is a fake clock's start: now, rounded to a whole millisecond
// so that times written to Redis (in ms) compare equal.
func fakeStart() time.Time { return time.UnixMilli(time.Now().UnixMilli()) }

// testClock is a fake clock that also counts the timers made, by
// duration, so a test knows a loop has armed its next timer (and so has
// finished the work before it) before it advances the time.
type testClock struct {
	*runtime.FakeClock

	mu      sync.Mutex
	made    map[time.Duration]int
	changed chan struct{}
}

var _ runtime.Clock = (*testClock)(nil)

func newTestClock(start time.Time) *testClock {
	return &testClock{FakeClock: runtime.NewFakeClock(start), made: map[time.Duration]int{}, changed: make(chan struct{})}
}

func (c *testClock) NewTimer(d time.Duration) runtime.Timer {
	t := c.FakeClock.NewTimer(d)
	c.note(d)
	return t
}

func (c *testClock) AfterFunc(d time.Duration, f func()) runtime.Timer {
	t := c.FakeClock.AfterFunc(d, f)
	c.note(d)
	return t
}

func (c *testClock) note(d time.Duration) {
	c.mu.Lock()
	c.made[d]++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// waitTimers waits until at least n timers of duration d have been made
// (the n-th is then armed: an Advance past it fires it).
func (c *testClock) waitTimers(t *testing.T, d time.Duration, n int) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		c.mu.Lock()
		got, ch := c.made[d], c.changed
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out waiting for timer #%d of %s (made %d)", n, d, got)
		}
	}
}

// logSink captures a worker's log records, for tests that check what it
// logged (once a signal says it did) and for the logs of a failed test.
type logSink struct {
	mu   sync.Mutex
	recs []logRec
}

type logRec struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

func newLogSink() *logSink { return &logSink{} }

func (s *logSink) add(r logRec) {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
}

// find returns the first record so far matching match, or nil.
func (s *logSink) find(match func(logRec) bool) *logRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.recs {
		if match(s.recs[i]) {
			r := s.recs[i]
			return &r
		}
	}
	return nil
}

// count is how many records so far match match.
func (s *logSink) count(match func(logRec) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.recs {
		if match(r) {
			n++
		}
	}
	return n
}

func (s *logSink) dump(t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		t.Logf("worker log: %s %s %v", r.Level, r.Msg, r.Attrs)
	}
}

type sinkHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (h sinkHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h sinkHandler) Handle(_ context.Context, r slog.Record) error {
	m := make(map[string]any, len(h.attrs)+r.NumAttrs())
	for _, a := range h.attrs {
		m[a.Key] = a.Value.Any()
	}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.Any()
		return true
	})
	h.sink.add(logRec{Level: r.Level, Msg: r.Message, Attrs: m})
	return nil
}

func (h sinkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return sinkHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h sinkHandler) WithGroup(string) slog.Handler { return h }

// workerRun is a worker started by env.startWorker, with its logs.
type workerRun struct {
	*testkit.Worker
	logs *logSink
}

// startWorker runs a worker on e's namespace (logging to its logSink
// unless o has a Logger); the test's cleanup stops it (after the test's
// own cleanups registered later, which release its handlers) and checks
// that Run returned nil.
func (e *env) startWorker(h runtime.Handlers, o runtime.Options) *workerRun {
	e.T.Helper()
	t := e.T
	logs := newLogSink()
	if o.Logger == nil {
		o.Logger = slog.New(sinkHandler{sink: logs})
	}
	r := &workerRun{Worker: e.StartWorker(h, o), logs: logs}
	tc, _ := o.Clock.(*testClock)
	// Registered after testkit's cleanup, so it runs before: on a test
	// clock, a plain Stop would wait for the shutdown window for ever.
	t.Cleanup(func() {
		if !r.stop(tc, o) {
			t.Errorf("worker %s did not stop (a handler still in flight?)", r.ID())
		} else if err := r.Stop(); err != nil {
			t.Errorf("worker %s: Run returned %v", r.ID(), err)
		}
		if t.Failed() {
			logs.dump(t)
		}
	})
	return r
}

// stop cancels the worker's Run and waits for it to return. On a test
// clock it ends the shutdown window and the cancel grace of jobs still in
// flight (a failed test may leave some) by advancing the clock once each
// timer is armed.
func (r *workerRun) stop(tc *testClock, o runtime.Options) bool {
	timeout := time.After(waitTimeout)
	if tc == nil {
		r.Cancel()
		select {
		case <-r.Done():
			return true
		case <-timeout:
			return false
		}
	}
	window, grace := o.ShutdownWindow, o.CancelGrace
	if window == 0 {
		window = 10 * time.Second // the documented defaults
	}
	if grace == 0 {
		grace = time.Second
	}
	tc.mu.Lock()
	seenW, seenG := tc.made[window], tc.made[grace]
	tc.mu.Unlock()
	r.Cancel()
	for {
		tc.mu.Lock()
		w, g, changed := tc.made[window], tc.made[grace], tc.changed
		tc.mu.Unlock()
		if w > seenW {
			seenW = w
			tc.Advance(window)
		}
		if g > seenG {
			seenG = g
			tc.Advance(grace)
		}
		select {
		case <-r.Done():
			return true
		case <-changed:
		case <-timeout:
			return false
		}
	}
}

// wait waits for Run to return and returns its error.
func (r *workerRun) wait(t *testing.T) error {
	t.Helper()
	testkit.Recv(t, r.Done(), "Run to return")
	return r.Err()
}
