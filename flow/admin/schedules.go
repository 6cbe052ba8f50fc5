package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
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
	// NextRun is the next tick after store time (Redis TIME, not the
	// caller's clock); zero while paused.
	NextRun time.Time
}

// Schedules lists the schedules any scheduler has run in the client's
// namespace, by name. A schedule whose record is corrupt (a key of
// another type, a field that does not decode) hides none of the others:
// it is left out, and named in the error returned with them (Unreadable
// reads it; ErrMalformed). Any other error comes with no schedule.
func (c *Client) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	recs, err := c.b.Store.Schedules(ctx)
	if _, only := store.EntryErrors(err); !only {
		return nil, err
	}
	now, terr := c.b.Store.Time(ctx) // the ticks are decided in store time
	if terr != nil {
		return nil, terr
	}
	out := make([]ScheduleInfo, len(recs))
	for i, r := range recs {
		out[i] = c.scheduleInfo(r, now)
	}
	return out, err
}

// Schedule reads one schedule; ErrScheduleNotFound if no scheduler has run
// it.
func (c *Client) Schedule(ctx context.Context, name string) (ScheduleInfo, error) {
	if !flow.ValidScheduleName(name) {
		return ScheduleInfo{}, fmt.Errorf("%w: schedule name %q", flow.ErrInvalid, name)
	}
	r, err := c.b.Store.Schedule(ctx, name)
	if err != nil {
		return ScheduleInfo{}, err
	}
	now, err := c.b.Store.Time(ctx) // the ticks are decided in store time
	if err != nil {
		return ScheduleInfo{}, err
	}
	return c.scheduleInfo(r, now), nil
}

// PauseSchedule stops enqueueing a schedule's ticks, across the fleet,
// until ResumeSchedule: the ticks after the pause (store time). A tick due
// before it that no scheduler had enqueued yet is still enqueued, by the
// schedule's missed-run policy when it is late. Pausing a paused schedule
// does nothing.
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	if !flow.ValidScheduleName(name) {
		return fmt.Errorf("%w: schedule name %q", flow.ErrInvalid, name)
	}
	return c.b.Store.PauseSchedule(ctx, name)
}

// ResumeSchedule restarts a paused schedule with its next tick: the ticks
// that fell while it was paused are not run (they are not missed ticks).
// The ticks due before the pause that no scheduler had enqueued are
// still decided, as those of earlier pauses still owed are (32 pauses'
// worth at most, with no scheduler running between them), by the
// schedule's missed-run policy, which counts them with the ticks missed
// since as one outage (RunOnce: one job for them all).
// Resuming a schedule that is not paused does nothing.
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	if !flow.ValidScheduleName(name) {
		return fmt.Errorf("%w: schedule name %q", flow.ErrInvalid, name)
	}
	return c.b.Store.ResumeSchedule(ctx, name)
}

// DeleteScheduleOptions configure DeleteSchedule.
type DeleteScheduleOptions struct {
	// Force deletes the schedule even while a scheduler still runs it
	// (ErrScheduleRunning otherwise). That scheduler publishes it again at
	// its next round and starts it afresh: its state is lost (a pause,
	// ticks owed since a pause, ticks claimed and not confirmed), and its
	// next tick is the first after that round.
	Force bool
}

// DeleteSchedule deletes a schedule's record: its definition and state
// (paused, last tick) and its ticks claimed by a scheduler and not yet
// confirmed, atomically, so that `Schedules` no longer lists it. Delete
// a schedule once it is removed from every scheduler's code: a scheduler
// that still runs it would publish it again at its next round.
//
// A schedule a scheduler synced less than ScheduleRunningWithin ago (store
// time; a scheduler syncs each of its schedules at least once a minute,
// paused or not), or that no scheduler of this release ever synced (one
// of an older release, which does not record its syncs, may still run
// it), is refused with ErrScheduleRunning, and nothing is deleted, unless
// o.Force. An unknown name is ErrScheduleNotFound; a record or pending
// ticks key of another type than a hash is ErrMalformed naming the
// schedule; neither writes anything. The same call re-sent after its
// reply was lost (go-redis does) is answered what its first run answered:
// nil, not ErrScheduleNotFound.
//
// The jobs the schedule's ticks (and triggers) enqueued are left alone:
// they run, or are deleted, as any job. A schedule of the same name run
// again later starts afresh, its first tick the first after its first
// round; a tick's job ID (sched:<name>:<tick>) enqueued in the day before
// is still not enqueued twice.
func (c *Client) DeleteSchedule(ctx context.Context, name string, o DeleteScheduleOptions) error {
	if !flow.ValidScheduleName(name) {
		return fmt.Errorf("%w: schedule name %q", flow.ErrInvalid, name)
	}
	return c.b.Store.DeleteSchedule(ctx, name, o.Force)
}

