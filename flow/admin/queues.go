package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// PauseQueue stops every worker from claiming jobs of queue (all its
// partitions) until ResumeQueue. Jobs already running go on; enqueueing,
// lease renewal, reaping of expired leases, promotion of due jobs and
// retention sweeps go on too. The pause is a flag per partition in Redis,
// so it holds across the fleet and across restarts. Pausing a paused queue
// does nothing.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.setPaused(ctx, queue, true)
}

// ResumeQueue lets workers claim jobs of a paused queue again and wakes
// the idle ones. Resuming a queue that is not paused does nothing.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return c.setPaused(ctx, queue, false)
}

func (c *Client) setPaused(ctx context.Context, queue string, paused bool) error {
	if !runtime.ValidQueue(queue) {
		return fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	parts, err := c.b.Partitions(ctx, queue)
	if err != nil {
		return err
	}
	var retired bool
	for _, p := range parts {
		_, err := c.b.Store.SetPaused(ctx, p, paused)
		if errors.Is(err, store.ErrRetired) {
			retired = true
		} else if err != nil {
			return err
		}
	}
	if retired && !paused {
		return c.resumeRetired(ctx, queue)
	}
	return nil // a retired partition is as good as paused
}

// resumeRetired resumes the partitions of queue's layout that a shrink
// retired and has not recorded a layout without: a shrink under way, whose
// outcome its caller did not learn, or whose tool died. It takes the
// queue's resize lock from whoever holds it, which cancels a shrink under
// way (it records nothing without the lock), and reads the layout again
// under it: a partition that a recorded shrink took away stays retired.
func (c *Client) resumeRetired(ctx context.Context, queue string) error {
	st := c.b.Store
	token := keys.NewLocal()
	if _, err := st.LockResize(ctx, queue, token, true); err != nil {
		return err
	}
	defer func() { _ = st.UnlockResize(context.WithoutCancel(ctx), queue, token) }()
	lay, err := st.ReadLayout(ctx, queue)
	if err != nil {
		return err
	}
	if err := c.takeBackRetired(ctx, lay); err != nil {
		return err
	}
	for _, p := range lay.Parts(c.b.Namespace) {
		if _, err := st.SetPaused(ctx, p, false); err != nil {
			return err
		}
	}
	c.b.Layouts.Put(lay)
	return nil
}

// MaxStatsWindow is the longest QueueStats window: the per-minute
// counters are kept two hours.
const MaxStatsWindow = 2 * time.Hour

// QueueStats describes a queue: its depth per state and, over a recent
// window, its throughput and run times.
type QueueStats struct {
	Queue      string
	Partitions int
	Paused     int              // partitions paused (PauseQueue pauses all)
	Depth      map[string]int64 // jobs per state; every state is present
	// Window is the span the rates cover: whole minutes up to the current
	// one (which is partial).
	Window time.Duration
	// Finished counts the jobs that reached each terminal state in the
	// window (including those deleted at once, with DiscardCompleted).
	Finished map[string]int64
	// CompletedPerMinute is Finished[completed] over the window.
	CompletedPerMinute float64
	// RunTime summarises how long the attempts that completed in the
	// window ran, from claim to completion (store time).
	RunTime RunTimes
}

// RunTimes are run time percentiles. They come from histogram buckets a
// quarter octave wide, so each is the upper bound of its bucket: at most
// 19% above the true value.
type RunTimes struct {
	Count         int64
	P50, P90, P99 time.Duration
}

// QueueStats reads a queue's stats over window (0 for the default, 5
// minutes; else whole minutes, at least one and at most MaxStatsWindow:
// another is ErrInvalid), in a few pipelined round trips: the per-state counters
// the scripts keep, each partition's paused flag and its per-minute
// counters (which lua/lib.lua keeps as jobs finish), for the minutes of
// store time (Redis TIME, not the caller's clock). It reads no job.
func (c *Client) QueueStats(ctx context.Context, queue string, window time.Duration) (QueueStats, error) {
	if !runtime.ValidQueue(queue) {
		return QueueStats{}, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	if window == 0 {
		window = 5 * time.Minute
	}
	// the counters are per minute: a window of another length would be
	// read as whole minutes and labelled as what was asked
	if window < time.Minute || window > MaxStatsWindow || window%time.Minute != 0 {
		return QueueStats{}, fmt.Errorf("%w: stats window %s: want whole minutes in 1m..%s", flow.ErrInvalid, window, MaxStatsWindow)
	}
	mins := int64(window / time.Minute)
	parts, err := c.b.Partitions(ctx, queue)
	if err != nil {
		return QueueStats{}, err
	}
	qs := QueueStats{
		Queue: queue, Partitions: len(parts), Depth: map[string]int64{}, Finished: map[string]int64{},
		Window: time.Duration(mins) * time.Minute,
	}
	counts, err := c.b.Store.StateCounts(ctx, parts)
	if err != nil {
		return qs, err
	}
	for _, s := range flow.States {
		qs.Depth[s] = 0
	}
	for _, m := range counts {
		for s, n := range m {
			qs.Depth[s] += n
		}
	}
	paused, err := c.b.Store.PausedFlags(ctx, parts)
	if err != nil {
		return qs, err
	}
	for _, p := range paused {
		if p {
			qs.Paused++
		}
	}
	at, err := c.b.Store.Time(ctx) // the minutes are counted in store time
	if err != nil {
		return qs, err
	}
	now := at.UnixMilli() / 60000
	minutes, err := c.b.Store.Minutes(ctx, parts, now-mins+1, now)
	if err != nil {
		return qs, err
	}
	buckets := map[int]int64{}
	for _, m := range minutes {
		for s, n := range m.Finished {
			qs.Finished[s] += n
		}
		for b, n := range m.RunTimes {
			buckets[b] += n
		}
	}
	qs.CompletedPerMinute = float64(qs.Finished[flow.StateCompleted]) / float64(mins)
	qs.RunTime = runTimes(buckets)
	return qs, nil
}

// runTimes reads percentiles off run time buckets (store.Minute).
func runTimes(buckets map[int]int64) RunTimes {
	var rt RunTimes
	bs := make([]int, 0, len(buckets))
	for b, n := range buckets {
		bs = append(bs, b)
		rt.Count += n
	}
	if rt.Count == 0 {
		return rt
	}
	sort.Ints(bs)
	at := func(q float64) time.Duration {
		rank := int64(math.Ceil(q * float64(rt.Count)))
		var seen int64
		for _, b := range bs {
			seen += buckets[b]
			if seen >= rank {
				return bucketTop(b)
			}
		}
		return bucketTop(bs[len(bs)-1])
	}
	rt.P50, rt.P90, rt.P99 = at(0.50), at(0.90), at(0.99)
	return rt
}

// bucketTop is the upper bound of run time bucket b: 2^((b+1)/4) - 1 ms.
func bucketTop(b int) time.Duration {
	ms := math.Pow(2, float64(b+1)/4) - 1
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Microsecond)
}
