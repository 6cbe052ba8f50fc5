package runtime

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/sluicetype"
)

// StuckCase says why an attempt is reported stuck.
type StuckCase string

// Stuck cases.
const (
	// IgnoredStop: the attempt was told to stop (timeout, deadline, lost
	// lease, shutdown, cancellation) and still runs StuckAfterStop later,
	// or when Run returns if that is sooner.
	IgnoredStop StuckCase = "ignored_stop"
	// NoProgress: the attempt's lease is healthy but it made no progress
	// (step checkpoint, cursor checkpoint, ReportProgress) for
	// StuckNoProgress.
	NoProgress StuckCase = "no_progress"
)

// Stuck is the evidence about an attempt that stopped progressing. It is
// reported once per attempt and case: to Options.OnStuck, to the log and,
// while no newer attempt has claimed the job, on the job for operators
// (flow.JobInfo.Stuck).
type Stuck struct {
	Job     JobSnapshot
	LeaseID string // the attempt's identity, with Job.Fence
	Case    StuckCase
	// Cause is why the attempt was told to stop (IgnoredStop): ErrTimeout,
	// ErrDeadline, ErrLeaseLost, ErrShutdown, ... Nil for NoProgress.
	Cause error
	// Since is when it was told to stop, or its last progress (worker
	// clock); For is how long ago that was when it was found stuck.
	Since time.Time
	For   time.Duration
	// Step is the step it is in (or last ran); Cursor that step's last
	// checkpointed cursor value, when it is a cursor step.
	Step   string
	Cursor any
	// Stack holds the stacks of the handler's goroutine and of its tracked
	// goroutines (Go) still running.
	Stack []byte
}

// watchStopped starts the watch of an attempt told to stop: if the handler
// has not returned StuckAfterStop later, or by the time Run returns if
// that is sooner, it is reported stuck. Run's end is the last the worker
// can tell of it: a handler that ignores the shutdown window's
// cancellation is settled without it after CancelGrace, and Run returns
// long before the default StuckAfterStop.
func (w *Worker) watchStopped(ctx context.Context, a *Attempt, returned <-chan struct{}) {
	since := w.clk.Now()
	a.ctl.mu.Lock()
	a.ctl.stoppedAt = since
	a.ctl.mu.Unlock()
	r := &w.rel
	r.watching.Add(1) // before spawn: a stop of the Run that sees none waits for none
	if !r.spawn(func(run *relRun) {
		defer r.watching.Add(-1)
		t := w.clk.NewTimer(w.opts.StuckAfterStop)
		defer t.Stop()
		select {
		case <-returned:
			return
		case <-run.quit:
		case <-t.C():
		}
		select {
		case <-returned: // returned in time after all
		default:
			w.reportStuck(run.ctx, a, IgnoredStop, context.Cause(ctx), since)
		}
	}) {
		r.watching.Add(-1)
	}
}

// progressWatch reports running attempts without progress for
// StuckNoProgress, checking a quarter as often.
func (w *Worker) progressWatch(run *relRun) {
	limit := w.opts.StuckNoProgress
	for {
		t := w.clk.NewTimer(max(limit/4, time.Millisecond))
		select {
		case <-run.quit:
			t.Stop()
			return
		case <-t.C():
		}
		now := w.clk.Now()
		w.mu.Lock()
		var idle []*Attempt
		for a := range w.inflight {
			a.ctl.mu.Lock()
			if !a.settled.Load() && a.ctl.stoppedAt.IsZero() && !a.ctl.reported[1] && now.Sub(a.ctl.progress) >= limit {
				idle = append(idle, a)
			}
			a.ctl.mu.Unlock()
		}
		w.mu.Unlock()
		for _, a := range idle {
			a.ctl.mu.Lock()
			since := a.ctl.progress
			a.ctl.mu.Unlock()
			w.rel.spawn(func(run *relRun) { w.reportStuck(run.ctx, a, NoProgress, nil, since) })
		}
	}
}

// reportStuck gathers the evidence and reports it, once per case.
func (w *Worker) reportStuck(ctx context.Context, a *Attempt, c StuckCase, cause error, since time.Time) {
	i := 0
	if c == NoProgress {
		i = 1
	}
	a.ctl.mu.Lock()
	done := a.ctl.reported[i]
	a.ctl.reported[i] = true
	a.ctl.mu.Unlock()
	if done {
		return
	}
	w.rel.active.Add(1)
	defer w.rel.active.Add(-1)
	now := w.clk.Now()
	s := Stuck{
		Job: snapshot(a), LeaseID: a.LeaseID, Case: c, Cause: cause, Since: since, For: now.Sub(since),
		Step: a.state.Current(), Stack: a.ctl.stacks(),
	}
	s.Cursor = cursorOf(a.state, s.Step)
	why := fmt.Sprintf("no progress for %s", s.For)
	if cause != nil {
		why = fmt.Sprintf("told to stop (%v) %s ago", cause, s.For)
	}
	rec := sluicetype.StuckInfo{Case: string(c), Why: why, Since: since, Step: s.Step, Stack: string(s.Stack)}
	if s.Cursor != nil {
		rec.Cursor = fmt.Sprint(s.Cursor)
	}
	written, err := w.st.Stuck(ctx, a.ref.Partition, a.storeLease(), rec)
	w.log.Warn("attempt stuck", "job", a.ID, "kind", a.Kind, "fence", a.Fence, "case", string(c), "why", why,
		"step", s.Step, "recorded", written, "err", err)
	if w.opts.OnStuck == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("stuck handler panicked", "job", a.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	w.opts.OnStuck(ctx, s)
}

// cursorOf decodes the last checkpointed value of step's cursor, if any.
func cursorOf(st *attempt.State, step string) any {
	if step == "" {
		return nil
	}
	b, ok := st.Checkpoint(checkpoint.CursorPrefix + step)
	if !ok {
		return nil
	}
	var r struct {
		V any `msgpack:"v"`
	}
	if msgpack.Unmarshal(b, &r) != nil {
		return nil
	}
	return r.V
}

// stacks returns the stacks of the handler's and its tracked goroutines.
// Runner goroutines outlive attempts (runner.go): when the handler has
// returned by the end of the dump, the dump may show the runner's next
// attempt instead, so it is dropped.
func (c *control) stacks() []byte {
	gid := c.gid.Load()
	if gid == 0 {
		return nil
	}
	ids := map[uint64]bool{gid: true}
	c.mu.Lock()
	for id := range c.tr.gids {
		ids[id] = true
	}
	c.mu.Unlock()
	out := goroutineStacks(ids)
	if c.gid.Load() != gid {
		return nil
	}
	return out
}
