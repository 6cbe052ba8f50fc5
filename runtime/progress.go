package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

const (
	// progressEvery is the least time between two progress writes of one
	// attempt; reports in between are coalesced into the next write.
	progressEvery = time.Second
	// progressStateMax bounds a progress report's state.
	progressStateMax = 1 << 10
)

// progressState is an attempt's latest progress report and its writing.
type progressState struct {
	percent float64
	state   string
	dirty   bool      // not yet written
	last    time.Time // last write began
	writing bool
	armed   bool // a delayed write is scheduled
}

// ReportProgress records what the handler is doing, percent done (0 to
// 100) and a free-form state of at most 1 KiB, for operators: it shows on
// the job (flow.JobInfo.Tracking) while the attempt runs. It counts as
// progress for the stuck watch (Options.StuckNoProgress).
//
// Writes are fence-checked and throttled: at most one per second per
// attempt goes to Redis, in the caller's goroutine; reports in between
// only update the pending value, written by a later call or in the
// background a second after the last write. A write that finds the lease
// gone cancels the attempt and returns ErrLeaseLost; one whose ctx ended
// returns an error that is both ctx's cause (ErrShutdown on the
// attempt's context once the shutdown window ended) and ctx's error.
func (a *Attempt) ReportProgress(ctx context.Context, percent float64, state string) error {
	c := &a.ctl
	if c.w == nil {
		return ErrNoAttempt
	}
	if math.IsNaN(percent) || percent < 0 || percent > 100 {
		return fmt.Errorf("%w: progress percent %v is not in 0..100", ErrInvalidArgument, percent)
	}
	if len(state) > progressStateMax {
		return fmt.Errorf("%w: progress state of %d bytes is longer than %d", ErrInvalidArgument, len(state), progressStateMax)
	}
	if c.gone.Load() {
		return ErrLeaseLost
	}
	if a.settled.Load() {
		return ErrAttemptDone
	}
	now := c.w.clk.Now()
	c.mu.Lock()
	c.progress = now
	p := &c.rep
	p.percent, p.state, p.dirty = percent, state, true
	if p.writing || now.Sub(p.last) < progressEvery {
		if !p.writing && !p.armed {
			p.armed = true
			a.flushLater(context.WithoutCancel(ctx), p.last.Add(progressEvery).Sub(now))
		}
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if err := a.flushProgress(ctx); err != nil {
		if ctx.Err() != nil && !errors.Is(err, ErrLeaseLost) {
			return ctxEnded(ctx) // as ExtendLease's
		}
		return err
	}
	return nil
}

// flushLater writes the pending report after d.
func (a *Attempt) flushLater(ctx context.Context, d time.Duration) {
	a.ctl.w.clk.AfterFunc(d, func() {
		a.ctl.mu.Lock()
		a.ctl.rep.armed = false
		a.ctl.mu.Unlock()
		if err := a.flushProgress(ctx); err != nil {
			a.ctl.w.log.Warn("writing a progress report failed", "job", a.ID, "err", err)
		}
	})
}

// flushProgress writes the pending report, if any.
func (a *Attempt) flushProgress(ctx context.Context) error {
	c := &a.ctl
	p := &c.rep
	c.mu.Lock()
	if !p.dirty || p.writing || a.settled.Load() {
		c.mu.Unlock()
		return nil
	}
	p.writing, p.dirty, p.last = true, false, c.w.clk.Now()
	rep := store.ProgressReport{Lease: a.storeLease(), Percent: p.percent, State: p.state}
	c.mu.Unlock()

	written, err := c.w.st.Progress(ctx, a.ref.Partition, []store.ProgressReport{rep})

	c.mu.Lock()
	p.writing = false
	if p.dirty && !p.armed { // reported while writing
		p.armed = true
		a.flushLater(context.WithoutCancel(ctx), progressEvery)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if !written[0] {
		a.lose()
		return ErrLeaseLost
	}
	c.w.sig.Progress.Signal(testsignal.Job{Worker: a.Worker, JobID: a.ID})
	return nil
}
