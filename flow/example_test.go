package flow_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

type Greet struct{ Name string }

func (Greet) Kind() string { return "greet" }

// A handler registered for a job type, a client that enqueues it and a
// worker that runs it, on an embedded Redis.
func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	done := make(chan struct{})
	reg := flow.NewRegistry()
	_ = flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[Greet]) (string, error) {
		defer close(done)
		return "hello, " + job.Args.Name, nil
	})
	client, _ := flow.NewClient(rdb, flow.ClientOptions{Registry: reg})
	worker, _ := runtime.NewWorker(rdb, reg, runtime.Options{Logger: slog.New(slog.DiscardHandler)})

	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- worker.Run(ctx) }()

	res, _ := client.Enqueue(context.Background(), Greet{Name: "ada"}, flow.WithID("greet-ada"))
	<-done
	stop()
	<-stopped // graceful shutdown: the job's ack has landed

	info, _ := client.Job(context.Background(), res.ID)
	var greeting string
	_ = info.DecodeResult(&greeting)
	fmt.Println(res.ID, info.State, greeting)
	// Output: default:0:greet-ada completed hello, ada
}
