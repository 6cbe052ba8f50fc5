//go:build unix

package isolated_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// TestHandlerRefusesBadSetUp: a command that cannot run or negative
// limits are refused when the handler is made.
func TestHandlerRefusesBadSetUp(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cmd  isolated.Command
		opts isolated.Options
	}{
		"no path":         {},
		"missing program": {cmd: isolated.Command{Path: "/nonexistent/sluice-child"}},
		"not in PATH":     {cmd: isolated.Command{Path: "sluice-no-such-program"}},
		"negative limit":  {cmd: command(), opts: isolated.Options{MaxStderr: -1}},
		"negative grace":  {cmd: command(), opts: isolated.Options{ExitGrace: -1}},
		"negative stdout": {cmd: command(), opts: isolated.Options{MaxStdout: -1}},
	} {
		if _, err := isolated.Handler(tc.cmd, tc.opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSuccess: the child gets the attempt's identity and an environment
// of exactly Command.Env, and its result becomes the job's.
func TestSuccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.startWorker(isolate(t, command("EXTRA=1"), isolated.Options{}, echoArgs{}.Kind()), runtime.Options{})
	id := e.Enqueue(echoArgs{Msg: "hi"})
	j := e.WaitState(id, flow.StateCompleted)
	var got echoResult
	if err := j.DecodeResult(&got); err != nil {
		t.Fatal(err)
	}
	if got.LeaseID == "" || got.Claimed.IsZero() {
		t.Errorf("the child saw lease ID %q, claimed at %v", got.LeaseID, got.Claimed)
	}
	got.LeaseID, got.Claimed = "", time.Time{}
	want := echoResult{Msg: "echo: hi", ID: id, Fence: 1, Env: command("EXTRA=1").Env}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("child result\n got %+v\nwant %+v", got, want)
	}
	if j.Attempt != 0 || j.CrashAttempt != 0 {
		t.Errorf("attempt %d crash_attempt %d, want 0 0", j.Attempt, j.CrashAttempt)
	}
}

// TestChildSeesWhenAttemptEnds: the handler's context in the child
// reports when the worker will end the attempt (and kill the child), as
// it would in the worker: the job's timeout from the claim, or its
// deadline when that comes first; none without either.
func TestChildSeesWhenAttemptEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.startWorker(isolate(t, command(), isolated.Options{}, echoArgs{}.Kind()), runtime.Options{})
	before := time.Now()
	timed := e.Enqueue(echoArgs{}, flow.WithTimeout(time.Hour))
	deadline := before.Add(30 * time.Minute).Truncate(time.Millisecond)
	dated := e.Enqueue(echoArgs{}, flow.WithTimeout(time.Hour), flow.WithDeadline(deadline))
	plain := e.Enqueue(echoArgs{})
	ends := func(id string) time.Time {
		var got echoResult
		if err := e.WaitState(id, flow.StateCompleted).DecodeResult(&got); err != nil {
			t.Fatal(err)
		}
		return got.Ends
	}
	got := ends(timed)
	if after := time.Now(); got.Before(before.Add(time.Hour)) || got.After(after.Add(time.Hour)) {
		t.Errorf("with a one-hour timeout the child's deadline is %v, want an hour after the claim (between %v and %v)", got, before.Add(time.Hour), after.Add(time.Hour))
	}
	// the deadline is store time carried over to the worker's clock: the
	// same clock here, up to the time a claim takes
	if got := ends(dated); got.Sub(deadline).Abs() > time.Second {
		t.Errorf("with a deadline of %v the child's deadline is %v", deadline, got)
	}
	if got := ends(plain); !got.IsZero() {
		t.Errorf("with neither timeout nor deadline the child's context has deadline %v, want none", got)
	}
}

