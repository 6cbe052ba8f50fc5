package flow_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// Periodic jobs: schedules are registered on a Scheduler, checked at once,
// and run by every worker. However many workers run them, each tick is
// enqueued once.
func ExampleScheduler() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	reg := flow.NewRegistry()
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[Greet]) error { return nil })
	client, _ := flow.NewClient(rdb, flow.ClientOptions{Registry: reg})
	sched, _ := flow.NewScheduler(client, flow.SchedulerOptions{})

	err := sched.Add(flow.Schedule{
		Name: "morning-greeting", Cron: "0 9 * * 1-5", TimeZone: "Europe/Paris",
		Args: Greet{Name: "team"}, Missed: flow.RunOnce,
	})
	fmt.Println(err)
	err = sched.Add(flow.Schedule{Name: "typo", Cron: "0 25 * * *", Args: Greet{}})
	var se *flow.ScheduleError
	fmt.Println(errors.Is(err, flow.ErrInvalid), errors.As(err, &se) && se.Field == "Cron")

	// Each worker runs the scheduler while it runs.
	_, err = runtime.NewWorker(rdb, reg, runtime.Options{Periodic: sched, Logger: slog.New(slog.DiscardHandler)})
	fmt.Println(err)
	// Output:
	// <nil>
	// true true
	// <nil>
}
