package step_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// trip and claim are the workflows upgraded under running jobs: trip
// sleeps, claim waits for a signal.
type trip struct{}

func (trip) Kind() string { return "trip" }

type claim struct{}

func (claim) Kind() string { return "claim" }

// ran counts how many times each step's function ran, across jobs.
type ran struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *ran) get(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[name]
}

// path runs a handler's steps, stopping at the first error, and lists
// the steps it went through (run or replayed): the job's branch.
type path struct {
	ctx   context.Context
	r     *ran
	steps []string
	err   error
}

func (p *path) do(name string) {
	if p.err != nil {
		return
	}
	p.err = step.Do(p.ctx, name, func(context.Context) error {
		p.r.mu.Lock()
		defer p.r.mu.Unlock()
		if p.r.n == nil {
			p.r.n = map[string]int{}
		}
		p.r.n[name]++
		return nil
	})
	p.steps = append(p.steps, name)
}

func (p *path) sleep(name string, d time.Duration) {
	if p.err == nil {
		p.err = step.Sleep(p.ctx, name, d)
		p.steps = append(p.steps, name)
	}
}

func (p *path) wait(name string) {
	if p.err != nil {
		return
	}
	var by string
	by, _, p.err = step.WaitSignal[string](p.ctx, name, 0)
	p.steps = append(p.steps, name+"="+by)
}

// version is step.Version, -1 after an error.
func (p *path) version(change string, min, max int) int {
	if p.err != nil {
		return -1
	}
	var v int
	if v, p.err = step.Version(p.ctx, change, min, max); p.err != nil {
		return -1
	}
	return v
}

func (p *path) result() (string, error) {
	if p.err != nil {
		return "", p.err
	}
	return strings.Join(p.steps, ","), nil
}

func registry[A flow.Args](t *testing.T, r *ran, body func(p *path)) *flow.Registry {
	t.Helper()
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, _ *flow.Job[A]) (string, error) {
		p := &path{ctx: ctx, r: r}
		body(p)
		return p.result()
	}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// tripV1 is the first release of trip.
func tripV1(p *path) {
	p.do("a")
	p.do("b")
	p.sleep("nap", time.Hour)
	p.do("d")
}

// tripV2 adds a step between a and b, one between b and the sleep, and
// one after it, each behind a change point.
func tripV2(p *path) {
	p.do("a")
	if p.version("extra", step.DefaultVersion, 1) == 1 {
		p.do("x")
	}
	p.do("b")
	if p.version("audit", step.DefaultVersion, 1) == 1 {
		p.do("audit")
	}
	p.sleep("nap", time.Hour)
	if p.version("after-nap", step.DefaultVersion, 1) == 1 {
		p.do("e")
	}
	p.do("d")
}

