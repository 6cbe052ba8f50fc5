// Package attempt is the running attempt's state that the user-facing
// packages (step, idempotency, flow) reach through the handler's context:
// its identity, its step checkpoints, and the commit path to Redis. The
// runtime creates one per attempt.
package attempt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// State is one attempt's durable-execution state.
type State struct {
	Store *store.Store
	Ref   keys.Ref
	// Created is when the job was enqueued: with Ref, it names this job's
	// commits apart from those of any job enqueued under its ID before
	// (CommitName).
	Created time.Time
	// Claimed is when the attempt's claim ran, in store time: a durable
	// timer has fired for this attempt when its wake time is not after it.
	Claimed time.Time
	Lease   store.Lease
	Layouts *store.Layouts // places spawned children and follow-ups (a fixed view in an isolated child)
	// Host runs the attempt: the worker, or an isolated child's link to
	// its parent. Nil in a state nothing runs (a step boundary then knows
	// nothing of the lease, and a commit fails).
	Host Host

	mu      sync.Mutex
	steps   map[string][]byte
	seq     int
	used    map[string]int
	final   []sluicetype.Effect
	current string
	memo    map[string]any
	decided atomic.Bool // Decide
	marked  atomic.Bool // Marked, or a commit went through
}

// Host is what runs an attempt: the state asks it at step boundaries and
// tells it of commits. It is one interface, not a hook per question, so
// that a worker sets it up for each attempt without allocating.
type Host interface {
	// Known reports whether a job kind has a handler here; spawning a
	// child of another kind is refused.
	Known(kind string) bool
	// Send writes a checkpoint (a worker batches it with others).
	Send(store.Checkpoint) store.CheckpointResult
	// Lose cancels the attempt when a commit finds its lease gone.
	Lose()
	// Committed is told of each successful commit, with the number of
	// outbox entries it wrote.
	Committed(step string, outboxed int)
	// Lost returns why the attempt's lease is known to be gone (a renewal,
	// a commit, lease control or an operator's cancellation found it), nil
	// while it is not. Local: no round trip.
	Lost() error
	// Expired reports that, by the host's clock, the lease may have run
	// out since its last successful renewal. Local: no round trip.
	Expired() bool
	// LeaseLeft is how long the lease has left by the host's clock, and a
	// channel closed when that changes (nil: it never does). Local.
	LeaseLeft() (time.Duration, <-chan struct{})
	// Confirm checks with Redis that the attempt still holds its lease
	// (its lease ID and fence are current) and extends it, in one round
	// trip; a lease found gone cancels the attempt and is returned as the
	// error. (An isolated child's host asks its worker to.)
	Confirm(ctx context.Context) error
	// Relay relays the outboxes of parts once, as the worker's relay
	// does (dead-lettered entries reported alike), and reports whether it
	// read any entry: flow.Join's recheck, for children whose partitions
	// no worker may serve any more. Failures are the host's to log; a
	// host with no Redis of its own relays nothing.
	Relay(ctx context.Context, parts []keys.Partition) bool
}

// Known is the host's Known, or nil (any valid kind) without a host.
func (s *State) Known() func(kind string) bool {
	if s.Host == nil {
		return nil
	}
	return s.Host.Known
}

// ErrDuplicateStep: a step name was used twice in one attempt.
var ErrDuplicateStep = sluicetype.ErrDuplicateStep

// errNoHost: a commit of a state that nothing runs (a programming error:
// every attempt a worker or an isolated child runs has its host).
var errNoHost = errors.New("sluice: no worker runs this attempt; its step cannot be committed")

// New returns the state of an attempt whose existing checkpoints are steps.
func New(st *store.Store, ref keys.Ref, lease store.Lease, steps map[string][]byte) *State {
	s := new(State)
	s.Init(st, ref, lease, steps)
	return s
}

// Init makes s, unused so far, the state New would return: for a state
// kept inside another struct (a worker's attempt), which saves an
// allocation per job.
func (s *State) Init(st *store.Store, ref keys.Ref, lease store.Lease, steps map[string][]byte) {
	s.Store, s.Ref, s.Lease, s.steps = st, ref, lease, steps // used: at the first step
}

// Marked records that the job is marked as having checkpoints (its claim
// answered some: store.Job.Checkpointed): its step commits say so
// (store.ModeOnceMarked), as do those after the attempt's first commit.
func (s *State) Marked() { s.marked.Store(true) }

// Decide records that the attempt's outcome is known while its handler
// has not returned yet: an isolated child replied, and the worker waits
// for it to exit. A timeout, deadline or shutdown that comes after it
// does not replace the outcome (runtime: the cause of an attempt).
func (s *State) Decide() { s.decided.Store(true) }

// Decided reports whether Decide was called.
func (s *State) Decided() bool { return s.decided.Load() }

// CommitName names a commit of this job (what: a step's name, a cursor
// checkpoint, the completion): relayed effects and follow-up jobs are
// applied once per name, by markers kept seven days. The job's creation
// time is part of it, so that a job enqueued again under the ID of one
// deleted before never has its commits taken for the old job's.
func (s *State) CommitName(what string) string {
	return s.Ref.String() + "@" + strconv.FormatInt(s.Created.UnixMilli(), 36) + ":" + what
}

type stateKey struct{}

// With returns ctx carrying s.
func With(ctx context.Context, s *State) context.Context {
	return context.WithValue(ctx, stateKey{}, s)
}

