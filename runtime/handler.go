package runtime

import "context"

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

// Handlers finds the handler of a job kind. *flow.Registry implements it.
type Handlers interface {
	Handler(kind string) (Handler, bool)
}

// known reports whether the worker has a handler for kind.
func (w *Worker) known(kind string) bool {
	_, ok := w.handlers.Handler(kind)
	return ok
}
