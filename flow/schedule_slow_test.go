package flow_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// slowHook makes every Redis call (command or pipeline) of a client take
// d of the fake clock: a Redis (or network) that answers slowly, as the
// store clock (the client's Clock) and the scheduler's clock both see.
type slowHook struct {
	e *schedEnv
	d time.Duration
}

func (h slowHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h slowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.e.clk.Advance(h.d)
		return err
	}
}

func (h slowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.e.clk.Advance(h.d)
		return err
	}
}

// TestSlowRedisTicksEnqueued: on a Redis that takes 8 s per call (loaded,
// or far away), a lone scheduler still enqueues its ticks, late: a claim
// and the calls before its enqueue take longer than the hand-over delay,
// but a scheduler leaves ticks to be handed over only when it has held
// them past an hour (claimFresh). A review found a first version of that
// rule, at 15 s, left every tick pending in every round.
func TestSlowRedisTicksEnqueued(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1) // the schedule starts at t0
	stop()

	slow := redis.NewClient(&redis.Options{Addr: e.rdb.(*redis.Client).Options().Addr})
	t.Cleanup(func() { slow.Close() })
	slow.AddHook(slowHook{e: e, d: 8 * time.Second})
	c, err := flow.NewClient(slow, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk})
	testkit.Must(t, err)
	s, err := flow.NewScheduler(c, flow.SchedulerOptions{Logger: testkit.Quiet})
	testkit.Must(t, err)
	testkit.Must(t, s.Add(sc))
	for range 20 { // 20 rounds, a minute of the fake clock or more apart
		e.clk.Advance(time.Minute)
		testkit.Must(t, flow.Round(s, "m"))
	}
	if got := e.queued(); len(got) == 0 {
		t.Fatalf("after 20 rounds over %v of ticks every minute, no tick was enqueued (all left pending)",
			e.clk.Now().Sub(t0))
	}
}

// advanceOnce advances the fake clock by d once, as the first script call
// whose arguments contain "claim" (the schedule's claim) returns: a test
// that moves its fake clock while a scheduler's round is under way.
type advanceOnce struct {
	e    *schedEnv
	d    time.Duration
	done bool
}

func (h *advanceOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *advanceOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if !h.done {
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok && s == "claim" {
					h.done = true
					h.e.clk.Advance(h.d)
				}
			}
		}
		return err
	}
}

func (h *advanceOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFakeClockMovedDuringRound: a test whose fake clock moves 20 s while
// a round is between its claim and its enqueue (the clock is the client's
// Clock, store time and the scheduler's both) gets the tick's job at once.
// A review found the first version of the rule above left it pending
// until the clock moved past the hand-over delay.
func TestFakeClockMovedDuringRound(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()

	rdb := redis.NewClient(&redis.Options{Addr: e.rdb.(*redis.Client).Options().Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(&advanceOnce{e: e, d: 20 * time.Second})
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk})
	testkit.Must(t, err)
	s, err := flow.NewScheduler(c, flow.SchedulerOptions{Logger: testkit.Quiet})
	testkit.Must(t, err)
	testkit.Must(t, s.Add(sc))
	e.clk.Advance(time.Minute)
	testkit.Must(t, flow.Round(s, "m"))
	testkit.Must(t, flow.Round(s, "m")) // a second round, the clock not moved
	if got := e.queued(); len(got) != 1 {
		t.Fatalf("tick 1 due, claimed, the clock moved 20 s during the round: queued %v, want its job", got)
	}
}
