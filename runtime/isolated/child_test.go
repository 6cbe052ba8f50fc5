//go:build unix

package isolated_test

// The job types of the tests and their handlers, which run in the child
// processes (childRegistry). Handlers report to the tests through Redis
// lists, at the address the child's environment gives.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// echoArgs: the child returns what it saw of its job and environment.
type echoArgs struct{ Msg string }

func (echoArgs) Kind() string { return "iso_echo" }

type echoResult struct {
	Msg     string
	ID      string
	Fence   int64
	LeaseID string
	Claimed time.Time
	Env     []string
	Ends    time.Time // the handler's ctx.Deadline(), zero for none
}

// outcomeArgs: the child returns the outcome named.
type outcomeArgs struct{ Outcome string }

func (outcomeArgs) Kind() string { return "iso_outcome" }

// crashArgs: the child dies the way named ("returned": its handler
// returns a *CrashError).
type crashArgs struct{ How string }

func (crashArgs) Kind() string { return "iso_crash" }

// floodArgs: the child prints Stray on its stdout, writes Stderr bytes to
// stderr and returns a result of Result bytes.
type floodArgs struct {
	Stray  string
	Stderr int
	Result int
	Exit   int // when set, the child exits with this status a moment after its stderr, as a dying process does
	// Then, when set, is how the handler ends after its stderr: "panic"
	// panics, "crash" returns a *sluicetype.CrashError
	Then string `json:",omitempty"`
}

func (floodArgs) Kind() string { return "iso_flood" }

// hangArgs: the child starts a grandchild, pushes "pid grandchild" to Key
// and waits until it is killed.
type hangArgs struct{ Key string }

func (hangArgs) Kind() string { return "iso_hang" }

// stepsArgs: durable steps, one of them with an effect and a follow-up
// job (plainArgs{N: 42}); the first run pushes its pid to Key+":pids"
// after two of them and waits until it is killed.
type stepsArgs struct{ Key string }

func (stepsArgs) Kind() string { return "iso_steps" }

// fenceArgs: step "before", then push the pid to Key+":ready", wait for
// Key+":go", then step "after" (strict when Strict says so), whose
// function pushes "ran" to Key+":ran".
type fenceArgs struct {
	Key    string
	Strict bool
}

func (fenceArgs) Kind() string { return "iso_fence" }

// oneStepArgs: one durable step, "only", and the job's result "done".
type oneStepArgs struct{}

func (oneStepArgs) Kind() string { return "iso_onestep" }

// swallowArgs (rev3): a best-effort step whose failure the handler
// ignores, then a genuine error of the handler's own.
type swallowArgs struct{}

func (swallowArgs) Kind() string { return "iso_swallow" }

// laterArgs (rev3): step "a" (whose commit the test makes fail), then,
// once Key+":go" is pushed, step "b"; the handler returns a's error
// (wrapped), as one that reports the first failure after its other work.
type laterArgs struct{ Key string }

func (laterArgs) Kind() string { return "iso_later" }

// unknownArgs has no handler in the child.
type unknownArgs struct{}

func (unknownArgs) Kind() string { return "iso_unknown" }

