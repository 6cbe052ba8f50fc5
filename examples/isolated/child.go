package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/step"
)

// Resize makes a thumbnail in two durable steps. With DieOnce, the first
// child to run it is killed (SIGKILL, as by the OOM killer) between the
// steps; the next one skips the checkpointed decode.
type Resize struct {
	Image   int
	DieOnce bool
}

func (Resize) Kind() string { return "resize" }

// Segfault crashes its child with SIGSEGV, as a broken C library would.
type Segfault struct{}

func (Segfault) Kind() string { return "segfault" }

// Exit calls os.Exit from deep inside a library.
type Exit struct{ Code int }

func (Exit) Kind() string { return "exit" }

// Tally runs in the worker's own process.
type Tally struct{ N int }

func (Tally) Kind() string { return "tally" }

// childRegistry holds the handlers that run in child processes. They are
// ordinary flow handlers.
func childRegistry() *flow.Registry {
	reg := flow.NewRegistry()
	say := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "  [child %d] %s\n", os.Getpid(), fmt.Sprintf(format, a...))
	}
	must(flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[Resize]) (string, error) {
		pixels, err := step.Run(ctx, "decode", func(ctx context.Context) (int, error) {
			say("resize %d: decoding (attempt with %d crashes before)", job.Args.Image, job.CrashAttempt)
			return 640 * 480, nil
		})
		if err != nil {
			return "", err
		}
		if job.Args.DieOnce && job.CrashAttempt == 0 {
			say("resize %d: killed after step decode", job.Args.Image)
			p, _ := os.FindProcess(os.Getpid())
			_ = p.Kill()
			select {}
		}
		return step.Run(ctx, "encode", func(ctx context.Context) (string, error) {
			say("resize %d: encoding %d pixels", job.Args.Image, pixels)
			return fmt.Sprintf("thumb-%d.png", job.Args.Image), nil
		})
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[Segfault]) error {
		say("segfault: about to crash (%d crashes so far)", job.CrashAttempt)
		segfault()
		return nil
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[Exit]) error {
		say("exit: calling os.Exit(%d) (%d crashes so far)", job.Args.Code, job.CrashAttempt)
		os.Exit(job.Args.Code)
		return nil
	}))
	return reg
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