// TriggerSchedule enqueues a schedule's job now, outside its ticks, even
// while it is paused, under a fresh ID (sched:<name>:trigger:<random>), so
// every call adds one job. The job is the one the schedulers last
// published: same kind, arguments and options, placed on the queue's
// partitions as the ticks' jobs are (so a unique schedule's trigger meets
// the job holding its key: Duplicate). When the enqueue fails, the result
// still carries that ID: Redis may have added the job and lost the reply,
// so look it up before triggering again.
//
// The queue's layout is read from Redis on this call, never registered:
// a schedule whose queue no client or worker has registered yet (its
// scheduler registers it at its first tick) is refused with
// ErrQueueNotFound, and nothing is written.
//
// A template published by a scheduler of an older release does not say
// how the ticks are placed: on a queue of more than one partition its
// trigger is refused with ErrScheduleOutdated (nothing is enqueued) until
// a scheduler of this release publishes the schedule again.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (flow.Enqueued, error) {
	return c.trigger(ctx, name, "")
}

// TriggerScheduleOnce is TriggerSchedule under the ID
// sched:<name>:trigger:<key>: the same call made again (a form posted
// twice, a retry after an error) finds the job it added while that job is
// kept, and adds none. key is 1 to 64 letters, digits, '_' or '-'
// (ErrInvalid otherwise); give a fresh one per intended trigger.
func (c *Client) TriggerScheduleOnce(ctx context.Context, name, key string) (flow.Enqueued, error) {
	if !names.Valid(key, 64, "_-") {
		return flow.Enqueued{}, fmt.Errorf("%w: trigger key %s: 1 to 64 letters, digits, '_' or '-'", flow.ErrInvalid, names.Quote(key))
	}
	return c.trigger(ctx, name, key)
}

// trigger enqueues schedule name's job under the trigger key key, or a
// fresh one when key is "".
func (c *Client) trigger(ctx context.Context, name, key string) (flow.Enqueued, error) {
	if !flow.ValidScheduleName(name) {
		return flow.Enqueued{}, fmt.Errorf("%w: schedule name %q", flow.ErrInvalid, name)
	}
	r, err := c.b.Store.Schedule(ctx, name)
	if err != nil {
		return flow.Enqueued{}, err
	}
	var sj store.ScheduleJob
	if err := msgpack.Unmarshal(r.Template, &sj); err != nil || sj.Kind == "" {
		return flow.Enqueued{}, fmt.Errorf("%w: schedule %q: job template: %v", flow.ErrMalformed, name, err)
	}
	// read as every operator call reads a layout: from the registry, on
	// every call (a resize is seen at once), never registered (the
	// operator's tool has no partition count of the application's)
	lay, err := c.b.Layouts.Lookup(ctx, r.Queue)
	if errors.Is(err, ErrQueueNotFound) {
		return flow.Enqueued{}, fmt.Errorf("%w: schedule %q enqueues there, and nothing registered the queue yet "+
			"(its first tick, or the first producer or worker using it, does): nothing was enqueued", err, name)
	}
	if err != nil {
		return flow.Enqueued{}, err
	}
	route, known := sj.Routed()
	if !known && lay.Partitions > 1 {
		// a partition key is not kept in the job, and goes before its
		// unique key and hold: no placement can be derived but on a
		// queue where there is no choice
		return flow.Enqueued{}, fmt.Errorf("%w: schedule %q: its template does not say how its ticks are placed on the %d partitions of queue %q; run its Scheduler on this release, which publishes it again when it starts, then trigger again",
			ErrScheduleOutdated, name, lay.Partitions, r.Queue)
	}
	job := sj.NewJob
	job.Local, job.Generated = "sched:"+name+":trigger:"+key, false // the caller's key: a repeat finds its job
	if key == "" {
		job.Local, job.Generated = "sched:"+name+":trigger:"+keys.NewLocal(), true
	}
	e, err := c.b.Enqueue(ctx, lay, route, job)
	return e.(flow.Enqueued), err
}

func (c *Client) scheduleInfo(r store.ScheduleRecord, now time.Time) ScheduleInfo {
	info := ScheduleInfo{
		Name: r.Name, Cron: r.Cron, Every: r.Every, TimeZone: r.TimeZone, Missed: r.Missed, Grace: r.Grace,
		Queue: r.Queue, Kind: r.Kind, Paused: r.Paused, LastRun: r.Ran,
	}
	if !r.Paused {
		info.NextRun = c.b.NextRun(r, now)
	}
	return info
}
