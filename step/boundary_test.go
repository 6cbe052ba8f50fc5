package step_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// boundaryJob is the job of the step-boundary tests.
type boundaryJob struct {
	Strict bool
}

func (boundaryJob) Kind() string { return "boundary" }

// stepFields lists the checkpoint fields of a job in Redis.
func stepFields(t *testing.T, e *env, id string) []string {
	t.Helper()
	ref, ok := keys.ParseRef(e.NS, id)
	if !ok {
		t.Fatalf("bad job ID %q", id)
	}
	m, err := e.RDB.HGetAll(context.Background(), ref.Steps(ref.Local)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for f := range m {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	return fields
}

// TestStepBoundaryAfterCancel: step s1 commits, then the test cancels the
// job through the client and the handler — waiting until the cancellation
// reached its attempt (its context is cancelled), then ignoring it — goes
// on to step s2, to step s3 with a context stripped of cancellation, and
// to a cursor's Advance. None of their functions runs: a step boundary
// stops before the side effect once the worker knows the lease is gone,
// with no Redis round trip. Each returns ErrStale, which also says why
// (runtime.ErrCancelled).
func TestStepBoundaryAfterCancel(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	committed := make(chan string, 1)
	type outcome struct {
		what string
		err  error
	}
	outcomes := make(chan outcome, 4)
	var ran atomic.Int32 // step functions run after s1
	register(t, reg, func(ctx context.Context, job *flow.Job[boundaryJob]) error {
		if err := step.Do(ctx, "s1", func(context.Context) error { return nil }); err != nil {
			return err
		}
		committed <- job.ID
		select {
		case <-ctx.Done():
		case <-time.After(procTimeout): // a bound, not a synchronisation
			outcomes <- outcome{"wait", errors.New("the cancellation never reached the attempt")}
			return nil
		}
		body := func(context.Context) error {
			ran.Add(1)
			return nil
		}
		outcomes <- outcome{"s2", step.Do(ctx, "s2", body)}
		free := context.WithoutCancel(ctx) // a handler that ignores cancellation
		outcomes <- outcome{"s3", step.Do(free, "s3", body)}
		cur, err := step.NewCursor[int](free, "rows", 1)
		if err == nil {
			err = cur.Advance(free, 1)
		}
		outcomes <- outcome{"advance", err}
		close(outcomes)
		return nil
	})
	e := newEnv(t, shared.Server.Client(), reg)
	res, err := e.Client.Enqueue(context.Background(), boundaryJob{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.ID
	if got := testkit.Recv(t, committed, "step s1 to commit"); got != id {
		t.Fatalf("handler ran job %s, want %s", got, id)
	}
	if _, err := admin.New(e.Client).CancelJob(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for o := range outcomes {
		seen++
		if o.what == "wait" {
			t.Fatal(o.err)
		}
		if !errors.Is(o.err, step.ErrStale) || !errors.Is(o.err, runtime.ErrCancelled) {
			t.Errorf("%s after the cancellation: %v, want ErrStale caused by runtime.ErrCancelled", o.what, o.err)
		}
	}
	if seen != 3 {
		t.Errorf("got %d outcomes, want 3", seen)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d step functions ran after the job was cancelled, want none", n)
	}
	info, err := e.Client.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != flow.StateCancelled {
		t.Errorf("job state %s, want cancelled", info.State)
	}
	if got := stepFields(t, e, id); fmt.Sprint(got) != "[s1]" {
		t.Errorf("checkpoints %q, want only s1", got)
	}
}

// TestStrictStepConfirmsOwnership: the attempt loses its job without the
// worker knowing (the test bumps the job's fence in Redis, as a reclaim
// does; the worker's next renewal is half an hour away). A strict step
// asks Redis before its function runs: the function does not run, the
// step returns ErrStale and the attempt is cancelled with ErrLeaseLost. A
// default step only checks what the worker knows: its function runs — the
// window Strict closes — and only its checkpoint is refused. On a job
// still owned, a strict step runs and commits as usual.
func TestStrictStepConfirmsOwnership(t *testing.T) {
	t.Parallel()
	type report struct {
		ran   bool
		err   error
		cause error // of the handler's context after the step
	}
	type run struct {
		id      chan string   // the job, once s1 committed
		bumped  chan struct{} // the test moved the fence
		reports chan report
	}
	runs := make(chan *run, 1)
	reg := flow.NewRegistry()
	register(t, reg, func(ctx context.Context, job *flow.Job[boundaryJob]) error {
		r := <-runs
		if err := step.Do(ctx, "s1", func(context.Context) error { return nil }); err != nil {
			return err
		}
		r.id <- job.ID
		<-r.bumped
		var opts []step.Option
		if job.Args.Strict {
			opts = append(opts, step.Strict())
		}
		var ran bool
		err := step.Do(ctx, "effect", func(context.Context) error {
			ran = true // an external call would go here
			return nil
		}, opts...)
		r.reports <- report{ran: ran, err: err, cause: context.Cause(ctx)}
		return err
	})
	e := newEnvWith(t, shared.Server.Client(), reg, runtime.Options{
		Backoff: noBackoff, Lease: time.Hour, RenewInterval: 30 * time.Minute,
	})
	rdb, ns, c := e.RDB, e.NS, e.Client

	// attempt runs one job; bump says whether to take it away after s1.
	attempt := func(strict, bump bool) (report, string) {
		t.Helper()
		r := &run{id: make(chan string, 1), bumped: make(chan struct{}), reports: make(chan report, 1)}
		runs <- r
		res, err := c.Enqueue(context.Background(), boundaryJob{Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		id := testkit.Recv(t, r.id, "step s1 to commit")
		if id != res.ID {
			t.Fatalf("handler ran job %s, want %s", id, res.ID)
		}
		if bump {
			ref, _ := keys.ParseRef(ns, id)
			if err := rdb.HIncrBy(context.Background(), ref.Job(ref.Local), keys.FieldFence, 1).Err(); err != nil {
				t.Fatal(err)
			}
		}
		close(r.bumped)
		return testkit.Recv(t, r.reports, "the handler to report"), id
	}

	// Owned: a strict step runs and commits.
	rep, id := attempt(true, false)
	if !rep.ran || rep.err != nil {
		t.Errorf("strict step on an owned job: ran %v, err %v; want it run, no error", rep.ran, rep.err)
	}
	e.WaitState(id, flow.StateCompleted)
	if got := stepFields(t, e, id); fmt.Sprint(got) != "[effect s1]" {
		t.Errorf("checkpoints %q, want effect and s1", got)
	}

	// Taken away: a strict step refuses before its function runs.
	rep, id = attempt(true, true)
	if rep.ran {
		t.Error("the strict step's function ran after the attempt lost the job")
	}
	if !errors.Is(rep.err, step.ErrStale) || !errors.Is(rep.err, runtime.ErrLeaseLost) {
		t.Errorf("strict step: %v, want ErrStale caused by runtime.ErrLeaseLost", rep.err)
	}
	if !errors.Is(rep.cause, runtime.ErrLeaseLost) {
		t.Errorf("attempt's context after the strict step: cause %v, want runtime.ErrLeaseLost", rep.cause)
	}
	if got := stepFields(t, e, id); fmt.Sprint(got) != "[s1]" {
		t.Errorf("checkpoints %q, want only s1", got)
	}

	// Taken away: a default step cannot know; its function runs and only its
	// checkpoint is refused.
	rep, id = attempt(false, true)
	if !rep.ran {
		t.Error("the default step's function did not run: the worker could not have known")
	}
	if !errors.Is(rep.err, step.ErrStale) {
		t.Errorf("default step: %v, want ErrStale (its checkpoint refused)", rep.err)
	}
	if got := stepFields(t, e, id); fmt.Sprint(got) != "[s1]" {
		t.Errorf("checkpoints %q, want only s1", got)
	}
}
