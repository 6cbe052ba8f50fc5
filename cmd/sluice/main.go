package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/runtime"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
)

// env is what a run needs from the outside world; tests replace it.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	clock          runtime.Clock // the client's clock; nil: Redis TIME and the wall clock
}

func main() {
	redis.SetLogger(quiet{}) // the errors reach the user through the calls
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// quiet drops go-redis's own log lines.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// cli is one invocation: its global settings and, once connected, its
// client.
type cli struct {
	env
	redisURL   string
	namespace  string
	json       bool
	partitions partitionsFlag
	// retainCancelled is jobs cancel --retain (0: the client's default)
	retainCancelled time.Duration
	rdb             redis.UniversalClient
	client          *admin.Client
}

// usageError is a bad command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

const usage = `usage: sluice [--redis URL] [--namespace NS] [--partitions Q=N,...] [--json] <command>

commands:
  jobs list --queue Q --state S [--kind K] [--limit N] [--cursor C]
  jobs show ID | jobs cancel ID [--retain D] | jobs delete ID
  jobs reroute ID --to WORKER [--after D | --fail-after D] | jobs reroute ID --unpin
  jobs signal ID NAME [--data JSON] [--key K]
  redrive ID... | redrive --queue Q [--state S] [--kind K] [--reason R] [--after T] [--before T] [--dry-run]
  release ID...
  queues pause Q | queues resume Q | queues stats [Q...] [--window D]
  workers
  schedules list | schedules pause NAME | schedules resume NAME | schedules trigger NAME
  effects list --queue Q [--limit N] | effects redrive ID...
  bench [-scenario S,...] [-topology single,cluster] [-cluster] [flags]   (bench -h lists the flags)

exit codes: 0 ok, 1 error, 2 usage, 3 not found
`

func run(ctx context.Context, args []string, e env) int {
	c := &cli{env: e}
	defer func() {
		if c.rdb != nil {
			c.rdb.Close()
		}
	}()
	err := c.dispatch(ctx, args)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(c.stdout, usage)
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "sluice: %s\n\n%s", ue.msg, usage)
		return exitUsage
	case errors.Is(err, flow.ErrNotFound), errors.Is(err, flow.ErrScheduleNotFound), errors.Is(err, admin.ErrNoDeadEffect):
		fmt.Fprintln(c.stderr, "sluice:", strings.TrimPrefix(err.Error(), "sluice: "))
		return exitNotFound
	case errors.Is(err, flow.ErrInvalid): // a malformed ID or name: the command line's fault
		fmt.Fprintln(c.stderr, "sluice:", strings.TrimPrefix(err.Error(), "sluice: "))
		return exitUsage
	case errors.Is(err, errExit3):
		return exitNotFound
	case errors.Is(err, errExit1):
		return exitError
	}
	fmt.Fprintln(c.stderr, "sluice:", err)
	return exitError
}

// errExit1 and errExit3 end a run whose output already said what failed.
var (
	errExit1 = errors.New("failed")
	errExit3 = errors.New("not found")
)

func (c *cli) dispatch(ctx context.Context, args []string) error {
	fs := c.flags("sluice")
	if err := fs.Parse(args); err != nil { // up to the command
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usagef("no command")
	}
	cmd, rest := rest[0], rest[1:]
	sub := ""
	if len(rest) > 0 {
		sub = rest[0]
	}
	switch {
	case cmd == "jobs" && sub == "list":
		return c.jobsList(ctx, rest[1:])
	case cmd == "jobs" && sub == "show":
		return c.jobsShow(ctx, rest[1:])
	case cmd == "jobs" && (sub == "cancel" || sub == "delete"):
		return c.jobsChange(ctx, sub, rest[1:])
	case cmd == "jobs" && sub == "reroute":
		return c.jobsReroute(ctx, rest[1:])
	case cmd == "jobs" && sub == "signal":
		return c.jobsSignal(ctx, rest[1:])
	case cmd == "redrive" || cmd == "release":
		return c.redrive(ctx, cmd, rest)
	case cmd == "queues" && (sub == "pause" || sub == "resume"):
		return c.queuesPause(ctx, sub, rest[1:])
	case cmd == "queues" && sub == "stats":
		return c.queuesStats(ctx, rest[1:])
	case cmd == "workers":
		return c.workers(ctx, rest)
	case cmd == "schedules":
		return c.schedules(ctx, sub, rest)
	case cmd == "effects":
		return c.effects(ctx, sub, rest)
	case cmd == "bench":
		return c.bench(ctx, rest)
	case cmd == "help":
		return flag.ErrHelp
	}
	return usagef("unknown command %q", strings.TrimSpace(cmd+" "+sub))
}

// flags is a flag set with the global flags, for the top level and every
// command (so they may come before or after it).
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.redisURL, "redis", c.redisURL, "Redis URL")
	fs.StringVar(&c.namespace, "namespace", c.namespace, "Sluice namespace")
	fs.BoolVar(&c.json, "json", c.json, "print JSON")
	fs.Var(&c.partitions, "partitions", "partitions per queue: Q=N,...")
	return fs
}

// parse parses flags wherever they are among the arguments and returns the
// others in order.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		if args[0] == "--" {
			return append(rest, args[1:]...), nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

// connect opens the client once: the URL and namespace from the flags or
// the environment, partitions from the flag or the workers' registry.
func (c *cli) connect(ctx context.Context) (*admin.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	url := firstOf(c.redisURL, c.getenv("REDIS_URL"), "redis://localhost:6379")
	ns := firstOf(c.namespace, c.getenv("SLUICE_NAMESPACE"), "sluice")
	rdb, err := flow.Connect(url)
	if err != nil {
		return nil, usagef("--redis: %v", err)
	}
	c.rdb = rdb
	opts := flow.ClientOptions{Namespace: ns, Clock: c.clock, Partitions: map[string]int(c.partitions), RetainCancelled: c.retainCancelled}
	if len(c.partitions) == 0 {
		probe, err := flow.NewClient(rdb, opts)
		if err != nil {
			return nil, usagef("--namespace: %v", err)
		}
		ws, err := admin.New(probe).Workers(ctx)
		if err != nil {
			return nil, err
		}
		opts.Partitions = map[string]int{}
		for _, w := range ws {
			for q, n := range w.Queues {
				opts.Partitions[q] = max(opts.Partitions[q], n)
			}
		}
	}
	fc, err := flow.NewClient(rdb, opts)
	if err != nil {
		return nil, usagef("%v", err)
	}
	c.client = admin.New(fc)
	return c.client, nil
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// partitionsFlag is --partitions Q=N,...
type partitionsFlag map[string]int

func (p *partitionsFlag) String() string {
	var parts []string
	for q, n := range *p {
		parts = append(parts, q+"="+strconv.Itoa(n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (p *partitionsFlag) Set(s string) error {
	if *p == nil {
		*p = partitionsFlag{}
	}
	for _, kv := range strings.Split(s, ",") {
		q, n, ok := strings.Cut(kv, "=")
		v, err := strconv.Atoi(n)
		if !ok || q == "" || err != nil || v < 1 {
			return fmt.Errorf("want QUEUE=N, got %q", kv)
		}
		(*p)[q] = v
	}
	return nil
}