// TestInheritEnv: with InheritEnv the child also gets the worker's
// environment.
func TestInheritEnv(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.startWorker(isolate(t, command(), isolated.Options{InheritEnv: true}, echoArgs{}.Kind()), runtime.Options{})
	j := e.WaitState(e.Enqueue(echoArgs{}), flow.StateCompleted)
	var got echoResult
	if err := j.DecodeResult(&got); err != nil {
		t.Fatal(err)
	}
	for _, kv := range append(os.Environ(), command().Env...) {
		if !slices.Contains(got.Env, kv) {
			t.Errorf("the child's environment lacks %q", kv)
		}
	}
}

// TestOutcomes: each outcome a child's handler returns decides the job's
// fate as it would in the worker.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.startWorker(isolate(t, command(), isolated.Options{}, outcomeArgs{}.Kind(), unknownArgs{}.Kind()), runtime.Options{})
	tests := []struct {
		args    flow.Args
		state   string
		reason  string
		attempt int
		class   string // of the error recorded, if any
		message string
	}{
		{args: outcomeArgs{Outcome: "error"}, state: flow.StateRetryable, attempt: 1, class: "error", message: "boom"},
		{args: outcomeArgs{Outcome: "snooze"}, state: flow.StateScheduled},
		{args: outcomeArgs{Outcome: "rate_limited"}, state: flow.StateScheduled},
		{args: outcomeArgs{Outcome: "skip"}, state: flow.StateArchived, reason: "skipped"},
		{args: outcomeArgs{Outcome: "revoke"}, state: flow.StateCancelled, reason: "revoked"},
		{args: outcomeArgs{Outcome: "spawn"}, state: flow.StateRetryable, attempt: 1, class: "error",
			message: "isolated: a child process has no Redis connection: spawn and join child jobs in the worker"},
		{args: unknownArgs{}, state: flow.StateArchived, reason: "unknown_kind", class: "unknown_kind",
			message: `unknown_kind: no handler registered for kind "iso_unknown" in the isolated child`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			t.Parallel()
			j := e.WaitState(e.Enqueue(tt.args), tt.state)
			if j.Reason != tt.reason || j.Attempt != tt.attempt || j.CrashAttempt != 0 {
				t.Errorf("reason %q attempt %d crash_attempt %d, want %q %d 0", j.Reason, j.Attempt, j.CrashAttempt, tt.reason, tt.attempt)
			}
			var got []string
			for _, r := range j.Errors {
				got = append(got, r.Class+": "+r.Message)
			}
			var want []string
			if tt.class != "" {
				want = []string{tt.class + ": " + tt.message}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("errors %q, want %q", got, want)
			}
		})
	}
}

