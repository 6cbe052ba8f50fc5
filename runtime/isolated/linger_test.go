package isolated_test

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// lingerArgs: the child's handler panics or returns an error (How); once
// its reply is read (the worker then closes the child's stdin), the child
// pushes "replied" to Key and lingers, as a child whose exit takes time
// (an interpreter's teardown, cleanup).
type lingerArgs struct {
	How string
	Key string
}

func (lingerArgs) Kind() string { return "linger" }

func lingerMain() int {
	var key string
	reg := flow.NewRegistry()
	must(flow.Register(reg, func(_ context.Context, job *flow.Job[lingerArgs]) error {
		key = job.Args.Key
		if job.Args.How == "panic" {
			panic("linger boom")
		}
		return errors.New("linger error")
	}))
	if err := isolated.Serve(reg); err != nil {
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // ends when the worker has read the reply
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envRedis)})
	_ = rdb.RPush(context.Background(), key, "replied").Err()
	time.Sleep(time.Hour)
	return 0
}

func lingerHandlers(t *testing.T) isolated.Handlers {
	cmd := command()
	cmd.Args = []string{lingerArg}
	return isolate(t, cmd, isolated.Options{ExitGrace: time.Hour}, lingerArgs{}.Kind())
}

// TestReplyThenTimeout: the child's handler panicked and the child said
// so; the attempt's timeout comes while the worker waits for the child to
// exit. The attempt counts as the crash the child reported, not as a
// timed-out attempt: an outcome known before the timeout stands. Before,
// it was a returned error ("attempt timed out"): a panicking job escaped
// its crash limit.
func TestReplyThenTimeout(t *testing.T) {
	t.Parallel()
	clk := runtime.NewFakeClock(time.UnixMilli(time.Now().UnixMilli()))
	e := newEnv(t, clk)
	e.startWorker(lingerHandlers(t), runtime.Options{Clock: clk, Lease: time.Hour, IdlePoll: time.Hour})
	key := e.key("replied")
	id := e.Enqueue(lingerArgs{How: "panic", Key: key}, flow.WithTimeout(time.Minute))
	e.pop(key)
	clk.Advance(time.Minute)
	j := e.PollState(id, flow.StateRetryable)
	if j.CrashAttempt != 1 || j.Attempt != 0 {
		t.Errorf("a panic reply, then the timeout: attempt %d, crash_attempt %d (%+v); want crash_attempt 1", j.Attempt, j.CrashAttempt, j.Errors)
	}
}

// TestReplyThenShutdown: the child returned an error or panicked, and the
// worker stops while it waits for the child to exit: the reply is counted
// (an attempt, or a crash), not released unspent.
func TestReplyThenShutdown(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"error", "panic"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			stop := e.startWorker(lingerHandlers(t), runtime.Options{ShutdownWindow: 10 * time.Millisecond})
			key := e.key("replied")
			id := e.Enqueue(lingerArgs{How: how, Key: key})
			e.pop(key)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			j := e.Job(id)
			attempt, crash := 1, 0
			if how == "panic" {
				attempt, crash = 0, 1
			}
			if j.Attempt != attempt || j.CrashAttempt != crash {
				t.Errorf("%s reply, then a stop: %s, attempt %d, crash_attempt %d; want attempt %d, crash_attempt %d",
					how, j.State, j.Attempt, j.CrashAttempt, attempt, crash)
			}
		})
	}
}
