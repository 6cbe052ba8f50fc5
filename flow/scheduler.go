package flow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// Scheduler enqueues the jobs of periodic schedules. Run it beside every
// worker (runtime.Options.Periodic runs it for the worker's lifetime) or on
// its own: any number of schedulers, in any number of processes, may run
// the same schedules, and no leader is needed. For every due tick they
// agree, through one atomic script on the schedule's state in Redis, on
// which scheduler enqueues it, and the job's ID (sched:<name>:<tick>)
// makes a repeated enqueue a no-op while the job is kept, and after it is
// deleted until a day after the tick's first enqueue (its marker). A
// scheduler that dies or stalls after claiming a tick and before
// confirming it leaves the tick pending; another enqueues it 30 to 90
// seconds later, and the enqueue that comes second adds nothing (it looks
// for the job on every partition of the queue first, and every enqueue of
// a tick places it by the queue's layout read just before: a queue that
// grew meanwhile would place it elsewhere). A scheduler that finds it has
// held its ticks longer than an hour when it is about to enqueue them
// (its process stopped meanwhile) leaves them to be handed over instead:
// another has enqueued them since, and a day later nothing would tell its
// enqueue from a first one. Only an outage of every scheduler longer than
// a day, between the tick's enqueue and its confirmation, with the job
// deleted in between, runs a tick twice; or a shrink of its queue in that
// time that retired the partition holding the job; or a scheduler that
// stalls, before its enqueue reaches Redis, for as long as it takes
// another scheduler to take the tick (30 seconds at least) and the queue
// to grow, or (after that check) for a day.
//
// Ticks are decided in store time (Redis TIME, or the client's Clock), so
// schedulers with skewed clocks still agree. A new schedule's first tick is
// the first one after a scheduler first runs it. Ticks missed while no
// scheduler ran are handled by the schedule's MissedPolicy.
//
// Schedules are paused, resumed, listed and triggered with the Client, and
// deleted, once removed from every scheduler's code, with
// admin.Client.DeleteSchedule.
type Scheduler struct {
	c   *Client
	log *slog.Logger
	clk runtime.Clock

	mu     sync.Mutex
	scheds []*schedule
	// onStep, when set (tests), is called after each scheduling round of
	// a schedule with the store time it ran at (zero after an error).
	onStep func(name string, now time.Time)
}

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	// Logger receives the scheduler's logs. Default slog.Default().
	Logger *slog.Logger
}

// schedule is a validated Schedule, ready to run.
type schedule struct {
	Schedule
	timing
	def store.ScheduleDef
}

// abandonAfter is how long a claimed tick may stay unconfirmed before
// another scheduler enqueues it; maxWait is the longest a scheduler sleeps
// between two looks at a schedule, so it finds abandoned ticks and
// notices resumed schedules.
const (
	abandonAfter = 30 * time.Second
	maxWait      = time.Minute
	retryWait    = time.Second
	// boundedWindows is the most windows before now that one round
	// decides: the windows of owed ticks a schedule keeps, and the one
	// before a pause
	boundedWindows = store.OwedMax + 1
)

var _ runtime.Periodic = (*Scheduler)(nil)

// NewScheduler returns a scheduler that enqueues with c and sleeps on c's
// Clock.
func NewScheduler(c *Client, opts SchedulerOptions) (*Scheduler, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	clk := runtime.WallClock()
	if c.opts.Clock != nil {
		clk = c.opts.Clock
	}
	return &Scheduler{c: c, log: opts.Logger, clk: clk}, nil
}

