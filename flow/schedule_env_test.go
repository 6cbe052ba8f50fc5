package flow_test

// Helpers of the schedule tests: a namespace with a fake clock, schedulers
// whose rounds the tests wait for, and the jobs they enqueued.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

type report struct{ Team string }

func (report) Kind() string { return "report" }

// t0 is where the fake clocks of the schedule tests start: on a tick of
// every schedule they use.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// round is one scheduling round: a schedule, at a store time.
type round struct {
	name string
	now  time.Time
}

// schedEnv is a namespace with a fake clock, a client on it and the
// rounds of every scheduler made with newScheduler.
type schedEnv struct {
	t      *testing.T
	rdb    redis.UniversalClient
	ns     string
	clk    *runtime.FakeClock
	reg    *flow.Registry
	rounds chan round
	proxy  *chaos.Proxy // the clients' way to Redis (loseReplies), or nil
	// backlog holds rounds received while waiting for another schedule's.
	backlog []round
}

func newSchedEnv(t *testing.T) *schedEnv {
	t.Helper()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[report]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return &schedEnv{
		t: t, rdb: realRedis(t), ns: redistest.NewNamespace(t), clk: runtime.NewFakeClock(t0), reg: reg,
		rounds: make(chan round, 1000),
	}
}

func (e *schedEnv) client() *flow.Client {
	e.t.Helper()
	c, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// newScheduler returns a scheduler of its own client with the schedules.
func (e *schedEnv) newScheduler(scheds ...flow.Schedule) *flow.Scheduler {
	e.t.Helper()
	s, err := flow.NewScheduler(e.client(), flow.SchedulerOptions{Logger: testkit.Quiet})
	if err != nil {
		e.t.Fatal(err)
	}
	flow.SetOnStep(s, func(name string, now time.Time) { e.rounds <- round{name, now} })
	for _, sc := range scheds {
		if err := s.Add(sc); err != nil {
			e.t.Fatal(err)
		}
	}
	return s
}

// run runs s until the returned stop is called (or the test ends).
func (e *schedEnv) run(s *flow.Scheduler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("scheduler: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// wait waits for n rounds of schedule name at the fake clock's time.
// Earlier rounds of name are dropped; rounds of other schedules are kept
// for their own wait.
func (e *schedEnv) wait(name string, n int) {
	e.t.Helper()
	now := e.clk.Now()
	timeout := time.After(20 * time.Second)
	var others []round
	defer func() { e.backlog = append(e.backlog, others...) }()
	for n > 0 {
		var r round
		if len(e.backlog) > 0 {
			r, e.backlog = e.backlog[0], e.backlog[1:]
		} else {
			select {
			case r = <-e.rounds:
			case <-timeout:
				e.t.Fatalf("%d rounds of %s at %v missing", n, name, now)
			}
		}
		switch {
		case r.name != name:
			others = append(others, r)
		case r.now.Equal(now):
			n--
		case r.now.After(now) || r.now.IsZero():
			e.t.Fatalf("round of %s at %v, want %v", name, r.now, now)
		}
	}
}

// loseReplies makes the env's clients reach Redis through the chaos
// proxy, which drops the replies of one script call in ten after Redis ran
// it and delivers one in ten twice, drawn from seed. The env's own reads
// are not script calls, so they pass as they are.
func (e *schedEnv) loseReplies(seed uint64) {
	e.t.Helper()
	px, err := chaos.NewProxy(env.Server.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	px.SetRandom(0.1, 0.1, seed, chaos.Commands(lua.Commands...))
	// go-redis tries a call 4 times by default; a pause whose first reply
	// is dropped on purpose (pauseResentAfterResume) would then fail one
	// run in a hundred or so for want of tries, with nothing wrong
	e.rdb, e.proxy = redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: 20}), px
	e.t.Cleanup(func() {
		d, u := px.Fired()
		e.t.Logf("%d replies dropped, %d calls delivered twice", d, u)
		e.rdb.Close()
		px.Close()
	})
}

// queued is the IDs in the default queue's available list, in order.
func (e *schedEnv) queued() []string {
	e.t.Helper()
	p := keys.Partition{NS: e.ns, Queue: "default"}
	locals, err := e.rdb.LRange(context.Background(), p.Available(0), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return locals
}

// tickIDs are the job IDs of a schedule's ticks at t0 plus each offset.
func tickIDs(name string, offsets ...time.Duration) []string {
	ids := make([]string, len(offsets))
	for i, d := range offsets {
		ids[i] = "sched:" + name + ":" + strconv.FormatInt(at(d).Unix(), 10)
	}
	return ids
}

func minutes(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Minute
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
