package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// mwTrace records what middleware and handlers did, in order.
type mwTrace struct {
	mu    sync.Mutex
	lines []string
}

func (tr *mwTrace) add(format string, a ...any) {
	tr.mu.Lock()
	tr.lines = append(tr.lines, fmt.Sprintf(format, a...))
	tr.mu.Unlock()
}

func (tr *mwTrace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.lines...)
}

// tracing is a middleware that records its name, the attempt's metadata
// and the outcome it sees.
func tracing(tr *mwTrace, name string) runtime.Middleware {
	return func(next runtime.Handler) runtime.Handler {
		return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
			tr.add("%s> %s %s %s attempt=%d", name, a.ID, a.Kind, a.Queue, a.Attempt)
			res, err := next.Work(ctx, a)
			tr.add("<%s err=%v", name, err)
			return res, err
		})
	}
}

// TestMiddlewareOrderAndMetadata: Middleware[0] is outermost; each sees
// the job's metadata before the handler runs and its error after.
func TestMiddlewareOrderAndMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tr := &mwTrace{}
	reg := register(t, func(_ context.Context, job *flow.Job[obsArgs]) error {
		tr.add("handler")
		if job.Attempt == 0 {
			return errors.New("first try fails")
		}
		return nil
	})
	e.startWorker(reg, runtime.Options{Backoff: func(int) time.Duration { return 0 },
		Middleware: []runtime.Middleware{tracing(tr, "outer"), tracing(tr, "inner")}})
	id := e.Enqueue(obsArgs{})
	e.WaitState(id, flow.StateCompleted)
	want := []string{
		"outer> " + id + " obs default attempt=0", "inner> " + id + " obs default attempt=0", "handler",
		"<inner err=first try fails", "<outer err=first try fails",
		"outer> " + id + " obs default attempt=1", "inner> " + id + " obs default attempt=1", "handler",
		"<inner err=<nil>", "<outer err=<nil>",
	}
	if diff := cmp.Diff(want, tr.get()); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
}

// TestMiddlewarePanics: a handler's panic reaches middleware as a
// *PanicError and crashes the attempt, even when a middleware swallows
// it; a middleware may turn it into an ordinary error (a retry); a
// middleware's own panic, as it runs or as it wraps, crashes the attempt
// like a handler's.
func TestMiddlewarePanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		mw          runtime.Middleware
		state       string
		lastError   string
		wantHandler bool
	}{
		{
			name: "seen as a PanicError", state: flow.StateQuarantined, lastError: "panic: boom", wantHandler: true,
			mw: func(next runtime.Handler) runtime.Handler {
				return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
					res, err := next.Work(ctx, a)
					if pe := (*runtime.PanicError)(nil); !errors.As(err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
						return nil, fmt.Errorf("middleware saw %v, not the panic", err)
					}
					return res, err
				})
			},
		},
		{
			name: "swallowed, still a crash", state: flow.StateQuarantined, lastError: "panic: boom", wantHandler: true,
			mw: func(next runtime.Handler) runtime.Handler {
				return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
					_, _ = next.Work(ctx, a)
					return nil, nil
				})
			},
		},
		{
			name: "turned into an error", state: flow.StateArchived, lastError: "recovered: panic: boom", wantHandler: true,
			mw: func(next runtime.Handler) runtime.Handler {
				return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
					if _, err := next.Work(ctx, a); err != nil {
						return nil, errors.New("recovered: " + err.Error())
					}
					return nil, nil
				})
			},
		},
		{
			name: "middleware panics", state: flow.StateQuarantined, lastError: "panic: middleware broke",
			mw: func(runtime.Handler) runtime.Handler {
				return runtime.HandlerFunc(func(context.Context, *runtime.Attempt) ([]byte, error) {
					panic("middleware broke")
				})
			},
		},
		{
			// a helper's audit: wrapping ran outside the recovery, and
			// this panic ended the worker's process
			name: "middleware panics as it wraps", state: flow.StateQuarantined, lastError: "panic: wrapping broke",
			mw: func(runtime.Handler) runtime.Handler { panic("wrapping broke") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			ran := testkit.Chan[string]()
			reg := register(t, func(_ context.Context, job *flow.Job[obsArgs]) error {
				ran <- job.ID
				panic("boom")
			})
			e.startWorker(reg, runtime.Options{CrashLimit: 1, Middleware: []runtime.Middleware{tt.mw}})
			id := e.Enqueue(obsArgs{}, flow.WithMaxAttempts(1))
			j := e.WaitState(id, tt.state)
			if j.LastError != tt.lastError {
				t.Errorf("last error %q, want %q", j.LastError, tt.lastError)
			}
			if tt.wantHandler {
				testkit.Recv(t, ran, "the handler to run")
			} else {
				testkit.NoRecv(t, ran, "the handler to run")
			}
		})
	}
}

// TestMiddlewareNilIsInvalid: a nil middleware is a configuration error.
func TestMiddlewareNilIsInvalid(t *testing.T) {
	t.Parallel()
	_, err := runtime.NewWorker(shared.Client(t), flow.NewRegistry(), runtime.Options{Middleware: []runtime.Middleware{nil}})
	if !errors.Is(err, runtime.ErrInvalidOptions) {
		t.Errorf("NewWorker: %v, want ErrInvalidOptions", err)
	}
}
