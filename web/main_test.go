package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

var env redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &env, false) }

// flaky fails while its fixture's failing flag is set; once it is clear,
// it waits for the fixture's gate (when set), then completes.
type flaky struct {
	N      int    `msgpack:"n"`
	Secret string `msgpack:"secret"`
}

func (flaky) Kind() string { return "flaky" }

// work completes at once.
type work struct {
	Order string `msgpack:"order"`
}

func (work) Kind() string { return "work" }

// parent checkpoints a step, spawns two work children, joins them, then
// waits for the signal "approve".
type parent struct{}

func (parent) Kind() string { return "parent" }

// later spawns two work children due in an hour, as its step "later",
// and joins them.
type later struct{}

func (later) Kind() string { return "later" }

// panicky panics while its fixture's panicking flag is set, else
// completes.
type panicky struct{}

func (panicky) Kind() string { return "panicky" }

// payout commits one effect, INCRBY Key 5, Key being in another slot.
type payout struct {
	Key string `msgpack:"key"`
}

func (payout) Kind() string { return "payout" }

// napper sleeps an hour (step.Sleep "nap").
type napper struct{}

func (napper) Kind() string { return "napper" }

// stall, in its first attempt (fence 1), says it started and then ignores
// its context until its fixture's unstall channel is closed; a later
// attempt completes at once.
type stall struct{}

func (stall) Kind() string { return "stall" }

// block reports Percent done, when set, then runs until its context is
// cancelled.
type block struct {
	Percent float64 `msgpack:"percent"`
}

func (block) Kind() string { return "block" }

// testQueue is the queue the fixtures' jobs go to, over testPartitions.
const (
	testQueue      = "web"
	testPartitions = 2
	testPrefix     = "/ops"
)

// fixture is a console over a test namespace, with a worker running the
// jobs above when asked.
type fixture struct {
	t         *testing.T
	env       *testkit.Env
	reg       *flow.Registry // the handlers of the jobs above
	ops       *admin.Client
	url       string // the console's base URL, prefix included
	failing   atomic.Bool
	panicking atomic.Bool
	gate      atomic.Pointer[chan struct{}]
	started   chan string   // block and stall jobs that started
	canceled  chan string   // block jobs whose context was cancelled
	unstall   chan struct{} // closed: stall jobs return
	con       *console      // the console served at url
}

func newFixture(t *testing.T, o Options, withWorker bool) *fixture {
	t.Helper()
	parts := map[string]int{testQueue: testPartitions}
	reg := flow.NewRegistry()
	f := &fixture{t: t, reg: reg, started: testkit.Chan[string](), canceled: testkit.Chan[string](), unstall: make(chan struct{})}
	f.failing.Store(true)
	f.panicking.Store(true)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[flaky]) error {
		if f.failing.Load() {
			return errors.New("payment gateway said no")
		}
		if g := f.gate.Load(); g != nil {
			select {
			case <-*g:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[work]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[parent]) error {
		if _, err := step.Run(ctx, "charge", func(context.Context) (map[string]any, error) {
			return map[string]any{"receipt": "R-77"}, nil
		}); err != nil {
			return err
		}
		ch, err := flow.Spawn(ctx, "kids", flow.Item{Args: work{Order: "k1"}, Opts: []flow.EnqueueOption{flow.WithQueue(testQueue)}},
			flow.Item{Args: work{Order: "k2"}, Opts: []flow.EnqueueOption{flow.WithQueue(testQueue)}})
		if err != nil {
			return err
		}
		if _, err := flow.Join[struct{}](ctx, ch, flow.CollectAll); err != nil {
			return err
		}
		_, _, err = step.WaitSignal[string](ctx, "approve", time.Hour)
		return err
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[later]) error {
		opts := []flow.EnqueueOption{flow.WithQueue(testQueue), flow.WithDelay(time.Hour)}
		ch, err := flow.Spawn(ctx, "later", flow.Item{Args: work{Order: "l1"}, Opts: opts}, flow.Item{Args: work{Order: "l2"}, Opts: opts})
		if err != nil {
			return err
		}
		_, err = flow.Join[struct{}](ctx, ch, flow.CollectAll)
		return err
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[panicky]) error {
		if f.panicking.Load() {
			panic("ledger out of balance")
		}
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[payout]) error {
		return step.Commit(ctx, "pay", idempotency.IncrBy(job.Args.Key, 5))
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[napper]) error {
		return step.Sleep(ctx, "nap", time.Hour)
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[stall]) error {
		if job.Fence > 1 {
			return nil
		}
		f.started <- job.ID
		<-f.unstall
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[block]) error {
		if p := job.Args.Percent; p > 0 {
			if err := runtime.ReportProgress(ctx, p, "copying"); err != nil {
				return err
			}
		}
		f.started <- job.ID
		<-ctx.Done()
		f.canceled <- job.ID
		return ctx.Err()
	}))
	f.env = testkit.NewEnv(t, env.Client(t), flow.ClientOptions{Registry: reg, Partitions: parts})
	if withWorker {
		// once idle, it has registered the test queue's layout, which the
		// console's queue actions look up (a pause sent before found no
		// queue when the worker started late, under load)
		w := f.startWorker(runtime.Options{})
		w.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	}
	f.ops = admin.New(f.env.Client)
	o.Admin = f.ops
	o.Prefix = testPrefix
	if o.PollInterval == 0 {
		o.PollInterval = 200 * time.Millisecond
	}
	con, err := newConsole(o) // Handler's console, kept for the tests that hold its poller
	testkit.Must(t, err)
	f.con = con
	mux := http.NewServeMux()
	mux.Handle(testPrefix+"/", con.routes())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL + testPrefix
	return f
}

