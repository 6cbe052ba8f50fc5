package runtime

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
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

// contained reports whether kind's handler is Contained. It is asked on
// the fetch loop, as a job with a crash on record is claimed, where a
// panic of the caller's Contained ended the process, every job in flight
// with it: one is logged, and the job is a suspect, as it is of a handler
// not Contained.
func (w *Worker) contained(kind string) (yes bool) {
	h, ok := w.handler(kind)
	c, is := h.(Contained)
	if !ok || !is {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("a handler's Contained panicked; its job is a suspect", keyKind, kind, keyPanic, fmt.Sprint(p), keyStack, string(debug.Stack()))
			yes = false
		}
	}()
	return c.Contained()
}

// Handlers finds the handler of a job kind. *flow.Registry implements it.
type Handlers interface {
	Handler(kind string) (Handler, bool)
}

// handler is the handler of kind (Handlers.Handler). The worker asks for
// it from its own goroutines, where a panic would end the process: one in
// the lookup (a Handlers of the caller's) is kept instead, with its stack,
// by a handler that returns it as a *PanicError, so that each attempt of
// the kind is a crash, as a handler's panic makes it, and nothing else
// stops.
func (w *Worker) handler(kind string) (h Handler, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			pe := &PanicError{Value: p, Stack: debug.Stack()}
			h, ok = HandlerFunc(func(context.Context, *Attempt) ([]byte, error) { return nil, pe }), true
		}
	}()
	return w.handlers.Handler(kind)
}

// known reports whether the worker has a handler for kind.
func (w *Worker) known(kind string) bool {
	_, ok := w.handler(kind)
	return ok
}

// warnKindOptions logs, when Run starts, each KindLease or KindTimeout
// entry for a kind no handler serves: a misspelt kind leaves that kind's
// jobs on the default lease or timeout, which nothing else would say. A
// warning, not a refusal: a fleet may share one Options among workers
// that each serve some of the kinds, and a registry may still be filled
// while the worker runs.
func (w *Worker) warnKindOptions() {
	for _, o := range []struct {
		name  string
		kinds map[string]time.Duration
	}{{"KindLease", w.opts.KindLease}, {"KindTimeout", w.opts.KindTimeout}} {
		for _, kind := range slices.Sorted(maps.Keys(o.kinds)) {
			if !w.known(kind) {
				w.log.Warn("an option names a kind this worker has no handler for: it applies to no job here until one is registered",
					"option", o.name, "kind", kind)
			}
		}
	}
}

// RetryPolicy is implemented by a Handler that chooses the delay before
// each retry of its jobs instead of Options.Backoff: attempt is the
// number of the attempt that failed plus one, as Backoff gets it, and err
// what failed it (the handler's error, or ErrTimeout's). A negative delay
// falls back to Options.Backoff, and so does a panic, which is logged: it
// is called after the attempt, outside the handler's recovery, where a
// panic would end the worker's process. flow.WithRetryPolicy makes one.
type RetryPolicy interface {
	Handler
	RetryDelay(attempt int, err error) time.Duration
}

// retryDelay is the delay before a's retry after err: its handler's
// RetryPolicy, else Options.Backoff (else DefaultBackoff, should Backoff
// panic).
func (w *Worker) retryDelay(a *Attempt, err error) time.Duration {
	if h, ok := w.handler(a.Kind); ok {
		if p, ok := h.(RetryPolicy); ok {
			if d, ok := callback(w, a, "retry policy panicked; using Options.Backoff", func() time.Duration {
				return p.RetryDelay(a.Attempt+1, err)
			}); ok && d >= 0 {
				return d
			}
		}
	}
	if d, ok := callback(w, a, "Options.Backoff panicked; using DefaultBackoff", func() time.Duration {
		return w.opts.Backoff(a.Attempt + 1)
	}); ok {
		return d
	}
	return DefaultBackoff(a.Attempt + 1)
}

// nonConsuming reports Options.NonConsuming(err), or false (an attempt
// spent, the default) if it panics.
func (w *Worker) nonConsuming(a *Attempt, err error) bool {
	if w.opts.NonConsuming == nil {
		return false
	}
	yes, _ := callback(w, a, "Options.NonConsuming panicked; the attempt counts", func() bool {
		return w.opts.NonConsuming(err)
	})
	return yes
}

// callback calls f, a user function on the path that settles attempt a
// (after the handler's recovery, where a panic would end the process).
// ok is false if f panicked: the panic is logged, with its stack, as msg.
func callback[T any](w *Worker, a *Attempt, msg string, f func() T) (v T, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error(msg, keyJob, a.ID, keyKind, a.Kind, keyPanic, fmt.Sprint(p), keyStack, string(debug.Stack()))
			ok = false
		}
	}()
	return f(), true
}
