package step

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// Run runs fn as the durable step name and returns its result. If the job
// already completed this step in an earlier attempt, Run returns the
// checkpointed result without calling fn. fn's error is returned as is and
// nothing is checkpointed; effects staged with Effect commit with the
// checkpoint, all or nothing.
//
// fn runs only if the attempt still owns the job as far as the worker
// knows: otherwise Run returns, without calling fn, ErrStale (the lease is
// lost or the job was cancelled) or the cause of ctx's cancellation
// (timeout, deadline, shutdown). With Strict, Run also confirms ownership
// with Redis right before fn runs. See the package documentation.
func Run[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error), opts ...Option) (v T, err error) {
	st, ok := attempt.From(ctx)
	if !ok {
		return v, ErrNoAttempt
	}
	if err := nested(ctx, name); err != nil {
		return v, err
	}
	idx, rec, err := begin(st, name)
	if err != nil {
		return v, err
	}
	ctx, span := startStep(ctx, st, name, idx, rec != nil) // telemetry.go
	returned := false
	defer func() { endStep(span, err, returned) }()
	v, err = run(ctx, st, name, idx, rec, fn, opts)
	returned = true
	return v, err
}

// run is Run once the step is registered: the checkpointed result, or
// fn's committed.
func run[T any](ctx context.Context, st *attempt.State, name string, idx int, rec *record, fn func(ctx context.Context) (T, error), opts []Option) (T, error) {
	var zero T
	if rec != nil {
		var v T
		if err := decode(rec.Result, &v); err != nil {
			return zero, park("stale_checkpoint", fmt.Errorf("%w: result of step %q: %v", ErrStaleCheckpoint, name, err))
		}
		return v, nil
	}
	if err := boundary(ctx, st, name, opts); err != nil {
		return zero, err
	}
	sc := &stepCtx{Context: ctx}
	v, err := fn(sc)
	if r := sc.fx.refusal(); r != nil {
		// OnComplete or a step was called in fn: a mistake in the
		// handler's code, which a retry would make again; the job is
		// parked if the handler returns this (whether fn returned the
		// error or not)
		return zero, r
	}
	if err != nil {
		return zero, err
	}
	// the first run returns what every later attempt decodes, not fn's
	// value: a value in an interface (an int read back as uint8), an
	// unexported field or a time's monotonic reading would differ, and
	// code after the step could decide otherwise once resumed
	var (
		got   T
		check func([]byte) error
	)
	if _, none := any(v).(struct{}); none {
		got = v // Do's: nothing to read back, and the common step of a workflow
	} else {
		check = func(res []byte) error { return decode(res, &got) }
	}
	b, err := encodeRecord(idx, v, check)
	if err != nil {
		return zero, err
	}
	fx, commit := sc.fx.take(), ""
	if len(fx) > 0 {
		commit = st.CommitName(name) // names what the effects relay; a plain step has none
	}
	if err := st.Commit(name, b, store.ModeOnce, commit, fx); err != nil {
		return zero, err
	}
	return got, nil
}

// stepCtx is a step function's context: ctx, which also answers the step's
// staged effects (Effect). One allocation per step, where a WithValue of
// a separate collector took two.
type stepCtx struct {
	context.Context
	fx staged
}

func (c *stepCtx) Value(key any) any {
	if _, ok := key.(stagedKey); ok {
		return &c.fx
	}
	return c.Context.Value(key)
}

// Do is Run for a step without a result.
func Do(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...Option) error {
	_, err := Run(ctx, name, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	}, opts...)
	return err
}

// Option changes how Run and Do run a step.
type Option func(*options)

type options struct {
	strict bool
}