// startWorker starts a worker of the fixture's handlers on the test queue,
// with o (Partitions, Queues and Concurrency filled in when unset).
// quarantined runs a panicky job on a worker with a crash limit of 1 and
// returns its ID once it is quarantined.
func (f *fixture) quarantined() string {
	f.t.Helper()
	f.startWorker(runtime.Options{CrashLimit: 1, CrashDelay: -1})
	id := f.enqueue(panicky{})
	f.env.WaitState(id, flow.StateQuarantined)
	return id
}

func (f *fixture) startWorker(o runtime.Options) *testkit.Worker {
	f.t.Helper()
	if o.Partitions == nil {
		o.Partitions = map[string]int{testQueue: testPartitions}
	}
	if o.Queues == nil {
		o.Queues = map[string]int{testQueue: 1}
	}
	if o.Concurrency == 0 {
		o.Concurrency = 4
	}
	return f.env.StartWorker(f.reg, o)
}

// startScheduler runs a scheduler, until the end of the test, of one
// schedule, name: a work job on the test queue every hour. It returns
// once the schedule is published.
func (f *fixture) startScheduler(name string, opts ...flow.EnqueueOption) {
	f.t.Helper()
	ctx := context.Background()
	sch, err := flow.NewScheduler(f.env.Client, flow.SchedulerOptions{Logger: testkit.Quiet})
	testkit.Must(f.t, err)
	testkit.Must(f.t, sch.Add(flow.Schedule{Name: name, Every: time.Hour, Args: work{Order: name},
		Opts: append([]flow.EnqueueOption{flow.WithQueue(testQueue)}, opts...)}))
	sctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- sch.Run(sctx) }()
	f.t.Cleanup(func() { stop(); <-ran })
	// The scheduler publishes the schedule from its own goroutine, which
	// sends no signal: poll the operator API for it.
	redistest.Within(f.t, testkit.Timeout, "the schedule to be published", func() (bool, string) {
		_, err := f.ops.Schedule(ctx, name)
		return err == nil, fmt.Sprint(err)
	})
}

// suspended waits until job id is a suspended workflow that ready says is
// as wanted, and returns it: a workflow suspends itself with no settle
// signal, so this polls.
func (f *fixture) suspended(id, what string, ready func(*flow.JobInfo) bool) *flow.JobInfo {
	f.t.Helper()
	var j *flow.JobInfo
	redistest.Within(f.t, testkit.Timeout, what, func() (bool, string) {
		j = f.env.Job(id)
		return ready(j), fmt.Sprintf("%s suspended=%v waiting for %q, signals %v", j.State, j.Suspended, j.WaitingFor, j.AwaitingSignals)
	})
	return j
}

// awaitsOneSignal: the parent workflow of the tests waits for its signal.
func awaitsOneSignal(j *flow.JobInfo) bool { return j.Suspended && len(j.AwaitingSignals) == 1 }

// deadEffect runs a payout job (a worker must run) whose effect Redis
// refuses, an INCRBY on bad, which it makes a list; it returns the job's
// ID and the dead effect once the worker's relay has dead-lettered it.
// elsewhereList names a key in no slot of the test queue's partitions:
// an effect on it is relayed through the outbox.
func (f *fixture) elsewhereList() string {
	var tags []string
	for i := range testPartitions {
		tags = append(tags, keys.Partition{NS: f.env.NS, Queue: testQueue, Index: i}.Tag())
	}
	return redistest.Elsewhere(f.env.NS, "list", tags...)
}

func (f *fixture) deadEffect(bad string) (string, sluicetype.DeadEffect) {
	f.t.Helper()
	ctx := context.Background()
	testkit.Must(f.t, f.env.RDB.RPush(ctx, bad, "x").Err())
	id := f.enqueue(payout{Key: bad})
	f.env.WaitState(id, flow.StateCompleted)
	var ds []sluicetype.DeadEffect
	// The worker's relay dead-letters the effect on its own loop: poll.
	redistest.Within(f.t, testkit.Timeout, "the effect to be dead-lettered", func() (bool, string) {
		var err error
		ds, err = f.ops.DeadEffects(ctx, testQueue, 0)
		return err == nil && len(ds) == 1, fmt.Sprint(ds, err)
	})
	return id, ds[0]
}

// enqueue adds a job to the test queue.
func (f *fixture) enqueue(args flow.Args, opts ...flow.EnqueueOption) string {
	f.t.Helper()
	return f.env.Enqueue(args, append([]flow.EnqueueOption{flow.WithQueue(testQueue)}, opts...)...)
}

// client is an HTTP client that keeps cookies and does not follow
// redirects.
func client() *http.Client {
	return &http.Client{
		Jar:           must(cookiejar.New(nil)),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       testkit.Timeout,
	}
}

// get fetches path under the console and returns the status and body.
func (f *fixture) get(c *http.Client, path string, hdr ...string) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	testkit.Must(f.t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	testkit.Must(f.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	testkit.Must(f.t, err)
	return resp.StatusCode, string(b)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// csrfOf returns the CSRF token a page's forms carry.
func csrfOf(body string) string {
	_, rest, ok := strings.Cut(body, `name="csrf" value="`)
	if !ok {
		return ""
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}
