package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/runtime"
)

// User callbacks called when an attempt is settled, after its handler's
// panic recovery, on the runner goroutine: the real-process test that
// their panics do not end the worker's process.

type policyFlakyArgs struct{}

func (policyFlakyArgs) Kind() string { return "policy_flaky" }

type policyOddArgs struct{}

func (policyOddArgs) Kind() string { return "policy_odd" }

type policyOKArgs struct{}

func (policyOKArgs) Kind() string { return "policy_ok" }

// callbackBackoff is the child's Options.Backoff: the delay a panicking
// retry policy falls back to.
const callbackBackoff = time.Hour

// callbackChildMain is a worker process (envChild=callbackpanic) whose
// policy_flaky handler fails with a retry policy that panics (a table of
// delays indexed past its end), whose policy_odd handler fails with an
// error its NonConsuming panics on, and whose policy_ok handler succeeds.
func callbackChildMain() int {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envChildAddr)})
	reg := flow.NewRegistry()
	delays := []time.Duration{time.Second}
	must := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
	}
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[policyFlakyArgs]) error {
		return errors.New("boom")
	}, flow.WithRetryPolicy(func(attempt int, err error) time.Duration { return delays[attempt] })))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[policyOddArgs]) error {
		return errors.New("odd")
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[policyOKArgs]) error { return nil }))
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: os.Getenv(envChildNS),
		Backoff:   func(int) time.Duration { return callbackBackoff },
		NonConsuming: func(err error) bool {
			if err.Error() == "odd" {
				panic("NonConsuming: odd")
			}
			return false
		},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	must(err)
	fmt.Printf("worker %s\n", w.ID())
	err = w.Run(context.Background())
	fmt.Fprintln(os.Stderr, "child: Run returned", err)
	return 2
}

// TestPanickingCallbacksKeepTheWorker: a kind's retry policy
// (flow.WithRetryPolicy) and Options.NonConsuming that panic while an
// attempt is settled once took the worker's whole process down, every
// job it ran with it; the job was reaped as a crash and did the same to
// the next worker, until it was quarantined. Now the process lives on,
// the job is retried after Options.Backoff's delay, the panics are
// logged, and the next job runs.
func TestPanickingCallbacksKeepTheWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	flaky := e.Enqueue(policyFlakyArgs{})
	start := time.Now()

	out, stderr := &proctest.LineLog{}, &proctest.Buffer{}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=callbackpanic", envChildAddr+"="+shared.Server.Addr(), envChildNS+"="+e.NS)
	cmd.Stdout, cmd.Stderr = out, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})

	// Polled: the child runs the jobs, whose signals do not reach the
	// test. A child that dies fails the test at once.
	await := func(id, state string) *flow.JobInfo {
		t.Helper()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		timeout := time.After(waitTimeout)
		for {
			j, err := e.Client.Job(context.Background(), id)
			if err == nil && j.State == state {
				return j
			}
			select {
			case <-exited:
				s := stderr.String()
				if i := strings.Index(s, "panic:"); i >= 0 {
					s = s[i:min(len(s), i+800)]
				}
				t.Fatalf("the worker process died (%v) before job %s was %s:\n%s", cmd.ProcessState, id, state, s)
			case <-timeout:
				t.Fatalf("timed out waiting for job %s to be %s; last seen %+v (err %v)", id, state, j, err)
			case <-tick.C:
			}
		}
	}
	// Each failed job is retried after Options.Backoff's hour, not
	// charged a crash (store time and this clock are the same machine's).
	retried := func(id, lastErr string) {
		t.Helper()
		j := await(id, flow.StateRetryable)
		if j.Attempt != 1 || j.CrashAttempt != 0 || j.LastError != lastErr {
			t.Errorf("job %s: attempt %d, crash_attempt %d, last error %q; want 1, 0, %s", id, j.Attempt, j.CrashAttempt, j.LastError, lastErr)
		}
		if due := j.RunAt.Sub(start); due < callbackBackoff || due > callbackBackoff+waitTimeout {
			t.Errorf("job %s due %s after it was enqueued, want Options.Backoff's %s", id, due, callbackBackoff)
		}
	}
	retried(flaky, "boom")                                // the retry policy panicked
	retried(e.Enqueue(policyOddArgs{}), "odd")            // NonConsuming panicked
	await(e.Enqueue(policyOKArgs{}), flow.StateCompleted) // the process still works

	// the child's stderr reaches the buffer through a pipe, which the
	// test may read before it is drained: polled too
	wants := []string{
		"retry policy panicked; using Options.Backoff", "index out of range",
		"Options.NonConsuming panicked; the attempt counts", "NonConsuming: odd",
	}
	missing := func() []string {
		logs := stderr.String()
		var out []string
		for _, want := range wants {
			if !strings.Contains(logs, want) {
				out = append(out, want)
			}
		}
		return out
	}
	redisproc.Poll(waitTimeout, func() (bool, string) { return len(missing()) == 0, "" })
	for _, want := range missing() {
		t.Errorf("the child's log has no %q", want)
	}
}
