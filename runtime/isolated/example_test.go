//go:build unix

package isolated_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// A worker that runs the echo jobs in child processes, on an embedded
// Redis. The child program is this test binary: its TestMain calls
// isolated.Main with a registry holding the echo handler (see
// childRegistry), as a child program's main function would.
func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	echo, err := isolated.Handler(isolated.Command{Path: os.Args[0], Args: []string{childArg}}, isolated.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	handlers := isolated.Handlers{Kinds: map[string]runtime.Handler{echoArgs{}.Kind(): echo}}
	client, _ := flow.NewClient(rdb, flow.ClientOptions{})
	worker, _ := runtime.NewWorker(rdb, handlers, runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- worker.Run(ctx) }()
	defer func() {
		stop()
		<-stopped
	}()

	res, _ := client.Enqueue(context.Background(), echoArgs{Msg: "hello"})
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for range poll.C { // until the child has answered
		info, _ := client.Job(context.Background(), res.ID)
		if info.State == flow.StateCompleted {
			var out echoResult
			_ = info.DecodeResult(&out)
			fmt.Println(info.State, out.Msg, out.Env)
			return
		}
	}
	// Output: completed echo: hello []
}
