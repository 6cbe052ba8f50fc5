package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/runtime"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1 // including a job whose state refuses the command
	exitUsage    = 2 // a bad command line: unknown command or flag, bad value, malformed ID
	exitNotFound = 3 // the job, schedule, dead effect or queue named does not exist
)

// env is what a run needs from the outside world; tests replace it.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	clock          runtime.Clock // the client's clock; nil: Redis TIME and the wall clock
	// stdoutTTY and stderrTTY: the stream is a terminal (queues stats
	// --watch redraws in place, redrive draws a progress bar)
	stdoutTTY, stderrTTY bool
	// connected, when set, sees the Redis client a command connected
	// with (a test adds its hooks)
	connected func(redis.UniversalClient)
}

func main() {
	redis.SetLogger(quiet{}) // the errors reach the user through the calls
	// Ctrl-C or a service manager's SIGTERM ends a long-running command
	// (web, queues stats --watch) with exit 0
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		stdoutTTY: terminal(os.Stdout), stderrTTY: terminal(os.Stderr)})
	stop()
	os.Exit(code)
}

func terminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// quiet drops go-redis's own log lines.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// run runs one command line and returns its exit code.
func run(ctx context.Context, args []string, e env) int {
	c := &cli{env: e, args: args}
	defer func() {
		if c.rdb != nil {
			c.rdb.Close()
		}
	}()
	root := c.root()
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	return c.fail(cmd, err)
}
