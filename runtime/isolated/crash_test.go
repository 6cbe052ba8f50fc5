//go:build unix

package isolated_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// garbageArgs runs a child that prints text instead of frames.
type garbageArgs struct{}

func (garbageArgs) Kind() string { return "iso_garbage" }

// TestCrashesQuarantine: a child that dies by a signal, exits, panics,
// writes no valid reply or whose handler returns a *CrashError is a crash,
// not an error: each attempt spends
// crash_attempt, and the job is quarantined at the crash limit, with the
// exit status and the child's stderr in its error records. The worker's
// other jobs, isolated or not, keep running meanwhile.
func TestCrashesQuarantine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	h := isolate(t, command(), isolated.Options{}, crashArgs{}.Kind(), echoArgs{}.Kind())
	garbage, err := isolated.Handler(isolated.Command{Path: os.Args[0], Args: []string{garbageArg}}, isolated.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.Kinds[garbageArgs{}.Kind()] = garbage
	inproc := flow.NewRegistry()
	if err := flow.RegisterResult(inproc, func(_ context.Context, job *flow.Job[plainArgs]) (int, error) { return job.Args.N * 2, nil }); err != nil {
		t.Fatal(err)
	}
	h.Next = inproc
	const limit = 2
	stop := e.startWorker(h, runtime.Options{CrashLimit: limit, Concurrency: 4})

	segv := "signal: segmentation fault"
	if !realSegfault {
		segv = "exit status 2"
	}
	tests := []struct {
		args    flow.Args
		class   string
		message string // a part of each error's message
		detail  string // a part of each error's stack (the child's stderr, or its panic's stack)
	}{
		{args: crashArgs{How: "segv"}, class: "child_crash", message: "exited without a reply: " + segv},
		{args: crashArgs{How: "abort"}, class: "child_crash", message: "exited without a reply: signal: aborted", detail: "abort: unrecoverable"},
		{args: crashArgs{How: "exit"}, class: "child_crash", message: "exited without a reply: exit status 3"},
		{args: crashArgs{How: "panic"}, class: "panic", message: "panic in isolated child: kaboom", detail: "child_test.go"},
		{args: crashArgs{How: "returned"}, class: "tool_crash", message: "the tool died by SIGSEGV", detail: "the tool's stderr"},
		{args: garbageArgs{}, class: "child_crash", message: "sent no valid reply (isolated: protocol error: frame version 104, want 1)"},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		ids[i] = e.Enqueue(tt.args)
	}
	// Healthy work enqueued alongside the crashing jobs.
	var healthy []string
	for i := range 3 {
		healthy = append(healthy, e.Enqueue(echoArgs{Msg: "ok"}), e.Enqueue(plainArgs{N: i}))
	}
	for i, tt := range tests {
		j := e.WaitState(ids[i], flow.StateQuarantined)
		if j.Reason != "crash_limit" || j.CrashAttempt != limit || j.Attempt != 0 || len(j.Errors) != limit {
			t.Errorf("%v: reason %q crash_attempt %d attempt %d, %d errors; want crash_limit %d 0 %d",
				tt.args, j.Reason, j.CrashAttempt, j.Attempt, len(j.Errors), limit, limit)
		}
		for _, r := range j.Errors {
			if r.Class != tt.class || !strings.Contains(r.Message, tt.message) || !strings.Contains(r.Stack, tt.detail) {
				t.Errorf("%v: error %s %q (stack %.200q), want class %s with %q (stack with %q)",
					tt.args, r.Class, r.Message, r.Stack, tt.class, tt.message, tt.detail)
			}
		}
	}
	for _, id := range healthy {
		e.WaitState(id, flow.StateCompleted)
	}
	if err := stop(); err != nil {
		t.Errorf("the worker, after its children crashed: %v", err)
	}
}

// plainArgs is an in-process job of the same worker.
type plainArgs struct{ N int }

func (plainArgs) Kind() string { return "plain" }

// TestGarbageHeaderIsCrash: a child that writes six bytes of garbage that
// start with the protocol's version byte, as a frame header would, and
// names a length over MaxStdout, then exits, sent no valid reply: a
// crash, as for any other garbage. A helper's audit found it charged as
// output over the limit (ErrOutputLimit, an ordinary error spending an
// attempt), after six bytes.
func TestGarbageHeaderIsCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	hd, err := isolated.Handler(isolated.Command{Path: "/bin/sh", Args: []string{"-c", `printf '\001Z\377\377\377\377'`}}, isolated.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.startWorker(isolated.Handlers{Kinds: map[string]runtime.Handler{garbageArgs{}.Kind(): hd}}, runtime.Options{})
	j := e.WaitState(e.Enqueue(garbageArgs{}), flow.StateRetryable)
	if len(j.Errors) != 1 || j.Errors[0].Class != "child_crash" || j.CrashAttempt != 1 || j.Attempt != 0 {
		t.Errorf("attempt %d, crash_attempt %d, errors %+v; want one child_crash", j.Attempt, j.CrashAttempt, j.Errors)
	}
}