func childRegistry() *flow.Registry {
	reg := flow.NewRegistry()
	rdb := func() *redis.Client { return redis.NewClient(&redis.Options{Addr: os.Getenv(envRedis)}) }
	must(flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[echoArgs]) (echoResult, error) {
		ends, _ := ctx.Deadline()
		return echoResult{Msg: "echo: " + job.Args.Msg, ID: job.ID, Fence: job.Fence, LeaseID: job.LeaseID,
			Claimed: job.Claimed, Env: os.Environ(), Ends: ends}, nil
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[outcomeArgs]) error {
		switch job.Args.Outcome {
		case "snooze":
			return flow.Snooze(time.Hour)
		case "rate_limited":
			return flow.RateLimited(time.Hour)
		case "skip":
			return flow.Skip("not today")
		case "revoke":
			return flow.Revoke("withdrawn")
		case "spawn":
			_, err := flow.Spawn(ctx, "kids", flow.Item{Args: echoArgs{}})
			return err
		}
		return errors.New("boom")
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[crashArgs]) error {
		switch job.Args.How {
		case "segv":
			segfault()
		case "abort":
			debug.SetTraceback("crash") // an unrecovered panic raises SIGABRT
			go panic("abort: unrecoverable")
		case "exit":
			os.Exit(3)
		case "panic":
			panic("kaboom")
		case "returned": // a crash the handler reports, wrapped
			return fmt.Errorf("running the tool: %w", &sluicetype.CrashError{Reason: "tool_crash",
				Message: "the tool died by SIGSEGV", Detail: []byte("the tool's stderr")})
		}
		time.Sleep(time.Hour)
		return nil
	}))
	must(flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[floodArgs]) (string, error) {
		fmt.Print(job.Args.Stray) // to stdout, which Serve moved to stderr
		_, _ = os.Stderr.WriteString(strings.Repeat("e", job.Args.Stderr))
		if job.Args.Exit != 0 {
			time.Sleep(100 * time.Millisecond) // the rest of its dying
			os.Exit(job.Args.Exit)
		}
		switch job.Args.Then {
		case "panic":
			panic("after a flood")
		case "crash":
			return "", &sluicetype.CrashError{Reason: "tool_crash", Message: "the tool died after its dump"}
		}
		return strings.Repeat("r", job.Args.Result), nil
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[hangArgs]) error {
		gc := exec.Command(os.Args[0], sleeperArg)
		if err := gc.Start(); err != nil {
			return err
		}
		report := fmt.Sprintf("%d %d", os.Getpid(), gc.Process.Pid)
		if err := rdb().RPush(ctx, job.Args.Key, report).Err(); err != nil {
			return err
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}))
	must(flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[oneStepArgs]) (string, error) {
		return step.Run(ctx, "only", func(context.Context) (string, error) { return "done", nil })
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[laterArgs]) error {
		r, key := rdb(), job.Args.Key
		errA := step.Do(ctx, "a", func(context.Context) error { return nil })
		if err := r.RPush(ctx, key+":afailed", fmt.Sprint(errA)).Err(); err != nil {
			return err
		}
		if err := r.BLPop(ctx, 0, key+":go").Err(); err != nil {
			return err
		}
		if err := step.Do(ctx, "b", func(context.Context) error { return nil }); err != nil {
			return err
		}
		if errA != nil {
			return fmt.Errorf("step a: %w", errA)
		}
		return nil
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[swallowArgs]) error {
		_ = step.Do(ctx, "audit", func(context.Context) error { return nil }) // best effort: its failure is ignored
		return errors.New("genuine: the input is invalid")
	}))
	must(flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[stepsArgs]) (string, error) {
		r, key := rdb(), job.Args.Key
		one, err := step.Run(ctx, "one", func(ctx context.Context) (string, error) {
			return "one", r.Incr(ctx, key+":one").Err()
		})
		if err != nil {
			return "", err
		}
		next, err := flow.FollowUp(ctx, plainArgs{N: 42})
		if err != nil {
			return "", err
		}
		if err := step.Commit(ctx, "effect", idempotency.IncrBy(idempotency.SlotKey(ctx, "effect"), 5), next); err != nil {
			return "", err
		}
		if err := step.OnComplete(ctx, idempotency.IncrBy(idempotency.SlotKey(ctx, "complete"), 1)); err != nil {
			return "", err
		}
		if job.CrashAttempt == 0 {
			if err := r.RPush(ctx, key+":pids", os.Getpid()).Err(); err != nil {
				return "", err
			}
			<-ctx.Done() // until SIGKILL
			return "", context.Cause(ctx)
		}
		two, err := step.Run(ctx, "two", func(ctx context.Context) (string, error) {
			return "two", r.Incr(ctx, key+":two").Err()
		})
		return one + "+" + two, err
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[fenceArgs]) error {
		r, key := rdb(), job.Args.Key
		if err := step.Do(ctx, "before", func(ctx context.Context) error { return nil }); err != nil {
			return err
		}
		if err := r.RPush(ctx, key+":ready", os.Getpid()).Err(); err != nil {
			return err
		}
		if err := r.BLPop(ctx, 0, key+":go").Err(); err != nil {
			return err
		}
		var opts []step.Option
		if job.Args.Strict {
			opts = append(opts, step.Strict())
		}
		return step.Do(ctx, "after", func(ctx context.Context) error {
			return r.RPush(ctx, key+":ran", "ran").Err()
		}, opts...)
	}))
	must(registerParity(reg))
	return reg
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
