package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// ucArgs is the job whose user code panics at the row's point.
type ucArgs struct{ Point string }

func (ucArgs) Kind() string { return "user_code" }

// UnmarshalMsgpack panics for the "args" row: a payload type whose
// decoder panics, which the typed handler runs.
func (a *ucArgs) UnmarshalMsgpack(b []byte) error {
	type plain ucArgs
	if err := msgpack.Unmarshal(b, (*plain)(a)); err != nil {
		return err
	}
	if a.Point == "args" {
		panic("UnmarshalMsgpack broke")
	}
	return nil
}

// ucGoodArgs is the job in flight beside it: it runs until released.
type ucGoodArgs struct{}

func (ucGoodArgs) Kind() string { return "user_code_good" }

// isErr is an error whose Is method dereferences its receiver: a typed
// nil (var e *isErr; return e) tells its message but panics when asked
// whether it is another error.
type isErr struct{ code int }

func (*isErr) Error() string          { return "is broke" }
func (e *isErr) Is(target error) bool { return e.code == 1 }

// unwrapErr is an error whose Unwrap panics.
type unwrapErr struct{}

func (unwrapErr) Error() string { return "unwrap broke" }
func (unwrapErr) Unwrap() error { panic("Unwrap broke") }

// armedProcessor is a span processor that panics once, when armed, as a
// span starts (start) or ends.
type armedProcessor struct {
	start bool
	armed atomic.Bool
}