// IsKey reports whether key is the one With stores a state under: a
// context of the runtime's own answers it with the state (runtime's
// attemptCtx) instead of a WithValue node.
func IsKey(key any) bool {
	_, ok := key.(stateKey)
	return ok
}

// From returns the attempt state in ctx.
func From(ctx context.Context) (*State, bool) {
	s, ok := ctx.Value(stateKey{}).(*State)
	return s, ok
}

// Begin registers the next step of the attempt and returns its position in
// the step sequence (0, 1, ...). A name already used in this attempt is
// ErrDuplicateStep.
func (s *State) Begin(name string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.used[name]; dup {
		return 0, fmt.Errorf("%w: %q", ErrDuplicateStep, name)
	}
	i := s.seq
	s.seq++
	if s.used == nil {
		s.used = map[string]int{}
	}
	s.used[name] = i
	s.current = name
	return i, nil
}

// Position returns where step name sits in this attempt's sequence.
func (s *State) Position(name string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.used[name]
	return i, ok
}

// Checkpoint returns the stored record of field, if any.
func (s *State) Checkpoint(field string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.steps[field]
	return b, ok
}

// Checkpoints returns every stored record (a copy of the map).
func (s *State) Checkpoints() map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string][]byte, len(s.steps))
	for k, v := range s.steps {
		m[k] = v
	}
	return m
}

// Memo returns the value cached under key, building it on first use: a
// per-attempt cache for derived views of the checkpoints.
func (s *State) Memo(key string, build func() any) any {
	s.mu.Lock()
	v, ok := s.memo[key]
	s.mu.Unlock()
	if ok {
		return v
	}
	v = build()
	s.mu.Lock()
	if s.memo == nil {
		s.memo = map[string]any{}
	}
	s.memo[key] = v
	s.mu.Unlock()
	return v
}

// Current is the step running or last run.
func (s *State) Current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Check is the step boundary: it returns nil when the step's function may
// run, and otherwise why not, before anything runs.
//
// The default check (strict false) uses what the worker already knows,
// with no round trip: a lease known lost is store.ErrStale (wrapping the
// cause); a cancelled ctx (timeout, deadline, shutdown) is its cause. Only
// when the worker's clock says the lease may have run out since the last
// renewal does it confirm with Redis, as a strict check does every time:
// one fenced renewal (Confirm) that both proves the lease ID and fence
// current and extends the lease. A lease found gone is store.ErrStale; a
// failed round trip is its error (the function does not run without
// proof).
func (s *State) Check(ctx context.Context, strict bool) error {
	if err := s.lost(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return s.confirm(ctx, strict)
}

// Owned is Check without strictness and without looking at ctx's
// cancellation: nil unless the attempt is known, or found, not to own its
// job any more (store.ErrStale), or may not and Redis cannot say.
func (s *State) Owned(ctx context.Context) error {
	if err := s.lost(); err != nil {
		return err
	}
	return s.confirm(ctx, false)
}

// lost is store.ErrStale, wrapping why, once the lease is known lost.
func (s *State) lost() error {
	if s.Host == nil {
		return nil
	}
	if err := s.Host.Lost(); err != nil {
		return stale(err)
	}
	return nil
}

// confirm asks Redis when strict, or when the lease may have expired.
func (s *State) confirm(ctx context.Context, strict bool) error {
	if !strict && (s.Host == nil || !s.Host.Expired()) {
		return nil
	}
	if s.Host == nil {
		return errNoHost // strict: nothing holds a lease to confirm
	}
	if err := s.Host.Confirm(ctx); err != nil {
		if lost := s.lost(); lost != nil {
			return lost
		}
		return err
	}
	return nil
}

// stale makes err, why a lease is lost, match store.ErrStale.
func stale(err error) error {
	if errors.Is(err, store.ErrStale) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrStale, err)
}

// Commit writes a checkpoint and its effects in one fenced round trip. A
// stale attempt is cancelled (its lease is gone) and gets store.ErrStale.
func (s *State) Commit(field string, record []byte, mode, commit string, fx []sluicetype.Effect) error {
	if s.Host == nil {
		return errNoHost
	}
	send := mode
	if mode == store.ModeOnce && s.marked.Load() {
		send = store.ModeOnceMarked // the script need not read the mark
	}
	res := s.Host.Send(store.Checkpoint{
		Lease: s.Lease, Field: field, Record: record, Mode: send, Commit: commit, Effects: fx,
	})
	n, err := res.Outboxed, res.Err
	if errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrStepDone) {
		s.Host.Lose()
		return store.ErrStale
	}
	if err != nil {
		return err
	}
	s.marked.Store(true) // every commit that went through marks the job (lua/step.lua)
	s.mu.Lock()
	if s.steps == nil {
		s.steps = map[string][]byte{}
	}
	s.steps[field] = record
	if taken, ok := strings.CutPrefix(mode, store.ModeTake("")); ok {
		delete(s.steps, taken) // the signal is gone with this commit
	}
	s.mu.Unlock()
	s.Host.Committed(field, n)
	return nil
}

// OnComplete stages effects that commit atomically with the job's
// completion.
func (s *State) OnComplete(fx ...sluicetype.Effect) {
	s.mu.Lock()
	s.final = append(s.final, fx...)
	s.mu.Unlock()
}

// Final returns the effects staged for the completion.
func (s *State) Final() []sluicetype.Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.final
}