// Add validates and registers a schedule. Bad input is a *ScheduleError:
// an invalid name, a name already added, an invalid cron expression, a
// zero, negative or fractional interval, an unknown time zone, a bad
// missed-run policy or grace, or arguments and options that Enqueue would
// reject. Schedules added while the scheduler runs start with its next Run.
func (s *Scheduler) Add(sc Schedule) error {
	bad := func(field string, err error) error {
		return &ScheduleError{Name: sc.Name, Field: field, Err: err}
	}
	if !ValidScheduleName(sc.Name) {
		return bad("Name", fmt.Errorf("%w: 1 to 64 letters, digits, '_', '.' or '-'", ErrInvalid))
	}
	tm, field, err := parseTiming(sc.Cron, sc.Every, sc.TimeZone)
	if err != nil {
		return bad(field, err)
	}
	if p := sc.Missed; p.mode == missedCatchUp && (p.n < 1 || p.n > MaxCatchUp) {
		return bad("Missed", fmt.Errorf("%w: CatchUp(%d) not in 1..%d", ErrInvalid, p.n, MaxCatchUp))
	}
	if sc.Grace == 0 {
		sc.Grace = DefaultGrace
	}
	if sc.Grace < MinGrace {
		return bad("Grace", fmt.Errorf("%w: grace %s is below MinGrace (%s)", ErrInvalid, sc.Grace, MinGrace))
	}
	var o enqueueOptions
	for _, opt := range sc.Opts {
		if opt == nil { // none to apply, as Enqueue takes it
			continue
		}
		if err := opt(&o); err != nil {
			return bad("Opts", err)
		}
	}
	if o.id != "" {
		return bad("Opts", fmt.Errorf("%w: WithID: the schedule names its jobs", ErrInvalid))
	}
	// a fixed time would be every tick's: all run at once when it comes,
	// or all archived unrun once it has passed
	if !o.runAt.IsZero() {
		return bad("Opts", fmt.Errorf("%w: WithRunAt: a fixed time for every tick's job (WithDelay delays each)", ErrInvalid))
	}
	if !o.deadline.IsZero() {
		return bad("Opts", fmt.Errorf("%w: WithDeadline: a fixed deadline for every tick's job (WithTimeout bounds each attempt)", ErrInvalid))
	}
	sc.Opts = slices.Clip(slices.Clone(sc.Opts))
	// checked only: the ticks' jobs are placed when they are enqueued
	check := &planner{st: s.c.st, known: s.c.plan.known, maxPayload: s.c.plan.maxPayload, maxAttempts: s.c.plan.maxAttempts, layouts: store.OfflineLayouts(s.c.st)}
	id := tickID(sc.Name, time.Unix(0, 0))
	d, err := check.draft(Item{Args: sc.Args, Opts: sc.Opts}, nil, WithID(id))
	if err != nil {
		return bad("Args", err)
	}
	pj, err := check.place(context.Background(), d, nil)
	if err != nil {
		return bad("Args", err)
	}
	sj := store.ScheduleJob{NewJob: pj.job, Placed: true}
	if d.key != id { // placed by a key of its own, not its ID
		sj.Route = d.key
	}
	tmpl, err := msgpack.Marshal(&sj)
	if err != nil {
		return bad("Args", fmt.Errorf("%w: encoding the job: %v", ErrInvalid, err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.scheds {
		if x.Name == sc.Name {
			return bad("Name", fmt.Errorf("%w: added twice", ErrInvalid))
		}
	}
	s.scheds = append(s.scheds, &schedule{Schedule: sc, timing: tm, def: store.ScheduleDef{
		Name: sc.Name, Cron: sc.Cron, Every: sc.Every, TimeZone: sc.TimeZone, Missed: sc.Missed.String(),
		Grace: sc.Grace, Queue: pj.ref.Queue, Kind: pj.job.Kind, Template: tmpl,
	}})
	return nil
}

// Run enqueues the schedules' jobs until ctx is cancelled, then returns
// nil. Redis errors are logged and retried.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	scheds := slices.Clone(s.scheds)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sc := range scheds {
		wg.Go(func() { s.loop(ctx, sc) })
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// loop runs one schedule: a round at every tick, and at least every
// maxWait.
func (s *Scheduler) loop(ctx context.Context, sc *schedule) {
	published := false
	fails := 0
	for ctx.Err() == nil {
		if !published {
			published = s.c.st.PublishSchedule(ctx, sc.def) == nil
		}
		now, wait, err := s.safeRound(ctx, sc)
		if errors.Is(err, store.ErrNoSchedule) {
			// deleted (admin.Client.DeleteSchedule forced, or by hand):
			// published again at once, and started afresh from now
			published = s.c.st.PublishSchedule(ctx, sc.def) == nil
			if published {
				now, wait, err = s.safeRound(ctx, sc)
			}
			if errors.Is(err, store.ErrNoSchedule) {
				published = false // deleted again meanwhile
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fails++
			wait = min(retryWait<<min(fails-1, 5), 30*time.Second)
			s.log.Warn("scheduling failed", "schedule", sc.Name, "err", err, "retry_in", wait)
		} else {
			fails = 0
		}
		t := s.clk.NewTimer(wait)
		if f := s.onStep; f != nil {
			f(sc.Name, now)
		}
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
	}
}

// safeRound is round with a panic made its error. Every tick's enqueue
// runs the user's code again (its arguments' Kind, defaults and encoding:
// Add ran them once), here on the scheduler's goroutine, where a panic
// would end the process. A round that panicked after its claim leaves the
// ticks pending, to be enqueued as abandoned by a later round.
func (s *Scheduler) safeRound(ctx context.Context, sc *schedule) (now time.Time, wait time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			now, wait, err = time.Time{}, 0, fmt.Errorf("schedule %s: a panic enqueueing its job: %v", sc.Name, p)
		}
	}()
	return s.round(ctx, sc)
}

// round looks at a schedule once: it enqueues abandoned ticks, then the
// due ticks the missed-run policy keeps if it wins the claim on them. It
// returns the store time and how long to wait for the next round.
func (s *Scheduler) round(ctx context.Context, sc *schedule) (time.Time, time.Duration, error) {
	// three claims lost to another scheduler end the round; the windows
	// decided before now's (owed ticks, those before a pause: each claim
	// of one ends it, and there are boundedWindows at most) do not count
	for moved, windows := 0, 0; moved < 3 && windows <= boundedWindows; {
		synced := s.clk.Now()
		st, err := s.c.st.SyncSchedule(ctx, sc.Name, abandonAfter)
		if err != nil {
			return time.Time{}, 0, err
		}
		if len(st.Abandoned) > 0 {
			s.log.Warn("enqueueing ticks another scheduler claimed but did not confirm", "schedule", sc.Name, "ticks", len(st.Abandoned))
			if err := s.enqueueAbandoned(ctx, sc, st.Abandoned, synced); err != nil {
				return st.Now, 0, err
			}
		}
		wait := maxWait
		if next := sc.next(st.Now); !next.IsZero() {
			wait = min(next.Sub(st.Now), maxWait)
		}
		if !st.Until.After(st.Last) {
			return st.Now, wait, nil // paused, with every tick before the pause decided
		}
		// Until is before Now while the ticks due before a pause are
		// undecided: the whole window up to it is decided now, so that
		// the next sync (once resumed) drops the ticks of the pause
		ticks, last := plan(sc.timing, sc.Missed, sc.Grace, append([][2]time.Time{{st.Last, st.Until}}, st.Later...), st.Now)
		if st.Until.Before(st.Now) {
			last = st.Until
		} else if last.IsZero() {
			return st.Now, wait, nil
		}
		claimed := s.clk.Now()
		res, err := s.c.st.ClaimTicks(ctx, sc.Name, st.Last, last, ticks)
		if err != nil {
			return st.Now, 0, err
		}
		switch res {
		case store.Claimed:
			if dropped := tickCount(sc.timing, st.Last, last) - len(ticks); dropped > 0 {
				s.log.Info("missed ticks dropped", "schedule", sc.Name, "dropped", dropped, "policy", sc.Missed.String())
			}
			if err := s.enqueue(ctx, sc, ticks, claimed); err != nil || !st.Until.Before(st.Now) {
				return st.Now, wait, err
			}
			windows++
			continue // the next sync hands out the window after this one
		case store.ClaimPaused:
			return st.Now, wait, nil
		}
		moved++ // another scheduler moved first: look again
	}
	return time.Time{}, retryWait, nil
}

// enqueue adds the jobs of claimed ticks, then confirms them. A tick whose
// ID is taken by a different job (the schedule's arguments changed), or
// whose job Redis's data keeps from being added (ErrMalformed: a corrupt
// key that every try would meet), is logged and confirmed; on any other
// error (Redis unreachable, a partition refused) the ticks stay pending.
//
// The queue's layout is read afresh first (one round trip per window of
// ticks): a scheduler that stalled after its claim while the queue grew
// would otherwise place the ticks by the count its process read at start,
// where another scheduler that took them as abandoned placed them by the
// new one, and each tick's job would be added twice.
func (s *Scheduler) enqueue(ctx context.Context, sc *schedule, ticks []time.Time, claimed time.Time) error {
	if len(ticks) == 0 {
		return nil
	}
	if _, err := s.c.placing(ctx, sc.def.Queue); err != nil && !errors.Is(err, ErrQueueNotFound) {
		return err // a queue not registered yet is registered by the enqueue
	}
	return s.enqueuePlaced(ctx, sc, ticks, claimed)
}

// claimFresh is how long after a scheduler sent the call that gave it
// ticks (its claim, or the sync that handed them over) it still enqueues
// them: far less than the day a tick's marker keeps its enqueue known
// (lib.lua TICK_KEEP), far more than a round's calls take on a slow
// Redis, or a fake clock moves within one.
const claimFresh = time.Hour

// enqueuePlaced is enqueue once the queue's layout has been read. since
// is when the call that gave the scheduler the ticks was sent, by its
// clock. Ticks held longer than claimFresh (the process stalled: stopped,
// starved, paused by a debugger) are not enqueued but left pending, for
// the next sync to hand them over as abandoned, to this scheduler or
// another, which then looks for their jobs first: another scheduler may
// have taken them meanwhile, enqueued them and confirmed them, and after
// a day (the tick's marker gone with its job) nothing would tell a late
// enqueue from a first one. Only a stall after this check and before the
// enqueue reaches Redis, or one the clock does not see (a virtual machine
// whose clocks stood still), passes it. A shorter stall is safe as it
// was: the enqueue meets the job or its marker.
func (s *Scheduler) enqueuePlaced(ctx context.Context, sc *schedule, ticks []time.Time, since time.Time) error {
	if len(ticks) == 0 {
		return nil
	}
	if held := s.heldFor(since); held > claimFresh {
		s.log.Warn("ticks held too long to enqueue (the process stalled): left for a scheduler to take as abandoned",
			"schedule", sc.Name, "ticks", len(ticks), "held", held)
		return nil
	}
	items := make([]Item, len(ticks))
	for i, t := range ticks {
		items[i] = Item{Args: sc.Args, Opts: append(slices.Clip(sc.Opts), asTick(tickID(sc.Name, t)))}
	}
	res, err := s.c.EnqueueMany(ctx, items...)
	if err != nil && res != nil {
		res, err = s.enqueueResized(ctx, items, res, err)
	}
	// a tick whose job the store refused for what it holds (ErrMalformed)
	// or as bad input (ErrInvalid: its delay makes it due at or after its
	// deadline) is refused again at every try: logged and confirmed below
	if err != nil && (res == nil || slices.ContainsFunc(res, func(r Enqueued) bool {
		return r.Err != nil && !errors.Is(r.Err, ErrConflict) && !errors.Is(r.Err, ErrMalformed) && !errors.Is(r.Err, ErrInvalid)
	})) {
		return err
	}
	var ran time.Time // the latest tick whose job was added
	for i, r := range res {
		switch {
		case r.Err == nil:
			if ticks[i].After(ran) {
				ran = ticks[i]
			}
		case errors.Is(r.Err, ErrConflict):
			s.log.Error("a tick's job ID is taken by another job", "schedule", sc.Name, "tick", ticks[i], "id", r.ID, "err", r.Err)
		case errors.Is(r.Err, ErrInvalid):
			s.log.Error("a tick's job was refused as bad input: it could never run", "schedule", sc.Name, "tick", ticks[i], "id", r.ID, "err", r.Err)
		case r.Err != nil:
			s.log.Error("a tick's job was not added: its data in Redis is corrupt", "schedule", sc.Name, "tick", ticks[i], "id", r.ID, "err", r.Err)
		}
	}
	return s.c.st.AckTicks(ctx, sc.Name, ticks, ran)
}

// enqueueAbandoned enqueues the ticks another scheduler claimed and did
// not confirm. It may have enqueued them before it died, placed by the
// queue's partition count then: after the queue grew, the count now
// places a tick elsewhere, where its ID would meet nothing and its job
// would run twice; so after it shrank, where the tick's partition is
// retired. Ticks whose job (or its enqueue's marker) is on any partition
// of the queue now, or one retired since, are confirmed as they are; the others are
// enqueued. A queue no client registered yet has no partitions to look
// in: its ticks are enqueued.
func (s *Scheduler) enqueueAbandoned(ctx context.Context, sc *schedule, ticks []time.Time, synced time.Time) error {
	parts, err := s.c.placing(ctx, sc.def.Queue)
	if errors.Is(err, ErrQueueNotFound) {
		return s.enqueuePlaced(ctx, sc, ticks, synced)
	}
	if err != nil {
		return err
	}
	// and the partitions an earlier layout named, where a tick enqueued
	// before a shrink (and its marker) may still be
	former, _, err := s.c.st.PartitionsBeyond(ctx, s.c.opts.Namespace, sc.def.Queue, len(parts))
	if err != nil {
		return err
	}
	parts = append(parts, former...)
	locals := make([]string, len(ticks))
	for i, t := range ticks {
		locals[i] = tickID(sc.Name, t)
	}
	found, err := s.c.st.EnqueuedIn(ctx, parts, locals)
	if err != nil {
		return err
	}
	var rest, done []time.Time
	for i, t := range ticks {
		if _, ok := found[locals[i]]; ok {
			done = append(done, t)
		} else {
			rest = append(rest, t)
		}
	}
	if len(done) > 0 {
		if err := s.c.st.AckTicks(ctx, sc.Name, done, done[len(done)-1]); err != nil {
			return err
		}
	}
	return s.enqueuePlaced(ctx, sc, rest, synced)
}

// heldFor is how long ago since was by the scheduler's clock: by the
// wall clock too when that says longer (a monotonic clock may leave out
// a system's suspension).
func (s *Scheduler) heldFor(since time.Time) time.Duration {
	now := s.clk.Now()
	return max(now.Sub(since), now.Round(0).Sub(since.Round(0)))
}

// enqueueResized enqueues again, once, the items of res that a shrink of
// their queue refused (their partition went away; the client has read the
// new count), and merges what it answers into res, with err if any other
// item failed. Left pending instead, the ticks would be enqueued again all
// together by the new count, and a tick added here to a partition that
// count does not choose would be added a second time.
func (s *Scheduler) enqueueResized(ctx context.Context, items []Item, res []Enqueued, err error) ([]Enqueued, error) {
	var again []int
	for i, r := range res {
		var lm *sluicetype.LayoutMismatchError
		if errors.As(r.Err, &lm) && lm.Resized {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res, err
	}
	sub := make([]Item, len(again))
	for k, i := range again {
		sub[k] = items[i]
	}
	res2, err2 := s.c.EnqueueMany(ctx, sub...)
	if res2 == nil {
		return res, err2
	}
	for k, i := range again {
		res[i] = res2[k]
	}
	if slices.ContainsFunc(res, func(r Enqueued) bool { return r.Err != nil }) {
		return res, cmp.Or(err2, err)
	}
	return res, nil
}

// asTick gives a tick's job the ID id, and has its enqueue remembered
// (store.NewJob.Tick) so that a repeat adds nothing once it is deleted.
func asTick(id string) EnqueueOption {
	return func(o *enqueueOptions) error {
		if err := WithID(id)(o); err != nil {
			return err
		}
		o.tick = true
		return nil
	}
}

// tickCount counts the ticks in (after, upTo], up to MaxCatchUp+1, for
// logging.
func tickCount(tm timing, after, upTo time.Time) int {
	return len(tm.recent(after, upTo, MaxCatchUp+1))
}