func (p *armedProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {
	if p.start && p.armed.CompareAndSwap(true, false) {
		panic("span processor OnStart broke")
	}
}

func (p *armedProcessor) OnEnd(sdktrace.ReadOnlySpan) {
	if !p.start && p.armed.CompareAndSwap(true, false) {
		panic("span processor OnEnd broke")
	}
}
func (*armedProcessor) Shutdown(context.Context) error   { return nil }
func (*armedProcessor) ForceFlush(context.Context) error { return nil }

// TestUserCodePanicIsThatJobsAlone: at each point where a worker calls
// code it does not own, a panic is charged to the job whose code it was
// (its crash, its failure, or logged and the job settled as if the code
// had not been there), never to the process or to the other job in
// flight, and the worker stops cleanly afterwards (startWorker's cleanup:
// nothing is left running).
//
// Points not in the table, and why:
//   - Options.Clock and Options.Logger: the worker's time source and log,
//     used by every loop of the worker (fetch, renewals, reaper, relay),
//     not only for jobs: a panic there cannot be charged to a job, and a
//     Logger's handler that blocks blocks the loop that logs. Both are
//     documented as the caller's to keep from panicking or blocking.
//   - Options.MeterProvider outside an attempt (the reaper's and relay's
//     counts, the depth gauge): documented likewise; an attempt's own
//     counts are recovered with its span's end (the OnEnd row).
//   - Options.OnDeadEffect: recovered and logged, tested with a relay
//     that dead-letters an effect (step's TestDeadEffectHookPanics).
//   - runtime/isolated's child: its registry and handlers run in another
//     process, whose panics (its lookup's too) it replies as the
//     attempt's crash (isolated's TestLookupPanicIsCrash and
//     TestChildAnswersAsWorker); a child that dies is a child_crash.
func TestUserCodePanicIsThatJobsAlone(t *testing.T) {
	t.Parallel()
	stuck := make(chan struct{}) // closed once OnStuck was called for the job
	rows := []struct {
		name string
		// set adds the panicking code to the worker's options (and may
		// arm something once the good job runs)
		set     func(o *runtime.Options, reg *flow.Registry) (h runtime.Handlers, arm func())
		work    func(ctx context.Context, job *flow.Job[ucArgs]) error
		regOpts []flow.HandlerOption
		enqOpts []flow.EnqueueOption
		state   string
		lastErr string // a substring of the job's last error
		logged  string // the record of a panic recovered outside the handler
		// suspect: the panic is as a crashed job is claimed again, which
		// runs only once the process runs no other job: the job beside it
		// is released once the panic is logged
		suspect bool
	}{{
		name:    "handler",
		work:    func(context.Context, *flow.Job[ucArgs]) error { panic("handler broke") },
		state:   flow.StateQuarantined,
		lastErr: "panic: handler broke",
	}, {
		name: "Error of a typed nil",
		work: func(context.Context, *flow.Job[ucArgs]) error {
			var e *brokenErr
			return e
		},
		state:   flow.StateQuarantined,
		lastErr: "nil pointer dereference",
	}, {
		name: "Is of a typed nil, after a timeout",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			o.KindTimeout = map[string]time.Duration{ucArgs{}.Kind(): 50 * time.Millisecond}
			return nil, nil
		},
		work: func(ctx context.Context, _ *flow.Job[ucArgs]) error {
			<-ctx.Done()
			var e *isErr
			return e
		},
		state:   flow.StateQuarantined,
		lastErr: "nil pointer dereference",
	}, {
		name: "Is of a typed nil, in a tracked goroutine",
		work: func(ctx context.Context, _ *flow.Job[ucArgs]) error {
			a, _ := runtime.AttemptFrom(ctx)
			if err := a.Go(func(context.Context) error {
				var e *isErr
				return e
			}); err != nil {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		},
		state:   flow.StateQuarantined,
		lastErr: "nil pointer dereference",
	}, {
		name:    "Unwrap",
		work:    func(context.Context, *flow.Job[ucArgs]) error { return unwrapErr{} },
		state:   flow.StateQuarantined,
		lastErr: "panic: Unwrap broke",
	}, {
		// flow's typed handler recovers a panic as it decodes the
		// arguments: they are malformed, and the job is archived
		name:    "args UnmarshalMsgpack",
		state:   flow.StateArchived,
		lastErr: "UnmarshalMsgpack broke",
	}, {
		name: "Handlers lookup",
		set: func(_ *runtime.Options, reg *flow.Registry) (runtime.Handlers, func()) {
			var armed atomic.Bool
			return armedHandlers{reg: reg, armed: &armed}, func() { armed.Store(true) }
		},
		state:   flow.StateQuarantined,
		lastErr: "panic: lookup broke",
	}, {
		name: "Contained",
		set: func(o *runtime.Options, reg *flow.Registry) (runtime.Handlers, func()) {
			o.CrashLimit = 2
			return containedHandlers{reg}, nil
		},
		work:    func(context.Context, *flow.Job[ucArgs]) error { panic("handler broke") },
		state:   flow.StateQuarantined,
		lastErr: "panic: handler broke",
		logged:  "a handler's Contained panicked; its job is a suspect",
		suspect: true,
	}, {
		name: "Middleware",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			o.Middleware = []runtime.Middleware{func(next runtime.Handler) runtime.Handler {
				return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
					if a.Kind == (ucArgs{}).Kind() {
						panic("middleware broke")
					}
					return next.Work(ctx, a)
				})
			}}
			return nil, nil
		},
		state:   flow.StateQuarantined,
		lastErr: "panic: middleware broke",
	}, {
		name:    "retry policy",
		work:    func(context.Context, *flow.Job[ucArgs]) error { return errors.New("failed") },
		regOpts: []flow.HandlerOption{flow.WithRetryPolicy(func(int, error) time.Duration { panic("policy broke") })},
		state:   flow.StateRetryable,
		lastErr: "failed",
		logged:  "retry policy panicked; using Options.Backoff",
	}, {
		name: "Backoff",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			o.Backoff = func(int) time.Duration { panic("backoff broke") }
			return nil, nil
		},
		work:    func(context.Context, *flow.Job[ucArgs]) error { return errors.New("failed") },
		state:   flow.StateRetryable,
		lastErr: "failed",
		logged:  "Options.Backoff panicked; using DefaultBackoff",
	}, {
		name: "NonConsuming",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			o.NonConsuming = func(err error) bool { panic("non-consuming broke") }
			return nil, nil
		},
		work:    func(context.Context, *flow.Job[ucArgs]) error { return errors.New("failed") },
		state:   flow.StateRetryable,
		lastErr: "failed",
		logged:  "Options.NonConsuming panicked; the attempt counts",
	}, {
		name: "OnDeath",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			o.OnDeath = func(context.Context, runtime.Death) { panic("OnDeath broke") }
			return nil, nil
		},
		work:    func(context.Context, *flow.Job[ucArgs]) error { return errors.New("failed") },
		enqOpts: []flow.EnqueueOption{flow.WithMaxAttempts(1)},
		state:   flow.StateArchived,
		lastErr: "failed",
		logged:  "death handler panicked",
	}, {
		name: "OnEvent",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			o.OnEvent = func(_ context.Context, e runtime.Event) {
				if e.Kind == (ucArgs{}).Kind() {
					panic("OnEvent broke")
				}
			}
			return nil, nil
		},
		state:  flow.StateCompleted,
		logged: "event handler panicked",
	}, {
		name: "OnStuck",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			o.StuckNoProgress = 50 * time.Millisecond
			o.OnStuck = func(_ context.Context, s runtime.Stuck) {
				if s.Job.Kind == (ucArgs{}).Kind() {
					close(stuck)
					panic("OnStuck broke")
				}
			}
			return nil, nil
		},
		work: func(ctx context.Context, _ *flow.Job[ucArgs]) error {
			select {
			case <-stuck:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		state:  flow.StateCompleted,
		logged: "stuck handler panicked",
	}, {
		// no job's code: the job beside it, and the bad one, run on
		name: "Periodic",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			p := &armedPeriodic{armed: make(chan struct{})}
			o.Periodic = p
			return nil, func() { close(p.armed) }
		},
		state:  flow.StateCompleted,
		logged: "the periodic service panicked; it stopped",
	}, {
		name: "span processor OnStart",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			p := &armedProcessor{start: true}
			o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
			return nil, func() { p.armed.Store(true) }
		},
		state:  flow.StateCompleted,
		logged: "starting the attempt's span panicked; the attempt runs without one",
	}, {
		name: "span processor OnEnd",
		set: func(o *runtime.Options, _ *flow.Registry) (runtime.Handlers, func()) {
			p := &armedProcessor{}
			o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
			return nil, func() { p.armed.Store(true) }
		},
		state:  flow.StateCompleted,
		logged: "ending the attempt's span panicked",
	}}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			reg := flow.NewRegistry()
			work := row.work
			if work == nil {
				work = func(context.Context, *flow.Job[ucArgs]) error { return nil }
			}
			testkit.Must(t, flow.Register(reg, work, row.regOpts...))
			running, release := make(chan struct{}, 1), make(chan struct{})
			testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[ucGoodArgs]) error {
				running <- struct{}{}
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}))
			o := runtime.Options{Concurrency: 4, CrashLimit: 1, CrashDelay: time.Millisecond}
			var h runtime.Handlers = reg
			var arm func()
			if row.set != nil {
				var hh runtime.Handlers
				if hh, arm = row.set(&o, reg); hh != nil {
					h = hh
				}
			}
			w := e.startWorker(h, o)
			good := e.Enqueue(ucGoodArgs{})
			select {
			case <-running:
			case <-time.After(waitTimeout):
				t.Fatal("the good job never ran")
			}
			if arm != nil {
				arm()
			}
			point := row.name
			if point == "args UnmarshalMsgpack" {
				point = "args"
			}
			bad := e.Enqueue(ucArgs{Point: point}, row.enqOpts...)
			logged := func() {
				t.Helper()
				if row.logged == "" {
					return
				}
				found := func() bool {
					return w.logs.find(func(r logRec) bool { return r.Msg == row.logged && r.Level == slog.LevelError }) != nil
				}
				redisproc.Poll(waitTimeout, func() (bool, string) { return found(), "" })
				if !found() {
					t.Errorf("no error record %q", row.logged)
				}
			}
			if row.suspect {
				logged()
				close(release)
			}
			j := e.WaitState(bad, row.state)
			if !strings.Contains(j.LastError, row.lastErr) {
				t.Errorf("the panicking job's last error %q, want it to hold %q", j.LastError, row.lastErr)
			}
			if !row.suspect {
				close(release)
			}
			if g := e.WaitState(good, flow.StateCompleted); g.CrashAttempt != 0 || g.Attempt != 0 {
				t.Errorf("the job in flight beside it: attempt %d, crash_attempt %d, want 0 and 0", g.Attempt, g.CrashAttempt)
			}
			// and the worker still runs jobs
			e.WaitState(e.Enqueue(ucGoodArgs{}), flow.StateCompleted)
			if !row.suspect {
				logged()
			}
		})
	}
}

// armedHandlers is a registry whose lookup of the user_code kind panics
// once armed.
type armedHandlers struct {
	reg   *flow.Registry
	armed *atomic.Bool
}

func (p armedHandlers) Handler(kind string) (runtime.Handler, bool) {
	if kind == (ucArgs{}).Kind() && p.armed.Load() {
		panic("lookup broke")
	}
	return p.reg.Handler(kind)
}

// armedPeriodic is a periodic service that panics once armed.
type armedPeriodic struct{ armed chan struct{} }

func (p *armedPeriodic) Run(ctx context.Context) error {
	select {
	case <-p.armed:
		panic("periodic service broke")
	case <-ctx.Done():
		return nil
	}
}

// containedHandlers is a registry whose user_code handler says whether it
// is Contained with a panic.
type containedHandlers struct{ reg *flow.Registry }

func (c containedHandlers) Handler(kind string) (runtime.Handler, bool) {
	h, ok := c.reg.Handler(kind)
	if ok && kind == (ucArgs{}).Kind() {
		return panickyContained{h}, true
	}
	return h, ok
}

type panickyContained struct{ runtime.Handler }

func (panickyContained) Contained() bool { panic("Contained broke") }
