//go:build unix

package isolated_test

// The fault of a whole class: an isolated child answers differently from
// an in-process worker. TestChildAnswersAsWorker runs one table of
// handler outcomes through both and compares what each left of its job.

import (
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// parityArgs: the handler (parityHandler, the same in the worker and in
// the child) ends as Case says; Key names the list it pushes to once it
// runs, when it waits for its context.
type parityArgs struct {
	Case string
	Key  string `json:",omitempty"`
}

func (parityArgs) Kind() string { return "iso_parity" }

// errPolicy is the error the kind's retry policy (parityPolicy) delays
// by 7 minutes; every other error gets the worker's Backoff.
var errPolicy = errors.New("policy: come back in 7 minutes")

func parityPolicy(_ int, err error) time.Duration {
	if errors.Is(err, errPolicy) {
		return 7 * time.Minute
	}
	return -1
}

// parityNilErr's Error dereferences its receiver: a typed nil of it
// cannot tell its message.
type parityNilErr struct{ msg string }

func (e *parityNilErr) Error() string { return e.msg }

// registerParity registers parityHandler, with its retry policy.
func registerParity(reg *flow.Registry) error {
	return flow.Register(reg, parityHandler, flow.WithRetryPolicy(parityPolicy))
}

// parityRDB is the handler's client, made at its first call.
var parityRDB = sync.OnceValue(func() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: parityRedisAddr()})
})

