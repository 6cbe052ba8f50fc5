package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// Env is one test's namespace on a Redis: a client, and the signals that
// every worker started on it sends to one set, so that a test waits on
// what any of them did.
type Env struct {
	T      testing.TB
	NS     string
	RDB    redis.UniversalClient // the caller's: Env does not close it
	Client *flow.Client
	Sig    *testsignal.Worker
}

// NewEnv makes a namespace of its own on rdb and a flow client on it with
// copts (whose Namespace it sets).
func NewEnv(tb testing.TB, rdb redis.UniversalClient, copts flow.ClientOptions) *Env {
	tb.Helper()
	copts.Namespace = redistest.NewNamespace(tb)
	c, err := flow.NewClient(rdb, copts)
	if err != nil {
		tb.Fatalf("testkit: client: %v", err)
	}
	return &Env{T: tb, NS: copts.Namespace, RDB: rdb, Client: c, Sig: testsignal.NewWorker()}
}

// StartWorker runs a worker on the env's Redis, namespace (unless o
// names one) and signals until the test ends (see StartWorker).
func (e *Env) StartWorker(h runtime.Handlers, o runtime.Options) *Worker {
	e.T.Helper()
	if o.Namespace == "" {
		o.Namespace = e.NS
	}
	return StartWorker(e.T, e.RDB, h, o, e.Sig)
}

// Enqueue enqueues args and returns the job's ID.
func (e *Env) Enqueue(args flow.Args, opts ...flow.EnqueueOption) string {
	e.T.Helper()
	res, err := e.Client.Enqueue(context.Background(), args, opts...)
	if err != nil {
		e.T.Fatalf("enqueue %s: %v", args.Kind(), err)
	}
	return res.ID
}

// Job reads the job id.
func (e *Env) Job(id string) *flow.JobInfo {
	e.T.Helper()
	j, err := e.Client.Job(context.Background(), id)
	if err != nil {
		e.T.Fatalf("job %s: %v", id, err)
	}
	return j
}

// WaitState returns the job once a worker of the env has settled it in
// state (at once if it is in state already); see WaitState.
func (e *Env) WaitState(id, state string) *flow.JobInfo {
	e.T.Helper()
	return WaitState(e.T, e.Client, e.Sig, id, state)
}

// WaitState returns job id, read with c, once it is in state. It
// subscribes to sig.Settled, reads the job, and while the job is in
// another state waits for the next Settled signal of the job and reads it
// again: a worker that settles the job in state after the read signals,
// and one that did before has left it in state, so neither is missed. It
// fails the test after Timeout, and when a signal settled the job in
// state but it has left it by the time it is read (the wait cannot tell
// its caller about that state). Only workers running with sig settle
// jobs it sees; a state that another process or Redis itself sets must
// be polled (Env.PollState).
//
// Its subscription takes no value from sig.Settled's own buffer, so
// tests may call it from parallel subtests and beside their own waits.
func WaitState(tb testing.TB, c *flow.Client, sig *testsignal.Worker, id, state string) *flow.JobInfo {
	tb.Helper()
	j, err := AwaitState(c, sig, id, state, Timeout)
	if err != nil {
		tb.Fatal(err)
	}
	return j
}

// AwaitState is WaitState that returns an error (and the job as last
// read, if it could be) instead of failing the test, for a caller that
// has more to say about it.
func AwaitState(c *flow.Client, sig *testsignal.Worker, id, state string, timeout time.Duration) (*flow.JobInfo, error) {
	deadline := time.Now().Add(timeout)
	sub := sig.Settled.Subscribe()
	defer sub.Close()
	for {
		j, err := c.Job(context.Background(), id)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", id, err)
		}
		if j.State == state {
			return j, nil
		}
		s, ok := sub.Await(time.Until(deadline), func(s testsignal.Settled) bool { return s.JobID == id })
		if !ok {
			return j, fmt.Errorf("job %s: no worker settled it %s within %s; it is %s (%s)", id, state, timeout, j.State, describe(j))
		}
		if s.State == state {
			if j, err = c.Job(context.Background(), id); err != nil {
				return nil, fmt.Errorf("job %s: %w", id, err)
			}
			if j.State != state {
				return j, fmt.Errorf("job %s: settled %s by %s, but %s already when read (%s)", id, state, s.Worker, j.State, describe(j))
			}
			return j, nil
		}
	}
}

func describe(j *flow.JobInfo) string {
	return fmt.Sprintf("attempt %d, crash %d, fence %d, reason %q, last error %q", j.Attempt, j.CrashAttempt, j.Fence, j.Reason, j.LastError)
}

// PollState polls job id until it is in state, for a job that another
// process works: no signal of its workers reaches this one. It fails the
// test after Timeout.
func (e *Env) PollState(id, state string) *flow.JobInfo {
	e.T.Helper()
	return PollJob(e.T, e.Client, id, "to be "+state, func(j *flow.JobInfo) bool { return j.State == state })
}

// PollJob polls job id, read with c, until done holds for it, and returns
// it then; it fails the test after Timeout with what it last read. what
// says what is awaited of the job ("to be completed").
func PollJob(tb testing.TB, c *flow.Client, id, what string, done func(*flow.JobInfo) bool) *flow.JobInfo {
	tb.Helper()
	var j *flow.JobInfo
	redistest.Within(tb, Timeout, "job "+id+" "+what, func() (bool, string) {
		var err error
		if j, err = c.Job(context.Background(), id); err != nil {
			return false, err.Error()
		}
		seen := j.State + ": " + describe(j)
		if j.WaitingFor != "" {
			seen += ", waiting for " + j.WaitingFor
		}
		return done(j), seen
	})
	return j
}

// Until checks cond now, and again each time sig sends a value that
// match accepts (nil accepts any), until cond holds; it fails the test
// after Timeout with cond's description of what it saw. It is for state
// that the signalled actions change but do not report one by one (an
// outbox relayed, a counter in Redis): each check follows such an
// action, none follows time. Its subscription takes no value from sig's
// own buffer.
func Until[T any](tb testing.TB, sig *testsignal.Signal[T], match func(T) bool, what string, cond func() (bool, string)) {
	tb.Helper()
	sub := sig.Subscribe()
	defer sub.Close()
	deadline := time.Now().Add(Timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if _, ok := sub.Await(time.Until(deadline), match); !ok {
			tb.Fatalf("timed out after %s waiting for %s; last seen: %s", Timeout, what, seen)
		}
	}
}
