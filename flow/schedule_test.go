package flow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestScheduleFleet: three workers run the same every-minute schedule for
// 60 simulated minutes; every scheduler looks at every tick, and exactly
// one job runs per tick.
func TestScheduleFleet(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	reg := flow.NewRegistry()
	var (
		mu     sync.Mutex
		ran    = map[string]int{}
		pushed = map[string]bool{} // run under a lease an enqueue pushed
	)
	if err := flow.Register(reg, func(_ context.Context, job *flow.Job[report]) error {
		mu.Lock()
		ran[job.ID]++
		pushed[job.ID] = testkit.PushedLease(job.LeaseID)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	sig := testsignal.NewWorker() // of the three workers
	for range 3 {
		s := e.newScheduler(flow.Schedule{Name: "minutely", Cron: "* * * * *", Args: report{Team: "ops"}})
		testkit.StartWorker(t, e.rdb, reg, runtime.Options{
			Namespace: e.ns, Clock: e.clk, Periodic: s, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
		}, sig)
	}
	e.wait("minutely", 3)
	for m := 1; m <= 60; m++ {
		sig.Idle.Drain()
		e.clk.Advance(time.Minute)
		e.wait("minutely", 3)
		// Wait for the tick's job to be acked, not only run: a job still
		// running when the clock next moves a minute is past its 30 s
		// lease, and the maintenance pass at minute 60 would reap it and
		// run it again.
		done := sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.State == flow.StateCompleted })
		// And, when the tick woke the workers, for every one to be idle
		// again, its claim answered: the store's time is the fake clock,
		// read when a call is sent, so a claim sent before the next
		// Advance and run after the next tick's enqueue (a loaded
		// machine) would lease that job from the minute before, its lease
		// over at once. A job pushed to an idle worker's offer woke none.
		mu.Lock()
		woke := !pushed[done.JobID]
		mu.Unlock()
		idle := map[string]bool{}
		for woke && len(idle) < 3 {
			idle[sig.Idle.Wait(t).Worker] = true
		}
	}
	want := map[string]int{}
	for _, id := range tickIDs("minutely", minutes(seq(1, 60)...)...) {
		want["default:0:"+id] = 1
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Fatalf("jobs run (-want +got):\n%s", diff)
	}
	// Every job is acked: 60 completed, nothing else.
	stats, err := e.rdb.HGetAll(context.Background(), keys.Partition{NS: e.ns, Queue: "default"}.Stats()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for state, n := range stats {
		if want := map[bool]string{true: "60", false: "0"}[state == flow.StateCompleted]; n != want {
			t.Errorf("%s: %s jobs, want %s", state, n, want)
		}
	}
}

// TestScheduleMissed: a minutely schedule ran tick 1, then no scheduler
// ran for 10 minutes. When one comes back at tick 11 (on time) or at 11:30
// (with a 10s grace, so tick 11 is missed too), each missed-run policy
// enqueues what it promises, and the schedule goes on with tick 12.
func TestScheduleMissed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		policy flow.MissedPolicy
		grace  time.Duration
		back   time.Duration
		want   []int
	}{
		{"skip", flow.SkipMissed, 0, 11 * time.Minute, []int{1, 11, 12}},
		{"once", flow.RunOnce, 0, 11 * time.Minute, []int{1, 10, 11, 12}},
		{"catch up 3", flow.CatchUp(3), 0, 11 * time.Minute, []int{1, 8, 9, 10, 11, 12}},
		{"catch up 20", flow.CatchUp(20), 0, 11 * time.Minute, seq(1, 12)},
		{"skip, late", flow.SkipMissed, 10 * time.Second, 11*time.Minute + 30*time.Second, []int{1, 12}},
		{"once, late", flow.RunOnce, 10 * time.Second, 11*time.Minute + 30*time.Second, []int{1, 11, 12}},
		{"catch up 3, late", flow.CatchUp(3), 10 * time.Second, 11*time.Minute + 30*time.Second, []int{1, 9, 10, 11, 12}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSchedEnv(t)
			sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}, Missed: tc.policy, Grace: tc.grace}
			stop := e.run(e.newScheduler(sc))
			e.wait("m", 1)
			e.clk.Advance(time.Minute)
			e.wait("m", 1)
			stop() // the outage
			e.clk.Advance(tc.back - time.Minute)
			e.run(e.newScheduler(sc))
			e.wait("m", 1)
			e.clk.Advance(12*time.Minute - tc.back)
			e.wait("m", 1)
			if diff := cmp.Diff(tickIDs("m", minutes(tc.want...)...), e.queued()); diff != "" {
				t.Fatalf("jobs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScheduleAbandonedTick: a scheduler claimed tick 1 and died before
// enqueueing it; another enqueues it once the claim is abandoned.
func TestScheduleAbandonedTick(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	claimTickOne(t, e, sc)
	e.run(e.newScheduler(sc))
	e.wait("m", 1)
	if q := e.queued(); len(q) != 0 {
		t.Fatalf("queued before the claim is abandoned: %v", q)
	}
	e.clk.Advance(time.Minute)
	e.wait("m", 1)
	if diff := cmp.Diff(tickIDs("m", minutes(1, 2)...), e.queued()); diff != "" {
		t.Fatalf("jobs (-want +got):\n%s", diff)
	}
}

// TestScheduleStalledSchedulerResumes: a scheduler claimed tick 1 and
// stalled; another enqueued the abandoned tick, and its job ran and was
// deleted. The first then resumes and enqueues the tick it claimed: the
// tick is remembered, and its job does not run again.
func TestScheduleStalledSchedulerResumes(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stalled, _ := claimTickOne(t, e, sc)
	e.clk.Advance(time.Minute) // the claim is abandoned
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	if diff := cmp.Diff(tickIDs("m", minutes(1, 2)...), e.queued()); diff != "" {
		t.Fatalf("jobs after the takeover (-want +got):\n%s", diff)
	}
	id := "default:0:" + tickIDs("m", minutes(1)...)[0]
	if err := admin.New(e.client()).DeleteJob(context.Background(), id); err != nil {
		t.Fatal(err) // as if it ran and was discarded
	}
	if err := flow.EnqueueTicks(stalled, "m", at(time.Minute)); err != nil {
		t.Fatalf("the stalled scheduler's enqueue: %v", err)
	}
	if diff := cmp.Diff(tickIDs("m", minutes(2)...), e.queued()); diff != "" {
		t.Fatalf("jobs after the stalled scheduler resumed (-want +got):\n%s", diff)
	}
	if _, err := admin.New(e.client()).Job(context.Background(), id); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("tick 1's job: %v, want ErrNotFound", err)
	}
}

// TestScheduleTicksAcrossShrink: a scheduler whose client read its queue's
// layout (3 partitions) enqueues six ticks after the queue shrank to 2.
// The ticks placed on partition 2, which went away, are refused there and
// enqueued again by the new count in the same round: each tick once, all
// confirmed. Before, those ticks stayed pending, and enqueued again all
// together by the new count, a tick already added to partition 0 or 1
// could be added a second time to the other.
func TestScheduleTicksAcrossShrink(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	three, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk, Partitions: map[string]int{"default": 3}})
	testkit.Must(t, err)
	r, err := three.Enqueue(ctx, report{}) // registers the queue with 3 partitions
	testkit.Must(t, err)
	adm := admin.New(three)
	testkit.Must(t, adm.DeleteJob(ctx, r.ID))
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	s := e.newScheduler(sc)
	testkit.Must(t, flow.EnqueueTicks(s, "m", at(0))) // its client reads the layout of 3
	ids := func() []string {
		var out []string
		for i := range 3 {
			locals, err := e.rdb.LRange(ctx, keys.Partition{NS: e.ns, Queue: "default", Index: i}.Available(0), 0, -1).Result()
			testkit.Must(t, err)
			for _, l := range locals {
				out = append(out, fmt.Sprintf("default:%d:%s", i, l))
			}
		}
		return out
	}
	for _, id := range ids() {
		testkit.Must(t, adm.DeleteJob(ctx, id))
	}
	other, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Clock: e.clk})
	testkit.Must(t, err)
	testkit.Must(t, admin.New(other).PauseQueue(ctx, "default"))
	testkit.Must(t, admin.New(other).ResizeQueue(ctx, "default", 2))

	ticks := []time.Time{at(time.Minute), at(2 * time.Minute), at(3 * time.Minute), at(4 * time.Minute), at(5 * time.Minute), at(6 * time.Minute)}
	if err := flow.EnqueueTicks(s, "m", ticks...); err != nil {
		t.Fatalf("enqueueing ticks across the shrink: %v", err)
	}
	got := ids()
	if len(got) != len(ticks) {
		t.Fatalf("%d jobs for %d ticks: %v", len(got), len(ticks), got)
	}
}

