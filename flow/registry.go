package flow

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/mpack"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/outcome"
	"github.com/sluicehq/sluice/runtime"
)

// Args is a job's arguments: any msgpack-encodable type with a stable kind
// name. Kind must not change once jobs of the type exist.
type Args interface {
	Kind() string
}

// ValidKind reports whether k is a valid kind: 1 to 128 letters, digits or
// '_', '.', ':', '/', '-', starting with a letter or digit.
func ValidKind(k string) bool { return names.Valid(k, 128, "_.:/-") }

// Registry maps job kinds to handlers. It implements runtime.Handlers.
type Registry struct {
	mu       sync.RWMutex
	handlers map[string]runtime.Handler
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{handlers: map[string]runtime.Handler{}}
}

// Handler returns the handler of kind.
func (r *Registry) Handler(kind string) (runtime.Handler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[kind]
	return h, ok
}

// Known reports whether kind has a handler.
func (r *Registry) Known(kind string) bool {
	_, ok := r.Handler(kind)
	return ok
}

func (r *Registry) add(kind string, h runtime.Handler) error {
	if !ValidKind(kind) {
		return fmt.Errorf("%w: kind %s", ErrInvalid, names.Quote(kind))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[kind]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicateKind, kind)
	}
	r.handlers[kind] = h
	return nil
}

// Register adds the handler of job type T. It fails on an invalid or
// already registered kind, or a nil handler.
func Register[T Args](r *Registry, fn func(ctx context.Context, job *Job[T]) error, opts ...HandlerOption) error {
	if fn == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalid)
	}
	return RegisterResult(r, func(ctx context.Context, job *Job[T]) (struct{}, error) {
		return struct{}{}, fn(ctx, job)
	}, opts...)
}

// HandlerOption configures a handler at registration.
type HandlerOption func(*handlerOptions)

type handlerOptions struct {
	retry func(attempt int, err error) time.Duration
}

// WithRetryPolicy chooses the delay before each retry of the kind's jobs,
// instead of the worker's Backoff: attempt is the number of the attempt
// that failed plus one, err what failed it (the handler's error,
// runtime.ErrTimeout's, or runtime.ErrEffectsFailed). A negative delay
// falls back to the worker's Backoff, and so does a policy that panics
// (the worker logs the panic and goes on).
//
//	flow.Register(reg, send, flow.WithRetryPolicy(func(attempt int, err error) time.Duration {
//		var busy *UpstreamBusy
//		if errors.As(err, &busy) {
//			return busy.RetryAfter
//		}
//		return time.Duration(attempt) * time.Minute
//	}))
func WithRetryPolicy(p func(attempt int, err error) time.Duration) HandlerOption {
	return func(o *handlerOptions) { o.retry = p }
}

// retrying is a handler with its own retry policy (runtime.RetryPolicy).
type retrying struct {
	runtime.HandlerFunc
	policy func(attempt int, err error) time.Duration
}

func (h retrying) RetryDelay(attempt int, err error) time.Duration { return h.policy(attempt, err) }

// RegisterResult adds the handler of job type T whose result R is stored
// (msgpack) with the job when it completes.
func RegisterResult[T Args, R any](r *Registry, fn func(ctx context.Context, job *Job[T]) (R, error), opts ...HandlerOption) error {
	if fn == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalid)
	}
	var ho handlerOptions
	for _, o := range opts {
		if o != nil {
			o(&ho)
		}
	}
	if reflect.TypeFor[T]().Kind() == reflect.Interface {
		// kindOf would call Kind on a nil interface
		return fmt.Errorf("%w: job type %s is an interface: register a concrete type", ErrInvalid, reflect.TypeFor[T]())
	}
	kind := kindOf[T]()
	_, empty := any(struct{}{}).(R)
	h := runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
		job, err := newJob[T](a)
		if err != nil {
			return nil, &outcome.Park{Reason: "malformed_payload", Err: err}
		}
		res, err := fn(ctx, job)
		if err != nil || empty {
			return nil, err
		}
		b, err := mpack.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("encoding the result of %s: %w", a.ID, err)
		}
		return b, nil
	})
	if ho.retry != nil {
		return r.add(kind, retrying{HandlerFunc: h, policy: ho.retry})
	}
	return r.add(kind, h)
}

// kindOf is the kind of job type T. For a pointer type it asks a new
// value (a nil one would panic in a Kind method with a value receiver).
func kindOf[T Args]() string {
	var zero T
	if t := reflect.TypeFor[T](); t.Kind() == reflect.Pointer {
		return reflect.New(t.Elem()).Interface().(Args).Kind()
	}
	return zero.Kind()
}