func parityHandler(ctx context.Context, job *flow.Job[parityArgs]) error {
	// a job that runs again (a zero delay, due at once) is skipped: it
	// does not loop on a clock that stands still
	if n, err := parityRDB().Incr(ctx, "parity:runs:"+job.ID).Result(); err != nil {
		return err
	} else if n > 1 {
		return flow.Skip("ran again")
	}
	boom := errors.New("boom")
	switch job.Args.Case {
	case "nil":
		return nil
	case "error":
		return boom
	case "wrapped error":
		return fmt.Errorf("calling the API: %w", boom)
	case "errors.Join":
		return errors.Join(boom, errors.New("and another"))
	case "errors.Join of a skip":
		return errors.Join(boom, flow.Skip("nothing to do"))
	case "policy error":
		return fmt.Errorf("upstream: %w", errPolicy)
	case "snooze 1h":
		return flow.Snooze(time.Hour)
	case "snooze wrapped":
		return fmt.Errorf("later: %w", flow.Snooze(time.Minute))
	case "snooze 1.5ms":
		return flow.Snooze(1500 * time.Microsecond)
	case "snooze 500us":
		return flow.Snooze(500 * time.Microsecond)
	case "snooze 1ns":
		return flow.Snooze(1)
	case "snooze 0":
		return flow.Snooze(0)
	case "snooze negative":
		return flow.Snooze(-time.Second)
	case "rate limited 1h":
		return flow.RateLimited(time.Hour)
	case "rate limited 500us":
		return flow.RateLimited(500 * time.Microsecond)
	case "rate limited 0":
		return flow.RateLimited(0)
	case "rate limited negative":
		return flow.RateLimited(-time.Minute)
	case "skip":
		return flow.Skip("nothing to do")
	case "skip wrapped":
		return fmt.Errorf("checked: %w", flow.Skip("nothing to do"))
	case "revoke":
		return flow.Revoke("withdrawn")
	case "panic string":
		panic("kaboom")
	case "panic nil":
		panic(nil) //nolint:govet // the point: a nil panic is a crash too
	case "panic error":
		panic(boom)
	case "typed nil error":
		var e *parityNilErr
		return e
	case "runtime.Goexit":
		goruntime.Goexit()
	case "PanicError returned":
		return &runtime.PanicError{Value: "v", Stack: []byte("stack")}
	case "PanicError of no value":
		return fmt.Errorf("in the handler: %w", &runtime.PanicError{})
	case "CrashError":
		return &sluicetype.CrashError{Reason: "tool_crash", Message: "the tool died", Detail: []byte("detail")}
	case "CrashError wrapped":
		return fmt.Errorf("running the tool: %w", &sluicetype.CrashError{Reason: "tool_crash", Message: "the tool died"})
	case "CrashError of no class":
		return &sluicetype.CrashError{Message: "the tool died"}
	case "step ok":
		return step.Do(ctx, "a", func(context.Context) error { return nil })
	case "step fails":
		return step.Do(ctx, "a", func(context.Context) error { return boom })
	case "step invalid effect":
		return step.Commit(ctx, "c", sluicetype.Effect{Op: "NOPE", Key: "k"})
	case "step in step":
		return step.Do(ctx, "outer", func(ctx context.Context) error {
			return step.Do(ctx, "inner", func(context.Context) error { return nil })
		})
	case "step in step wrapped":
		err := step.Do(ctx, "outer", func(ctx context.Context) error {
			return step.Do(ctx, "inner", func(context.Context) error { return nil })
		})
		return fmt.Errorf("the handler: %w", err)
	case "context.Canceled returned":
		return fmt.Errorf("the client gave up: %w", context.Canceled)
	case "context.DeadlineExceeded returned":
		return context.DeadlineExceeded
	case "timeout":
		if err := parityRDB().RPush(ctx, job.Args.Key, "running").Err(); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	return fmt.Errorf("parity: no case %q", job.Args.Case)
}

// parityRedisAddr is the tests' Redis, in the child (its environment) or
// in the test process.
func parityRedisAddr() string {
	if a := os.Getenv(envRedis); a != "" {
		return a
	}
	return shared.Server.Addr()
}

// parityJob is what the test compares of a settled job.
type parityJob struct {
	State, Reason         string
	Attempt, CrashAttempt int
	Class, LastError      string
	After                 time.Duration // RunAt, from the clock's now; 0 when none
}

func parityOf(j *flow.JobInfo, now time.Time) parityJob {
	p := parityJob{State: j.State, Reason: j.Reason, Attempt: j.Attempt, CrashAttempt: j.CrashAttempt, LastError: j.LastError}
	if len(j.Errors) > 0 {
		p.Class = j.Errors[0].Class
	}
	if !j.RunAt.IsZero() {
		p.After = j.RunAt.Sub(now)
	}
	return p
}

// TestChildAnswersAsWorker: every handler outcome of the table leaves
// its job in the same state, with the same counters, reason, error class
// and text, and run time, whether the handler ran in the worker or in an
// isolated child. The worker's own way is the reference; the
// differences that are the isolation's own are listed in diff, with why:
//   - a panic's message says it happened in the child ("panic in isolated
//     child: ..."; childPanicText);
//   - a lost lease's record names the worker that held it, each its own.
//
// Not in the table, for the same reason (the child is not asked): a
// kind's retry policy in the child is not consulted for a timeout (the
// child is killed) nor for completion effects that fail (after its
// reply), which take the worker's Backoff; parityPolicy leaves both to
// Backoff.
func TestChildAnswersAsWorker(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		state string
		// diff: what the child is allowed to leave differently, and why
		diff func(w, c *parityJob)
	}{
		{name: "nil", state: flow.StateCompleted},
		{name: "error", state: flow.StateRetryable},
		{name: "wrapped error", state: flow.StateRetryable},
		{name: "errors.Join", state: flow.StateRetryable},
		{name: "errors.Join of a skip", state: flow.StateArchived},
		{name: "policy error", state: flow.StateRetryable},
		{name: "snooze 1h", state: flow.StateScheduled},
		{name: "snooze wrapped", state: flow.StateScheduled},
		{name: "snooze 1.5ms", state: flow.StateScheduled},
		{name: "snooze 500us", state: flow.StateScheduled},
		{name: "snooze 1ns", state: flow.StateScheduled},
		{name: "snooze 0", state: flow.StateArchived}, // due at once: run again, and skipped then
		{name: "snooze negative", state: flow.StateRetryable},
		{name: "rate limited 1h", state: flow.StateScheduled},
		{name: "rate limited 500us", state: flow.StateScheduled},
		{name: "rate limited 0", state: flow.StateArchived},
		{name: "rate limited negative", state: flow.StateRetryable},
		{name: "skip", state: flow.StateArchived},
		{name: "skip wrapped", state: flow.StateArchived},
		{name: "revoke", state: flow.StateCancelled},
		// a panic's message says where it happened (the child's stack is
		// the child's): the same crash, told as the child's
		{name: "panic string", state: flow.StateRetryable, diff: childPanicText},
		{name: "panic nil", state: flow.StateRetryable, diff: childPanicText},
		{name: "panic error", state: flow.StateRetryable, diff: childPanicText},
		{name: "typed nil error", state: flow.StateRetryable, diff: childPanicText},
		{name: "runtime.Goexit", state: flow.StateRetryable, diff: childPanicText},
		{name: "PanicError returned", state: flow.StateRetryable, diff: childPanicText},
		{name: "PanicError of no value", state: flow.StateRetryable, diff: childPanicText},
		{name: "CrashError", state: flow.StateRetryable},
		{name: "CrashError wrapped", state: flow.StateRetryable},
		{name: "CrashError of no class", state: flow.StateRetryable},
		{name: "step ok", state: flow.StateCompleted},
		{name: "step fails", state: flow.StateRetryable},
		{name: "step invalid effect", state: flow.StateRetryable},
		{name: "step in step", state: flow.StateArchived},
		{name: "step in step wrapped", state: flow.StateArchived},
		{name: "context.Canceled returned", state: flow.StateRetryable},
		{name: "context.DeadlineExceeded returned", state: flow.StateRetryable},
	}
	clk := runtime.NewFakeClock(time.UnixMilli(time.Now().UnixMilli()))
	opts := runtime.Options{Clock: clk, IdlePoll: time.Hour, CrashLimit: 5, CrashDelay: time.Minute,
		Backoff: func(n int) time.Duration { return time.Duration(n) * time.Hour }}
	inproc, child := newEnv(t, clk), newEnv(t, clk)
	reg := flow.NewRegistry()
	must(registerParity(reg))
	inproc.startWorker(reg, opts)
	child.startWorker(isolate(t, command(), isolated.Options{}, parityArgs{}.Kind()), opts)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := parityArgs{Case: tc.name}
			w := parityOf(inproc.WaitState(inproc.Enqueue(args), tc.state), clk.Now())
			c := parityOf(child.WaitState(child.Enqueue(args), tc.state), clk.Now())
			compareParity(t, w, c, tc.diff)
		})
	}
	// a handler that outlives its timeout: each worker ends it (the child
	// by killing it) when its clock passes the timeout
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		clk := runtime.NewFakeClock(time.UnixMilli(time.Now().UnixMilli()))
		opts := opts
		opts.Clock, opts.Lease = clk, 10*time.Minute // the timeout's to end the attempt, not the lease
		inproc, child := newEnv(t, clk), newEnv(t, clk)
		reg := flow.NewRegistry()
		must(registerParity(reg))
		inproc.startWorker(reg, opts)
		child.startWorker(isolate(t, command(), isolated.Options{}, parityArgs{}.Kind()), opts)
		wid := inproc.Enqueue(parityArgs{Case: "timeout", Key: inproc.key("running")}, flow.WithTimeout(time.Minute))
		cid := child.Enqueue(parityArgs{Case: "timeout", Key: child.key("running")}, flow.WithTimeout(time.Minute))
		inproc.pop(inproc.key("running"))
		child.pop(child.key("running"))
		clk.Advance(2 * time.Minute)
		w := parityOf(inproc.WaitState(wid, flow.StateRetryable), clk.Now())
		c := parityOf(child.WaitState(cid, flow.StateRetryable), clk.Now())
		compareParity(t, w, c, nil)
	})
	// a handler that returns once its lease was lost (the worker's clock
	// passed the lease between two renewals): nothing of it is acked, and
	// the reaper charges the crash (lease_expired) of the worker that lost
	// it, each its own worker
	t.Run("lease lost", func(t *testing.T) {
		t.Parallel()
		clk := runtime.NewFakeClock(time.UnixMilli(time.Now().UnixMilli()))
		opts := opts
		opts.Clock, opts.Lease = clk, time.Minute
		inproc, child := newEnv(t, clk), newEnv(t, clk)
		reg := flow.NewRegistry()
		must(registerParity(reg))
		inproc.startWorker(reg, opts)
		child.startWorker(isolate(t, command(), isolated.Options{}, parityArgs{}.Kind()), opts)
		wid := inproc.Enqueue(parityArgs{Case: "timeout", Key: inproc.key("running")})
		cid := child.Enqueue(parityArgs{Case: "timeout", Key: child.key("running")})
		inproc.pop(inproc.key("running"))
		child.pop(child.key("running"))
		clk.Advance(3 * time.Minute)
		w := parityOf(inproc.PollState(wid, flow.StateRetryable), clk.Now())
		c := parityOf(child.PollState(cid, flow.StateRetryable), clk.Now())
		compareParity(t, w, c, func(w, c *parityJob) {
			holder, _, _ := strings.Cut(w.LastError, " held by ")
			if h, _, _ := strings.Cut(c.LastError, " held by "); h == holder {
				c.LastError = w.LastError // each names its own worker
			}
		})
	})
}

func compareParity(t *testing.T, w, c parityJob, diff func(w, c *parityJob)) {
	t.Helper()
	if diff != nil {
		diff(&w, &c)
	}
	if w != c {
		t.Errorf("the isolated child left its job\n%+v\nthe worker\n%+v", c, w)
	}
	if (w.Attempt > 0 || w.CrashAttempt > 0) && w.Class == "" {
		t.Errorf("the worker recorded an error of no class: %+v", w)
	}
}

// childPanicText: a crash in the child is told as the child's ("panic in
// isolated child: ..."), a worker's as "panic: ...": the same value after
// that prefix, when the value tells itself the same in both processes.
func childPanicText(w, c *parityJob) {
	if rest, ok := strings.CutPrefix(c.LastError, "panic in isolated child: "); ok {
		c.LastError = "panic: " + rest
	}
	if strings.Contains(w.LastError, "goexit") || strings.Contains(w.LastError, "Goexit") {
		return
	}
	// a nil panic's value names whether goroutine's exit is on record: the
	// same value told by two processes
	if strings.HasPrefix(w.LastError, "panic: panic called with nil argument") &&
		strings.HasPrefix(c.LastError, "panic: panic called with nil argument") {
		c.LastError = w.LastError
	}
}
