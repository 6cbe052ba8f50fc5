package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
)

// Middleware wraps every handler the worker runs (Options.Middleware):
// it returns a Handler that does its work around next.Work. The *Attempt
// it is given carries the job's metadata (ID, Queue, Kind, Attempt,
// CrashAttempt, MaxAttempts, Fence), and what next.Work returns is the
// handler's outcome:
//
//   - a handler's panic is recovered before the middleware sees it and
//     comes back from next.Work as a *PanicError (with the stack at the
//     panic), so a middleware that logs or counts errors sees panics too;
//   - a middleware returns what the attempt's outcome is: the handler's
//     result and error as they are, or others (an error for a nil, a
//     retry for a panic: a *PanicError it replaces no longer crashes).
//     It cannot complete a job whose handler panicked: when next.Work
//     returned a *PanicError and the chain returns a nil error, the
//     attempt is a crash all the same;
//   - a middleware's own panic counts as a crash of the attempt, like a
//     handler's: it unwinds through the middleware further out (their
//     deferred calls run) and the worker recovers it. So does a panic as
//     it wraps next (each Middleware is called once per attempt), and
//     one in the lookup of the kind's handler (Handlers).
//
// Middleware wraps the handlers found for a job's kind; a job without
// one (unknown kind, malformed) is archived without running any.
type Middleware func(next Handler) Handler

// PanicError is a panic of a handler or middleware, recovered by the
// worker: what next.Work returns to a Middleware for it, and the Err of
// an EventCrashed. A handler or middleware that returns one (or an error
// wrapping one) makes its attempt a crash, like the panic.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack where it was recovered
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// call runs the attempt's handler, within the middleware if any, and
// turns a panic, or a returned *PanicError, into a crash result.
func (w *Worker) call(ctx context.Context, h Handler, a *Attempt) result {
	if len(w.opts.Middleware) == 0 {
		return recovered(ctx, h, a)
	}
	var inner *PanicError // the handler's panic, if it panicked
	var chain Handler = HandlerFunc(func(ctx context.Context, a *Attempt) ([]byte, error) {
		r := recovered(ctx, h, a)
		if r.panic != nil {
			inner = &PanicError{Value: r.panic, Stack: r.stack}
			return nil, inner
		}
		return r.data, r.err
	})
	// wrapped inside the recovery: a middleware that panics as it wraps
	// (not only as it runs) crashes the attempt, not the worker
	r := recovered(ctx, HandlerFunc(func(ctx context.Context, a *Attempt) ([]byte, error) {
		for i := len(w.opts.Middleware) - 1; i >= 0; i-- {
			chain = w.opts.Middleware[i](chain)
		}
		return chain.Work(ctx, a)
	}), a)
	if r.panic == nil && r.err == nil && inner != nil { // a middleware swallowed the panic
		return result{panic: inner.Value, stack: inner.Stack}
	}
	return r
}

// recovered runs h, turning a panic, or a returned *PanicError, into a
// crash result.
func recovered(ctx context.Context, h Handler, a *Attempt) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{panic: p, stack: debug.Stack()}
		}
	}()
	data, err := h.Work(ctx, a)
	if err != nil {
		// declared here: errors.As takes its address, which puts it on
		// the heap, and most attempts return no error
		var pe *PanicError
		if errors.As(err, &pe) {
			v := pe.Value
			if v == nil {
				// a PanicError of no value (&PanicError{}) is a crash too,
				// as panic(nil) is: a nil panic would read as no panic, and
				// the attempt as a completion of a handler that failed
				v = new(goruntime.PanicNilError)
			}
			return result{panic: v, stack: pe.Stack}
		}
		probe(err)
	}
	return result{data: data, err: err}
}

// errProbe is an error no other is: errors.Is asks every error in a tree
// whether it is this one.
var errProbe = errors.New("runtime: probe")

// probe calls the methods of a returned error that the worker calls
// after the handler's recovery: its message (the ack's), and Is as
// errors.Is walks its tree (an attempt stopped for a timeout, a deadline,
// a shutdown or a failed tracked goroutine, whose cause wraps the error).
// Called where a panic is the attempt's crash: after the recovery, one (a
// typed nil error whose Error or Is dereferences it) ended the process,
// every job in flight with it.
func probe(err error) {
	_ = err.Error()
	_ = errors.Is(err, errProbe)
}
