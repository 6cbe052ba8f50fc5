package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
)

// kindHandlers serves one handler per kind.
type kindHandlers map[string]Handler

func (k kindHandlers) Handler(kind string) (Handler, bool) { h, ok := k[kind]; return h, ok }

// TestStopBeforeTheHandlerStarts: an attempt stopped while it waits for
// its runner (its lease found lost before execute set its cancel) starts
// its handler with its context cancelled for that cause. Before, stop
// found no cancel and did nothing, and the handler ran with a live
// context on a lease the store had given up.
func TestStopBeforeTheHandlerStarts(t *testing.T) {
	causes := make(chan error, 1)
	w, task := waitingAttempt(t, HandlerFunc(func(ctx context.Context, a *Attempt) ([]byte, error) {
		causes <- context.Cause(ctx)
		return nil, nil
	}), false)
	task.a.lose()
	go w.runner(w.pool, task)
	select {
	case cause := <-causes:
		if !errors.Is(cause, ErrLeaseLost) {
			t.Errorf("the handler of an attempt whose lease was lost before it started saw cause %v, want ErrLeaseLost", cause)
		}
	case <-time.After(time.Minute):
		t.Fatal("the handler did not start")
	}
	w.busy.Wait()
}

// waitingAttempt starts a worker on a miniredis, without its loops, with
// one job of kind "k" (handled by h) claimed for a minute and started: its
// attempt waits in a pool that has room for one task and no runner. It
// returns the worker and the task, which the caller runs (w.runner). A
// suspect's attempt (suspect) counts itself among the process's suspects,
// as start's caller does.
func waitingAttempt(t *testing.T, h Handler, suspect bool) (*Worker, runTask) {
	t.Helper()
	ctx := context.Background()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	w, err := NewWorker(rdb, kindHandlers{"k": h}, Options{Namespace: "t", Queues: map[string]int{"q": 1},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p := w.st.Partition("q", 0)
	if _, err := w.st.Enqueue(ctx, p, []store.NewJob{{Local: "j", Kind: "k", Payload: []byte("x"), MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	res, err := w.st.Claim(ctx, p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: w.opts.WorkerID, Nonce: "n"})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(res.Jobs), err)
	}
	w.attemptBase = ctx
	w.pool = &runners{tasks: make(chan runTask, 1), quit: make(chan struct{})}
	t.Cleanup(func() { close(w.pool.quit) })
	if suspect {
		suspects.Add(1)
	}
	w.start(ctx, p, res.Jobs[0], time.Now(), suspect)
	return w, <-w.pool.tasks
}

// TestShutdownBeforeTheHandlerStarts: an attempt whose handler had not
// started when the shutdown window ended (waiting for its runner) is
// handed back unrun, nothing charged, as Run documents for the jobs the
// window cancels. Before, its handler was called anyway, with its
// context already cancelled: a handler that does not look at its
// context first (or completes at once) ran the job on a worker that had
// stopped, and its success was acked as a completion.
func TestShutdownBeforeTheHandlerStarts(t *testing.T) {
	called := make(chan struct{}, 1)
	w, task := waitingAttempt(t, HandlerFunc(func(ctx context.Context, a *Attempt) ([]byte, error) {
		called <- struct{}{}
		return nil, nil // does its work without looking at ctx
	}), false)
	svc, stop := context.WithCancel(context.Background())
	var services sync.WaitGroup
	w.acks.start(svc, &services)
	defer func() { stop(); services.Wait() }()
	jobsCtx, cancelJobs := context.WithCancelCause(context.Background())
	cancelJobs(ErrShutdown) // the window ended before the runner took it
	task.ctx = jobsCtx
	go w.runner(w.pool, task)
	w.busy.Wait()
	select {
	case <-called:
		t.Error("the handler of an attempt not started by the end of the shutdown window was called")
	default:
	}
	j, _, err := w.st.Get(context.Background(), task.a.ref)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "available" || j.Attempt != 0 || j.CrashAttempt != 0 {
		t.Errorf("job after a shutdown before its handler started: state %s, attempt %d, crash attempt %d; want available, nothing charged",
			j.State, j.Attempt, j.CrashAttempt)
	}
}

// TestLeaseControlErrorsAfterStop: once the shutdown window has cancelled
// an attempt, ExtendLease and ReportProgress on its context return an
// error that is ErrShutdown (the cause, as ExtendLease's own waits
// returned) and context.Canceled. Before, both were the store call's
// "context canceled", which is neither: a caller could not tell it with
// errors.Is. ReportProgress after the outcome is settled is still
// ErrAttemptDone.
func TestLeaseControlErrorsAfterStop(t *testing.T) {
	type errs struct{ extend, progress error }
	stopped, got := make(chan struct{}), make(chan errs, 1)
	w, task := waitingAttempt(t, HandlerFunc(func(ctx context.Context, a *Attempt) ([]byte, error) {
		<-stopped
		got <- errs{ExtendLease(ctx, 0), ReportProgress(ctx, 50, "x")}
		return nil, ctx.Err()
	}), false)
	svc, stop := context.WithCancel(context.Background())
	var services sync.WaitGroup
	w.acks.start(svc, &services)
	defer func() { stop(); services.Wait() }()
	go w.runner(w.pool, task)
	for task.a.ctl.gid.Load() == 0 {
		time.Sleep(time.Millisecond) // the handler has started
	}
	task.a.stop(ErrShutdown) // as the window's end does
	close(stopped)
	e := <-got
	for name, err := range map[string]error{"ExtendLease": e.extend, "ReportProgress": e.progress} {
		if !errors.Is(err, ErrShutdown) || !errors.Is(err, context.Canceled) {
			t.Errorf("%s after the shutdown window: %v, want ErrShutdown and context.Canceled", name, err)
		}
	}
	w.busy.Wait()
	if err := task.a.ReportProgress(context.Background(), 50, "x"); !errors.Is(err, ErrAttemptDone) {
		t.Errorf("ReportProgress after the outcome was settled: %v, want ErrAttemptDone", err)
	}
}
