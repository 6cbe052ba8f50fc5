package runtime

import (
	"context"
	"time"
)

// Handler runs one attempt of a job. A nil error completes the job with
// result (which may be nil); errors decide its fate as documented in
// package flow (retry, snooze, skip, ...).
type Handler interface {
	Work(ctx context.Context, a *Attempt) (result []byte, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, a *Attempt) ([]byte, error)

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, a *Attempt) ([]byte, error) { return f(ctx, a) }

// Contained is implemented by a Handler whose attempts cannot take the
// worker's process down (runtime/isolated runs each in a child process).
// A job with a crash on record whose handler is contained does not keep
// the worker from claiming another such job, as other suspects do (see
// Options.CrashDelay and the README's outcome table).
type Contained interface {
	Handler
	Contained() bool
}

// contained reports whether kind's handler is Contained.
func (w *Worker) contained(kind string) bool {
	h, ok := w.handlers.Handler(kind)
	c, is := h.(Contained)
	return ok && is && c.Contained()
}

// Handlers finds the handler of a job kind. *flow.Registry implements it.
type Handlers interface {
	Handler(kind string) (Handler, bool)
}

// known reports whether the worker has a handler for kind.
func (w *Worker) known(kind string) bool {
	_, ok := w.handlers.Handler(kind)
	return ok
}

// RetryPolicy is implemented by a Handler that chooses the delay before
// each retry of its jobs instead of Options.Backoff: attempt is the
// number of the attempt that failed plus one, as Backoff gets it, and err
// what failed it (the handler's error, or ErrTimeout's). A negative delay
// falls back to Options.Backoff. flow.WithRetryPolicy makes one.
type RetryPolicy interface {
	Handler
	RetryDelay(attempt int, err error) time.Duration
}

// retryDelay is the delay before a's retry after err: its handler's
// RetryPolicy, else Options.Backoff.
func (w *Worker) retryDelay(a *Attempt, err error) time.Duration {
	if h, ok := w.handlers.Handler(a.Kind); ok {
		if p, ok := h.(RetryPolicy); ok {
			if d := p.RetryDelay(a.Attempt+1, err); d >= 0 {
				return d
			}
		}
	}
	return w.opts.Backoff(a.Attempt + 1)
}