// TestScheduleOperatorAPI: list, pause, trigger and resume schedules.
func TestScheduleOperatorAPI(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	c := e.client()
	ctx := context.Background()
	if err := admin.New(c).PauseSchedule(ctx, "reports"); !errors.Is(err, flow.ErrScheduleNotFound) {
		t.Fatalf("pause before any scheduler ran: %v", err)
	}
	if _, err := admin.New(c).TriggerSchedule(ctx, "reports"); !errors.Is(err, flow.ErrScheduleNotFound) {
		t.Fatalf("trigger before any scheduler ran: %v", err)
	}
	if err := admin.New(c).ResumeSchedule(ctx, "no spaces"); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("resume with a bad name: %v", err)
	}
	e.run(e.newScheduler(
		flow.Schedule{Name: "reports", Cron: "*/5 * * * *", TimeZone: "Europe/Paris", Args: report{Team: "a"}, Missed: flow.CatchUp(2)},
		flow.Schedule{Name: "heartbeat", Every: time.Hour, Args: report{Team: "hb"}, Opts: []flow.EnqueueOption{flow.WithQueue("hb")}},
	))
	e.wait("reports", 1)
	e.wait("heartbeat", 1)
	list := func(want ...admin.ScheduleInfo) {
		t.Helper()
		got, err := admin.New(c).Schedules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("schedules (-want +got):\n%s", diff)
		}
	}
	hb := admin.ScheduleInfo{Name: "heartbeat", Every: time.Hour, Missed: "skip", Grace: flow.DefaultGrace, Queue: "hb", Kind: "report", NextRun: at(time.Hour)}
	rep := admin.ScheduleInfo{
		Name: "reports", Cron: "*/5 * * * *", TimeZone: "Europe/Paris", Missed: "catch-up 2", Grace: flow.DefaultGrace,
		Queue: "default", Kind: "report", NextRun: at(5 * time.Minute),
	}
	list(hb, rep)

	e.clk.Advance(5 * time.Minute)
	e.wait("reports", 1)
	rep.LastRun, rep.NextRun = at(5*time.Minute), at(10*time.Minute)
	list(hb, rep)

	// Paused: tick 10 is not enqueued, a trigger is.
	if err := admin.New(c).PauseSchedule(ctx, "reports"); err != nil {
		t.Fatal(err)
	}
	rep.Paused, rep.NextRun = true, time.Time{}
	list(hb, rep)
	e.clk.Advance(5 * time.Minute)
	e.wait("reports", 1)
	var triggered []string
	for range 2 {
		res, err := admin.New(c).TriggerSchedule(ctx, "reports")
		if err != nil || res.Duplicate {
			t.Fatalf("trigger: %+v, %v", res, err)
		}
		info, err := c.Job(ctx, res.ID)
		if err != nil || info.Kind != "report" {
			t.Fatalf("triggered job %s: %+v, %v", res.ID, info, err)
		}
		var args report
		if err := info.DecodeArgs(&args); err != nil || args.Team != "a" {
			t.Fatalf("triggered job args %+v, %v", args, err)
		}
		triggered = append(triggered, strings.TrimPrefix(res.ID, "default:0:"))
	}
	if triggered[0] == triggered[1] || !strings.HasPrefix(triggered[0], "sched:reports:trigger:") {
		t.Fatalf("triggered IDs %v", triggered)
	}
	// under a key of the caller's, the same trigger made again adds nothing
	once, err := admin.New(c).TriggerScheduleOnce(ctx, "reports", "k1")
	if err != nil || once.ID != "default:0:sched:reports:trigger:k1" {
		t.Fatalf("trigger once: %+v, %v", once, err)
	}
	if again, err := admin.New(c).TriggerScheduleOnce(ctx, "reports", "k1"); err != nil || again.ID != once.ID {
		t.Fatalf("the same trigger again: %+v, %v; want %s found", again, err, once.ID)
	}
	if _, err := admin.New(c).TriggerScheduleOnce(ctx, "reports", "a b"); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("a trigger key with a space: %v, want ErrInvalid", err)
	}

	// Resumed at 12: tick 15 is the next, the paused ticks never run.
	e.clk.Advance(2 * time.Minute)
	e.wait("reports", 1)
	if err := admin.New(c).ResumeSchedule(ctx, "reports"); err != nil {
		t.Fatal(err)
	}
	rep.Paused, rep.NextRun = false, at(15*time.Minute)
	list(hb, rep)
	e.clk.Advance(3 * time.Minute)
	e.wait("reports", 1)
	want := append(append(tickIDs("reports", 5*time.Minute), append(triggered, "sched:reports:trigger:k1")...), tickIDs("reports", 15*time.Minute)...)
	if diff := cmp.Diff(want, e.queued()); diff != "" {
		t.Fatalf("jobs (-want +got):\n%s", diff)
	}
	if got, err := admin.New(c).Schedule(ctx, "reports"); err != nil || !got.LastRun.Equal(at(15*time.Minute)) {
		t.Fatalf("schedule: %+v, %v", got, err)
	}
}