// TestOutput: what a handler prints to stdout goes to stderr and the
// reply stays intact; a child writing more than its limits on either
// stream is killed and its attempt fails as a returned error.
func TestOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    isolated.Options
		args    floodArgs
		state   string
		message string // of the error recorded
		crash   bool   // counted as a crash, class child_crash unless class says
		class   string
	}{
		{name: "within limits", opts: isolated.Options{MaxStdout: 1 << 10, MaxStderr: 1 << 10},
			args: floodArgs{Stray: "stray print", Stderr: 900, Result: 900}, state: flow.StateCompleted},
		{name: "stderr over", opts: isolated.Options{MaxStderr: 1 << 10},
			args: floodArgs{Stderr: 64 << 10}, state: flow.StateRetryable, message: "isolated: child output over its limit: stderr over 1024 bytes"},
		// a dying child's last words (a Go runtime's dump) over the limit:
		// the crash it is, not a returned error (before: ErrOutputLimit)
		{name: "stderr over, then death", opts: isolated.Options{MaxStderr: 1 << 10, ExitGrace: 10 * time.Second},
			args: floodArgs{Stderr: 64 << 10, Exit: 2}, state: flow.StateRetryable, crash: true},
		// a reply that says the handler panicked or crashed, after a flood
		// over the limit: the crash it reports (before: ErrOutputLimit, a
		// returned error; found by a helper's audit)
		{name: "stderr over, then panic", opts: isolated.Options{MaxStderr: 1 << 10, ExitGrace: 10 * time.Second},
			args: floodArgs{Stderr: 64 << 10, Then: "panic"}, state: flow.StateRetryable, crash: true, class: "panic"},
		{name: "stderr over, then a crash returned", opts: isolated.Options{MaxStderr: 1 << 10, ExitGrace: 10 * time.Second},
			args: floodArgs{Stderr: 64 << 10, Then: "crash"}, state: flow.StateRetryable, crash: true, class: "tool_crash"},
		{name: "stdout over", opts: isolated.Options{MaxStdout: 4 << 10},
			args: floodArgs{Result: 64 << 10}, state: flow.StateRetryable, message: "isolated: child output over its limit: stdout over 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			var stderr proctest.Buffer
			tt.opts.Stderr = &stderr
			e.startWorker(isolate(t, command(), tt.opts, floodArgs{}.Kind()), runtime.Options{})
			j := e.WaitState(e.Enqueue(tt.args), tt.state)
			if tt.state == flow.StateCompleted {
				var res string
				if err := j.DecodeResult(&res); err != nil || res != strings.Repeat("r", tt.args.Result) {
					t.Errorf("result %d bytes (%v), want %d", len(res), err, tt.args.Result)
				}
				if want := tt.args.Stray + strings.Repeat("e", tt.args.Stderr); stderr.String() != want {
					t.Errorf("stderr copy %q, want %q", stderr.String(), want)
				}
				return
			}
			if tt.crash {
				class := cmp.Or(tt.class, "child_crash")
				if len(j.Errors) != 1 || j.Errors[0].Class != class || j.CrashAttempt != 1 || j.Attempt != 0 {
					t.Errorf("attempt %d, crash_attempt %d, errors %+v, want one crash (%s)", j.Attempt, j.CrashAttempt, j.Errors, class)
				}
				return
			}
			if len(j.Errors) != 1 || j.Errors[0].Class != "error" || j.Errors[0].Message != tt.message || j.Attempt != 1 {
				t.Errorf("attempt %d, errors %+v, want attempt 1 and one error %q", j.Attempt, j.Errors, tt.message)
			}
			if n := len(stderr.String()); n > tt.opts.MaxStderr && tt.opts.MaxStderr > 0 {
				t.Errorf("stderr copy has %d bytes, over MaxStderr %d", n, tt.opts.MaxStderr)
			}
		})
	}
}

// TestStartFailure: a child program that cannot be started (here: its
// interpreter is missing) fails the attempt like a returned error,
// isolated.ErrStart with its cause, and the job is retried, not lost; the
// worker goes on running other jobs.
func TestStartFailure(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "child")
	if err := os.WriteFile(path, []byte("#!/nonexistent/sluice-interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	broken, err := isolated.Handler(isolated.Command{Path: path}, isolated.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var seen proctest.Buffer
	e := newEnv(t, nil)
	h := isolate(t, command(), isolated.Options{}, echoArgs{}.Kind())
	h.Kinds[unknownArgs{}.Kind()] = runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
		res, err := broken.Work(ctx, a)
		if errors.Is(err, isolated.ErrStart) && errors.Is(err, fs.ErrNotExist) {
			seen.Write([]byte("ErrStart"))
		}
		return res, err
	})
	e.startWorker(h, runtime.Options{})
	j := e.WaitState(e.Enqueue(unknownArgs{}), flow.StateRetryable)
	if j.Attempt != 1 || j.CrashAttempt != 0 || len(j.Errors) != 1 || j.Errors[0].Class != "error" ||
		!strings.HasPrefix(j.Errors[0].Message, "isolated: the child process could not be started: "+path) {
		t.Errorf("attempt %d crash_attempt %d, errors %+v; want one error, ErrStart", j.Attempt, j.CrashAttempt, j.Errors)
	}
	if seen.String() != "ErrStart" {
		t.Errorf("the handler's error does not match isolated.ErrStart and fs.ErrNotExist")
	}
	e.WaitState(e.Enqueue(echoArgs{Msg: "after"}), flow.StateCompleted)
}