// Strict makes a step confirm with Redis, immediately before its function
// runs, that the attempt still owns the job: one fenced lease renewal (the
// lease ID and fence must be current; the lease is extended as
// runtime.ExtendLease does). If the job moved on — another worker reclaimed
// it, an operator cancelled it — and the worker did not know yet, the
// function does not run and the step returns ErrStale; if Redis cannot be
// reached, its error. Use it for a step whose function has external
// effects (a payment, an e-mail): it costs one round trip, and only when
// the function runs (not when the step's result is replayed). The window
// left is the function's own run time: ownership can still move while it
// runs.
//
// In an isolated child (package runtime/isolated) the child asks its
// worker, which holds the lease, to confirm it: a round trip on the pipe
// besides the one to Redis.
func Strict() Option { return func(o *options) { o.strict = true } }

// boundary is the check at a step boundary, before its function runs
// (attempt.State.Check): local knowledge by default, a round trip when
// strict.
func boundary(ctx context.Context, st *attempt.State, name string, opts []Option) error {
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return st.Check(ctx, o.strict)
}

// Commit is a step whose work is its effects: they are applied, fenced,
// together with the step's checkpoint, exactly once per job.
func Commit(ctx context.Context, name string, effects ...sluicetype.Effect) error {
	return Do(ctx, name, func(ctx context.Context) error {
		return Effect(ctx, effects...)
	})
}

// Effect adds effects to the step running in ctx (inside Run or Do's
// function): they commit atomically with the step's checkpoint.
func Effect(ctx context.Context, effects ...sluicetype.Effect) error {
	fx, ok := ctx.Value(stagedKey{}).(*staged)
	if !ok {
		return fmt.Errorf("%w: step.Effect outside a step function", ErrNoAttempt)
	}
	fx.add(effects)
	return nil
}

// OnComplete stages effects that commit atomically with the job's
// fence-verified completion: the job is completed and they are applied, or
// neither. If they cannot apply, the attempt fails and is retried.
//
// OnComplete belongs at handler level, outside any step function: staged
// effects live in the attempt's memory, and a step that checkpointed does
// not run again, so effects staged inside it would be lost if a later
// attempt completes the job. Called inside a step function (Run, Do,
// Commit), it stages nothing and returns ErrOnCompleteInStep, and the
// step fails with that error even if its function ignores it; a handler
// that returns it parks the job (reason on_complete_in_step).
func OnComplete(ctx context.Context, effects ...sluicetype.Effect) error {
	st, ok := attempt.From(ctx)
	if !ok {
		return ErrNoAttempt
	}
	if fx, ok := ctx.Value(stagedKey{}).(*staged); ok {
		fx.refuse(park("on_complete_in_step", ErrOnCompleteInStep))
		return ErrOnCompleteInStep
	}
	st.OnComplete(effects...)
	return nil
}

type stagedKey struct{}

// staged collects the effects of one step function, and the refusal of
// an OnComplete called in it.
type staged struct {
	mu      sync.Mutex
	fx      []sluicetype.Effect
	refused error
}

// refuse records err (a park) as the step's failure.
func (s *staged) refuse(err error) {
	s.mu.Lock()
	s.refused = err
	s.mu.Unlock()
}

// nested refuses the step name (Run, Do, Commit, a wait, a cursor, a
// Spawn) when ctx is a step function's: an inner step takes its position
// in the sequence only in the attempts that run the outer step's
// function, not in the later ones that replay the outer step from its
// checkpoint, where the next step would meet the inner step's checkpoint
// at its position and park the job as stale_checkpoint under unchanged
// code. The outer step fails with the refusal, even if its function
// ignores it.
func nested(ctx context.Context, name string) error {
	fx, ok := ctx.Value(stagedKey{}).(*staged)
	if !ok {
		return nil
	}
	err := park("step_in_step", fmt.Errorf("%w: %q", ErrStepInStep, name))
	fx.refuse(err)
	return err
}

func (s *staged) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *staged) add(fx []sluicetype.Effect) {
	s.mu.Lock()
	s.fx = append(s.fx, fx...)
	s.mu.Unlock()
}

func (s *staged) take() []sluicetype.Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fx
}
