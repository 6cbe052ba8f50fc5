package flow

import (
	"context"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// ScheduleInfo is a periodic schedule as the schedulers last published it,
// with its state.
type ScheduleInfo struct {
	Name     string
	Cron     string        // the cron expression, or
	Every    time.Duration // the interval
	TimeZone string
	Missed   string // the missed-run policy: "skip", "once" or "catch-up N"
	Grace    time.Duration
	Queue    string
	Kind     string
	Paused   bool
	// LastRun is the latest tick enqueued; zero if none was yet.
	LastRun time.Time
	// NextRun is the next tick; zero while paused.
	NextRun time.Time
}

// Schedules lists the schedules any scheduler has run in the client's
// namespace, by name.
func (c *Client) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	recs, err := c.st.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	now := c.now()
	out := make([]ScheduleInfo, len(recs))
	for i, r := range recs {
		out[i] = scheduleInfo(r, now)
	}
	return out, nil
}

// Schedule reads one schedule; ErrScheduleNotFound if no scheduler has run
// it.
func (c *Client) Schedule(ctx context.Context, name string) (ScheduleInfo, error) {
	if !validName(name) {
		return ScheduleInfo{}, fmt.Errorf("%w: schedule name %q", ErrInvalid, name)
	}
	r, err := c.st.Schedule(ctx, name)
	if err != nil {
		return ScheduleInfo{}, err
	}
	return scheduleInfo(r, c.now()), nil
}

// PauseSchedule stops enqueueing a schedule's ticks, across the fleet,
// until ResumeSchedule. Pausing a paused schedule does nothing.
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	if !validName(name) {
		return fmt.Errorf("%w: schedule name %q", ErrInvalid, name)
	}
	return c.st.PauseSchedule(ctx, name)
}

// ResumeSchedule restarts a paused schedule with its next tick: the ticks
// that fell while it was paused are not run (they are not missed ticks).
// Resuming a schedule that is not paused does nothing.
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	if !validName(name) {
		return fmt.Errorf("%w: schedule name %q", ErrInvalid, name)
	}
	return c.st.ResumeSchedule(ctx, name)
}

// TriggerSchedule enqueues a schedule's job now, outside its ticks, even
// while it is paused, under a fresh ID (sched:<name>:trigger:<random>), so
// every call adds one job. The job is the one the schedulers last
// published: same kind, arguments and options.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (Enqueued, error) {
	if !validName(name) {
		return Enqueued{}, fmt.Errorf("%w: schedule name %q", ErrInvalid, name)
	}
	r, err := c.st.Schedule(ctx, name)
	if err != nil {
		return Enqueued{}, err
	}
	var job store.NewJob
	if err := msgpack.Unmarshal(r.Template, &job); err != nil || job.Kind == "" {
		return Enqueued{}, fmt.Errorf("%w: schedule %q: job template: %v", ErrMalformed, name, err)
	}
	job.Local, job.Generated = "sched:"+name+":trigger:"+keys.NewLocal(), true
	ref := keys.Ref{Partition: c.st.Partition(r.Queue, c.plan.partition(r.Queue, job.Local, nil)), Local: job.Local}
	res, err := c.st.Enqueue(ctx, ref.Partition, []store.NewJob{job})
	if err != nil {
		return Enqueued{}, err
	}
	e := enqueued(ref, res[0])
	return e, e.Err
}

func (c *Client) now() time.Time {
	if c.opts.Clock != nil {
		return c.opts.Clock.Now()
	}
	return time.Now()
}

func scheduleInfo(r store.ScheduleRecord, now time.Time) ScheduleInfo {
	info := ScheduleInfo{
		Name: r.Name, Cron: r.Cron, Every: r.Every, TimeZone: r.TimeZone, Missed: r.Missed, Grace: r.Grace,
		Queue: r.Queue, Kind: r.Kind, Paused: r.Paused, LastRun: r.Ran,
	}
	if tm, _, err := parseTiming(r.Cron, r.Every, r.TimeZone); err == nil && !r.Paused {
		info.NextRun = tm.next(laterOf(now, r.Last))
	}
	return info
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