// TestScheduleBadInput: bad schedules are *ScheduleError at registration,
// naming the field, and matching the sentinel errors.
func TestScheduleBadInput(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	s := e.newScheduler(flow.Schedule{Name: "taken", Every: time.Minute, Args: report{}})
	ok := flow.Schedule{Name: "ok", Cron: "* * * * *", Args: report{}}
	with := func(f func(*flow.Schedule)) flow.Schedule {
		sc := ok
		f(&sc)
		return sc
	}
	cases := []struct {
		name  string
		sc    flow.Schedule
		field string
		want  error
	}{
		{"invalid cron", with(func(s *flow.Schedule) { s.Cron = "61 * * * *" }), "Cron", flow.ErrInvalid},
		{"cron with seconds", with(func(s *flow.Schedule) { s.Cron = "0 * * * * *" }), "Cron", flow.ErrInvalid},
		{"cron that never fires", with(func(s *flow.Schedule) { s.Cron = "0 0 31 2 *" }), "Cron", flow.ErrInvalid},
		{"zero interval", with(func(s *flow.Schedule) { s.Cron = "" }), "Every", flow.ErrInvalid},
		{"negative interval", with(func(s *flow.Schedule) { s.Cron, s.Every = "", -time.Minute }), "Every", flow.ErrInvalid},
		{"fractional interval", with(func(s *flow.Schedule) { s.Cron, s.Every = "", time.Millisecond }), "Every", flow.ErrInvalid},
		{"cron and interval", with(func(s *flow.Schedule) { s.Every = time.Minute }), "Every", flow.ErrInvalid},
		{"unknown time zone", with(func(s *flow.Schedule) { s.TimeZone = "Europe/Atlantis" }), "TimeZone", flow.ErrInvalid},
		{"empty name", with(func(s *flow.Schedule) { s.Name = "" }), "Name", flow.ErrInvalid},
		{"name with a colon", with(func(s *flow.Schedule) { s.Name = "a:b" }), "Name", flow.ErrInvalid},
		{"name added twice", with(func(s *flow.Schedule) { s.Name = "taken" }), "Name", flow.ErrInvalid},
		{"catch up 0", with(func(s *flow.Schedule) { s.Missed = flow.CatchUp(0) }), "Missed", flow.ErrInvalid},
		{"catch up too many", with(func(s *flow.Schedule) { s.Missed = flow.CatchUp(flow.MaxCatchUp + 1) }), "Missed", flow.ErrInvalid},
		{"negative grace", with(func(s *flow.Schedule) { s.Grace = -time.Second }), "Grace", flow.ErrInvalid},
		{"grace below MinGrace", with(func(s *flow.Schedule) { s.Grace = 5 * time.Millisecond }), "Grace", flow.ErrInvalid},
		{"WithID", with(func(s *flow.Schedule) { s.Opts = []flow.EnqueueOption{flow.WithID("x")} }), "Opts", flow.ErrInvalid},
		{"WithRunAt", with(func(s *flow.Schedule) { s.Opts = []flow.EnqueueOption{flow.WithRunAt(time.Now().Add(time.Hour))} }), "Opts", flow.ErrInvalid},
		{"WithDeadline", with(func(s *flow.Schedule) { s.Opts = []flow.EnqueueOption{flow.WithDeadline(time.Now().Add(time.Hour))} }), "Opts", flow.ErrInvalid},
		{"bad option", with(func(s *flow.Schedule) { s.Opts = []flow.EnqueueOption{flow.WithPriority(99)} }), "Opts", flow.ErrInvalid},
		{"nil args", with(func(s *flow.Schedule) { s.Args = nil }), "Args", flow.ErrInvalid},
		{"unknown kind", with(func(s *flow.Schedule) { s.Args = unregistered{} }), "Args", flow.ErrUnknownKind},
	}
	for _, tc := range cases {
		err := s.Add(tc.sc)
		var se *flow.ScheduleError
		if !errors.Is(err, tc.want) || !errors.As(err, &se) || se.Field != tc.field || se.Name != tc.sc.Name {
			t.Errorf("%s: %v (%#v), want %v in field %s", tc.name, err, se, tc.want, tc.field)
		}
	}
	if err := s.Add(ok); err != nil {
		t.Fatalf("a good schedule: %v", err)
	}
	// a nil option is none, as Enqueue takes it (a conditional option
	// left unset), not a mistake
	withNil := with(func(s *flow.Schedule) { s.Name, s.Opts = "with-nil", []flow.EnqueueOption{nil, flow.WithPriority(3)} })
	if err := s.Add(withNil); err != nil {
		t.Fatalf("a schedule with a nil option: %v", err)
	}
	least := with(func(s *flow.Schedule) { s.Name, s.Grace = "least-grace", flow.MinGrace })
	if err := s.Add(least); err != nil {
		t.Fatalf("a schedule with MinGrace: %v", err)
	}
	if _, err := flow.NewScheduler(nil, flow.SchedulerOptions{}); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("nil client: %v", err)
	}
}