// versions reads the versions a job recorded.
func versions(t *testing.T, j *flow.JobInfo, changes ...string) []int {
	t.Helper()
	out := make([]int, len(changes))
	for i, c := range changes {
		out[i] = -1
		if err := j.DecodeStep(step.VersionPrefix+c, &out[i]); err != nil {
			t.Fatalf("job %s: %v", j.ID, err)
		}
	}
	return out
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestVersionUnderSleep: a release that adds steps behind change points is
// deployed while a job sleeps. The old job has the checkpoint of b, which
// follows the first change point, and sleeps past the second: it keeps
// the old branch at both, with no stale checkpoint (the change points
// take no position), and takes the new branch at the third, after the
// sleep, which it had not reached. A job started under the new release
// takes the new branch everywhere.
func TestVersionUnderSleep(t *testing.T) {
	r := &ran{}
	v1 := flowtest.New(t, registry[trip](t, r, tripV1))
	old := v1.Run(trip{}).Job
	if old.State != flow.StateScheduled || len(old.Timers) != 1 {
		t.Fatalf("old job: %s, timers %+v; want it sleeping", old.State, old.Timers)
	}
	v2 := v1.Redeploy(registry[trip](t, r, tripV2))
	fresh := v2.Run(trip{}).Job
	if fresh.State != flow.StateScheduled || r.get("x") != 1 || r.get("audit") != 1 {
		t.Fatalf("new job: %s, x ran %d, audit %d times; want it sleeping after both", fresh.State, r.get("x"), r.get("audit"))
	}
	v2.Clock.Advance(time.Hour)
	old = v2.Resume(old.ID, 10*time.Second).Job
	if got := resultOf(t, old); got != "a,b,nap,e,d" {
		t.Fatalf("old job went %q, want a,b,nap,e,d", got)
	}
	if v := versions(t, old, "extra", "audit", "after-nap"); !equal(v, []int{0, 0, 1}) {
		t.Fatalf("old job's versions %v, want [0 0 1]", v)
	}
	fresh = v2.Resume(fresh.ID, 10*time.Second).Job
	if got := resultOf(t, fresh); got != "a,x,b,audit,nap,e,d" {
		t.Fatalf("new job went %q, want a,x,b,audit,nap,e,d", got)
	}
	if v := versions(t, fresh, "extra", "audit", "after-nap"); !equal(v, []int{1, 1, 1}) {
		t.Fatalf("new job's versions %v, want [1 1 1]", v)
	}
	if r.get("x") != 1 || r.get("audit") != 1 || r.get("e") != 2 || r.get("b") != 2 {
		t.Fatalf("runs: x %d, audit %d, e %d, b %d; want 1, 1, 2, 2", r.get("x"), r.get("audit"), r.get("e"), r.get("b"))
	}
}

// TestVersionUnderSignalWait: a release that renames the awaited signal
// and adds a step before the wait, behind a change point, is deployed
// while a job waits for the old signal. Signalled, the old job keeps the
// old branch; a job started under the new release waits for the new
// signal.
func TestVersionUnderSignalWait(t *testing.T) {
	r := &ran{}
	v1 := flowtest.New(t, registry[claim](t, r, func(p *path) {
		p.do("a")
		p.wait("verdict")
		p.do("d")
	}))
	old := v1.Run(claim{}).Job
	if old.State != flow.StateScheduled || len(old.AwaitingSignals) != 1 || old.AwaitingSignals[0] != "verdict" {
		t.Fatalf("old job: %s awaiting %v", old.State, old.AwaitingSignals)
	}
	v2 := v1.Redeploy(registry[claim](t, r, func(p *path) {
		p.do("a")
		if p.version("approval", step.DefaultVersion, 1) == 1 {
			p.do("notify")
			p.wait("approval")
		} else {
			p.wait("verdict")
		}
		p.do("d")
	}))
	fresh := v2.Run(claim{}).Job
	if len(fresh.AwaitingSignals) != 1 || fresh.AwaitingSignals[0] != "approval" || r.get("notify") != 1 {
		t.Fatalf("new job awaiting %v, notify ran %d times", fresh.AwaitingSignals, r.get("notify"))
	}
	ctx := context.Background()
	if err := v2.Client.Signal(ctx, old.ID, "verdict", "ada"); err != nil {
		t.Fatal(err)
	}
	if err := v2.Client.Signal(ctx, fresh.ID, "approval", "bob"); err != nil {
		t.Fatal(err)
	}
	old = v2.Resume(old.ID, 10*time.Second).Job
	if got := resultOf(t, old); got != "a,verdict=ada,d" {
		t.Fatalf("old job went %q, want a,verdict=ada,d", got)
	}
	fresh = v2.Resume(fresh.ID, 10*time.Second).Job
	if got := resultOf(t, fresh); got != "a,notify,approval=bob,d" {
		t.Fatalf("new job went %q, want a,notify,approval=bob,d", got)
	}
	if vo, vn := versions(t, old, "approval"), versions(t, fresh, "approval"); vo[0] != 0 || vn[0] != 1 || r.get("notify") != 1 {
		t.Fatalf("versions: old %v, new %v; notify ran %d times", vo, vn, r.get("notify"))
	}
}

// TestChangeWithoutVersionParks: the safety net. The same step added
// without a change point lands where the old job's checkpoint has b: the
// job is parked (stale_checkpoint), not run on a mix of both sequences.
func TestChangeWithoutVersionParks(t *testing.T) {
	r := &ran{}
	v1 := flowtest.New(t, registry[trip](t, r, tripV1))
	old := v1.Run(trip{}).Job
	v2 := v1.Redeploy(registry[trip](t, r, func(p *path) {
		p.do("a")
		p.do("x")
		p.do("b")
		p.sleep("nap", time.Hour)
		p.do("d")
	}))
	v2.Clock.Advance(time.Hour)
	old = v2.Resume(old.ID, 10*time.Second).Job
	if old.State != flow.StateArchived || old.Reason != "stale_checkpoint" || r.get("x") != 0 || r.get("d") != 0 {
		t.Fatalf("old job: %s (%s), x ran %d, d %d times; want archived for stale_checkpoint, neither run", old.State, old.Reason, r.get("x"), r.get("d"))
	}
}

// TestVersionRecordedOnce: a job keeps the version it recorded under a
// later release that knows a newer one; a release that retires the old
// branch (min raised) parks a job still on it, and runs new jobs.
func TestVersionRecordedOnce(t *testing.T) {
	r := &ran{}
	v1 := flowtest.New(t, registry[trip](t, r, tripV1))
	old := v1.Run(trip{}).Job
	v2 := v1.Redeploy(registry[trip](t, r, tripV2))
	mid := v2.Run(trip{}).Job // version 1 of every change, sleeping
	v3 := v2.Redeploy(registry[trip](t, r, func(p *path) {
		p.do("a")
		switch p.version("extra", 1, 2) { // the old branch is gone
		case 1:
			p.do("x")
		case 2:
			p.do("y")
		}
		p.do("b")
		if p.version("audit", 1, 1) == 1 {
			p.do("audit")
		}
		p.sleep("nap", time.Hour)
		p.do("d")
	}))
	v3.Clock.Advance(time.Hour)
	mid = v3.Resume(mid.ID, 10*time.Second).Job
	if got := resultOf(t, mid); got != "a,x,b,audit,nap,d" || r.get("y") != 0 {
		t.Fatalf("job of release 2 went %q (y ran %d times), want a,x,b,audit,nap,d", got, r.get("y"))
	}
	old = v3.Resume(old.ID, 10*time.Second).Job
	if old.State != flow.StateArchived || old.Reason != "stale_checkpoint" || !strings.Contains(old.LastError, `version 0 of change "extra"`) {
		t.Fatalf("job of release 1: %s (%s: %s), want parked at the retired branch", old.State, old.Reason, old.LastError)
	}
	if v := versions(t, old, "extra"); v[0] != step.DefaultVersion {
		t.Fatalf("job of release 1 recorded %v", v)
	}
	fresh := v3.Run(trip{}).Job
	v3.Clock.Advance(time.Hour)
	fresh = v3.Resume(fresh.ID, 10*time.Second).Job
	if got := resultOf(t, fresh); got != "a,y,b,audit,nap,d" {
		t.Fatalf("job of release 3 went %q, want a,y,b,audit,nap,d", got)
	}
}

// TestVersionAfterCrash: a job that crashed before reaching a change point
// (after a, before the change point's checkpoint) is new there: it had
// not gone past it.
func TestVersionAfterCrash(t *testing.T) {
	r := &ran{}
	h := flowtest.New(t, registry[trip](t, r, tripV2))
	j := h.Run(trip{}, flowtest.CrashAfterStep(1)).Job
	if j.CrashAttempt != 1 || j.State != flow.StateScheduled {
		t.Fatalf("job: %s, crashes %d", j.State, j.CrashAttempt)
	}
	if v := versions(t, j, "extra", "audit"); !equal(v, []int{1, 1}) || r.get("a") != 1 || r.get("x") != 1 {
		t.Fatalf("versions %v, a ran %d, x %d times; want [1 1], 1, 1", v, r.get("a"), r.get("x"))
	}
}

// TestVersionErrors: outside a job, and a bad name or range (parked).
func TestVersionErrors(t *testing.T) {
	if _, err := step.Version(context.Background(), "c", 0, 1); !errors.Is(err, step.ErrNoAttempt) {
		t.Fatalf("outside a job: %v", err)
	}
	for _, c := range []struct {
		change   string
		min, max int
		reason   string
	}{
		{"bad name", 0, 1, "invalid_step"},
		{"c", 2, 1, "invalid_version"},
		{"c", -1, 1, "invalid_version"},
	} {
		reg := flow.NewRegistry()
		register(t, reg, func(ctx context.Context, _ *flow.Job[trip]) error {
			_, err := step.Version(ctx, c.change, c.min, c.max)
			return err
		})
		if j := flowtest.New(t, reg).Run(trip{}).Job; j.State != flow.StateArchived || j.Reason != c.reason {
			t.Errorf("Version(%q, %d, %d): %s (%s), want archived for %s", c.change, c.min, c.max, j.State, j.Reason, c.reason)
		}
	}
}

// TestVersionAfterWaitIsNew: a job that passes a Select in the attempt
// that reaches a change point is new there, though the Select left a
// timer of its own name behind (it had not got past the Select before).
func TestVersionAfterWaitIsNew(t *testing.T) {
	r := &ran{}
	h := flowtest.New(t, registry[claim](t, r, func(p *path) {
		p.do("a")
		if p.err == nil {
			sel := step.Select(p.ctx, "gate")
			step.OnSignal[string](sel, "go")
			sel.After("give-up", time.Hour)
			p.err = sel.Wait()
			p.steps = append(p.steps, "gate")
		}
		if p.version("late", step.DefaultVersion, 1) == 1 {
			p.do("new")
		}
		p.do("d")
	}))
	j := h.Run(claim{}).Job
	if err := h.Client.Signal(context.Background(), j.ID, "go", "now"); err != nil {
		t.Fatal(err)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if got := resultOf(t, j); got != "a,gate,new,d" || len(j.Timers) != 1 {
		t.Fatalf("went %q with timers %+v, want a,gate,new,d and give-up left", got, j.Timers)
	}
}

// TestVersionUnderRetry: a job that failed in a loop (a cursor) after b,
// to be retried an hour later, is retried under a release with change
// points before b and before the loop: it has the checkpoint of b and the
// loop's progress past them, so it keeps the old branch at both.
func TestVersionUnderRetry(t *testing.T) {
	var failed atomic.Bool
	loop := func(p *path) {
		if p.err != nil {
			return
		}
		cur, err := step.NewCursor[int](p.ctx, "rows", 1)
		if err != nil {
			p.err = err
			return
		}
		for v := cur.Value(); v < 3 && !cur.Finished(); v++ {
			if err := cur.Advance(p.ctx, v+1); err != nil {
				p.err = err
				return
			}
			if v+1 == 2 && !failed.Swap(true) {
				p.err = errors.New("the import broke off")
				return
			}
		}
		p.err = cur.Finish(p.ctx)
		p.steps = append(p.steps, "rows")
	}
	r := &ran{}
	v1 := flowtest.New(t, registry[trip](t, r, func(p *path) {
		p.do("a")
		p.do("b")
		loop(p)
		p.do("d")
	}), runtime.Options{Backoff: func(int) time.Duration { return time.Hour }})
	old := v1.Run(trip{}).Job
	if old.State != flow.StateRetryable {
		t.Fatalf("old job: %s (%s), want retryable", old.State, old.LastError)
	}
	v2 := v1.Redeploy(registry[trip](t, r, func(p *path) {
		p.do("a")
		if p.version("validate", step.DefaultVersion, 1) == 1 {
			p.do("validate")
		}
		p.do("b")
		if p.version("prepare", step.DefaultVersion, 1) == 1 {
			p.do("prepare")
		}
		loop(p)
		p.do("d")
	}))
	v2.Clock.Advance(time.Hour)
	old = v2.Resume(old.ID, 10*time.Second).Job
	if got := resultOf(t, old); got != "a,b,rows,d" || r.get("validate")+r.get("prepare") != 0 {
		t.Fatalf("old job went %q (validate ran %d, prepare %d times), want a,b,rows,d", got, r.get("validate"), r.get("prepare"))
	}
}

// TestVersionUnderRetryAfterStep: a job that failed after b, and nothing
// else, keeps the old branch at a change point before b: b's checkpoint
// is its only sign of having gone past it.
func TestVersionUnderRetryAfterStep(t *testing.T) {
	var failed atomic.Bool
	fail := func(p *path) {
		if p.err == nil && !failed.Swap(true) {
			p.err = errors.New("broke off")
		}
	}
	r := &ran{}
	v1 := flowtest.New(t, registry[trip](t, r, func(p *path) {
		p.do("a")
		p.do("b")
		fail(p)
		p.do("d")
	}), runtime.Options{Backoff: func(int) time.Duration { return time.Hour }})
	old := v1.Run(trip{}).Job
	v2 := v1.Redeploy(registry[trip](t, r, func(p *path) {
		p.do("a")
		if p.version("extra", step.DefaultVersion, 1) == 1 {
			p.do("x")
		}
		p.do("b")
		fail(p)
		p.do("d")
	}))
	v2.Clock.Advance(time.Hour)
	old = v2.Resume(old.ID, 10*time.Second).Job
	if got := resultOf(t, old); got != "a,b,d" || r.get("x") != 0 {
		t.Fatalf("old job went %q (x ran %d times), want a,b,d", got, r.get("x"))
	}
}

// TestVersionAfterFailedResume: a job that got through its waits and then
// failed before a change point is new there when retried: the timers its
// waits left are theirs (the sleep's own name, the signal wait's
// ".timeout"), not a sign of a wait past the change point.
func TestVersionAfterFailedResume(t *testing.T) {
	var failed atomic.Bool
	r := &ran{}
	h := flowtest.New(t, registry[claim](t, r, func(p *path) {
		p.do("a")
		p.sleep("nap", time.Minute)
		if p.err == nil {
			var ok bool
			_, ok, p.err = step.WaitSignal[string](p.ctx, "ok", time.Hour)
			p.steps = append(p.steps, "ok")
			if p.err == nil && !ok {
				p.err = errors.New("timed out")
			}
		}
		if p.err == nil && !failed.Swap(true) {
			p.err = errors.New("broke off")
		}
		if p.version("late", step.DefaultVersion, 1) == 1 {
			p.do("new")
		}
		p.do("d")
	}))
	j := h.Run(claim{}).Job
	h.Clock.Advance(time.Minute)
	if j = h.Resume(j.ID, 10*time.Second).Job; len(j.AwaitingSignals) != 1 {
		t.Fatalf("job: %s awaiting %v", j.State, j.AwaitingSignals)
	}
	if err := h.Client.Signal(context.Background(), j.ID, "ok", "yes"); err != nil {
		t.Fatal(err)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if got := resultOf(t, j); got != "a,nap,ok,new,d" || j.Attempt != 1 || len(j.Timers) != 2 {
		t.Fatalf("went %q after %d failures, timers %+v; want a,nap,ok,new,d after 1, nap and ok.timeout", got, j.Attempt, j.Timers)
	}
}

// TestVersionOnRealRedis records a change point with a real worker on a
// redis-server and the cluster.
func TestVersionOnRealRedis(t *testing.T) {
	for _, b := range []struct {
		name string
		env  func(t *testing.T, reg *flow.Registry) *env
	}{
		{"redis", func(t *testing.T, reg *flow.Registry) *env { return newEnv(t, shared.Server.Client(), reg) }},
		{"cluster", func(t *testing.T, reg *flow.Registry) *env { return newEnv(t, shared.Cluster.Client(), reg) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			r := &ran{}
			e := b.env(t, registry[trip](t, r, func(p *path) {
				p.do("a")
				if p.version("extra", step.DefaultVersion, 1) == 1 {
					p.do("x")
				}
				p.do("b")
			}))
			j := e.run(trip{}, flow.StateCompleted)
			if got := resultOf(t, j); got != "a,x,b" {
				t.Fatalf("went %q", got)
			}
			if v := versions(t, j, "extra"); v[0] != 1 {
				t.Fatalf("recorded %v", v)
			}
		})
	}
}
