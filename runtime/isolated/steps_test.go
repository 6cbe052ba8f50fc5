//go:build unix

package isolated_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// TestStepsResumeAfterKill: a child's steps are checkpointed through the
// worker; after the child is SIGKILLed mid-job, the next attempt's child
// skips the finished steps (their work and effects happen once) and
// completes the job, its completion effects applied with it.
func TestStepsResumeAfterKill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	h := isolate(t, command(), isolated.Options{}, stepsArgs{}.Kind())
	followUps := make(chan int, 8)
	inproc := flow.NewRegistry()
	if err := flow.Register(inproc, func(_ context.Context, job *flow.Job[plainArgs]) error {
		followUps <- job.Args.N
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h.Next = inproc
	stop := e.startWorker(h, runtime.Options{})
	key := e.key("steps")
	id := e.Enqueue(stepsArgs{Key: key})
	pid, err := strconv.Atoi(e.pop(key + ":pids"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	j := e.WaitState(id, flow.StateCompleted)
	var res string
	if err := j.DecodeResult(&res); err != nil || res != "one+two" {
		t.Errorf("result %q (%v), want one+two", res, err)
	}
	if j.Attempt != 0 || j.CrashAttempt != 1 || len(j.Errors) != 1 || j.Errors[0].Class != "child_crash" ||
		j.Errors[0].Message != "isolated child "+baseName()+" exited without a reply: signal: killed" {
		t.Errorf("attempt %d crash_attempt %d errors %+v, want one child_crash (killed)", j.Attempt, j.CrashAttempt, j.Errors)
	}
	var steps []string
	for _, s := range j.Steps {
		steps = append(steps, fmt.Sprintf("%s#%d", s.Name, s.Index))
	}
	if fmt.Sprint(steps) != "[one#0 effect#1 two#2]" {
		t.Errorf("steps %v, want [one#0 effect#1 two#2]", steps)
	}
	if n := testkit.Recv(t, followUps, "the follow-up job committed by the child's step to run"); n != 42 {
		t.Errorf("follow-up job ran with %d, want 42", n)
	}
	ref, _ := keys.ParseRef(e.NS, id)
	counts := map[string]string{
		"step one's work": key + ":one", "step two's work": key + ":two",
		"step effect": ref.Tag() + ":u:effect", "completion effect": ref.Tag() + ":u:complete",
	}
	want := map[string]string{"step one's work": "1", "step two's work": "1", "step effect": "5", "completion effect": "1"}
	for what, k := range counts {
		if got, _ := e.RDB.Get(context.Background(), k).Result(); got != want[what] {
			t.Errorf("%s: %s is %q, want %q", what, k, got, want[what])
		}
	}
	if err := stop(); err != nil { // every job it would run has run
		t.Error(err)
	}
	if n := len(followUps); n != 0 {
		t.Errorf("the follow-up job ran %d more times", n)
	}
}

// TestLostLeaseKillsChild: the child's checkpoints are fenced by the
// worker's lease. Once another attempt holds the job, the child's next
// step is rejected, the attempt is cancelled and the child killed, and
// the job is left as the new holder has it.
func TestLostLeaseKillsChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.startWorker(isolate(t, command(), isolated.Options{}, fenceArgs{}.Kind()), runtime.Options{})
	key := e.key("fence")
	id := e.Enqueue(fenceArgs{Key: key})
	takeOverAfterBefore(t, e, key, id)
}

// takeOverAfterBefore moves the fence of fenceArgs job id on (another
// attempt takes it over) once its child has committed step "before", lets
// the child go on, and checks that the child is killed and that the job
// is left as the new holder has it: running, fence 7, step "before" only.
func takeOverAfterBefore(t *testing.T, e *env, key, id string) {
	t.Helper()
	pid, err := strconv.Atoi(e.pop(key + ":ready"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, _ := keys.ParseRef(e.NS, id)
	if err := e.RDB.HSet(ctx, ref.Job(ref.Local), keys.FieldFence, 7).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.RDB.RPush(ctx, key+":go", "go").Err(); err != nil {
		t.Fatal(err)
	}
	// Polled: the child is another process, whose end nothing signals.
	redistest.Within(t, waitTimeout, fmt.Sprintf("child %d to be killed", pid), func() (bool, string) {
		err := syscall.Kill(pid, 0)
		return errors.Is(err, syscall.ESRCH), fmt.Sprint("kill -0: ", err)
	})
	j, err := e.Client.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, s := range j.Steps {
		steps = append(steps, s.Name)
	}
	if j.State != flow.StateRunning || j.Fence != 7 || fmt.Sprint(steps) != "[before]" {
		t.Errorf("job %s fence %d steps %v, want running, fence 7, only step before", j.State, j.Fence, steps)
	}
}

// TestStrictStepInChild: a strict step in an isolated child has its
// worker confirm the lease with Redis before its function runs. On a job
// still held, the function runs and the job completes. On a job another
// attempt has taken over (its fence moved on) without the worker knowing
// yet, the function does not run, the attempt is cancelled and the child
// killed. (Before, every strict step in a child parked its job.)
func TestStrictStepInChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.startWorker(isolate(t, command(), isolated.Options{}, fenceArgs{}.Kind()),
		runtime.Options{Lease: time.Hour, RenewInterval: 30 * time.Minute})
	ctx := context.Background()
	// Held: the strict step runs.
	key := e.key("strict-held")
	id := e.Enqueue(fenceArgs{Key: key, Strict: true})
	e.pop(key + ":ready")
	if err := e.RDB.RPush(ctx, key+":go", "go").Err(); err != nil {
		t.Fatal(err)
	}
	e.WaitState(id, flow.StateCompleted)
	if n, err := e.RDB.LLen(ctx, key+":ran").Result(); err != nil || n != 1 {
		t.Errorf("the strict step's function ran %d times (%v), want once", n, err)
	}

	// Taken over: the strict step refuses before its function runs.
	key = e.key("strict-taken")
	id = e.Enqueue(fenceArgs{Key: key, Strict: true})
	takeOverAfterBefore(t, e, key, id)
	if n, err := e.RDB.LLen(ctx, key+":ran").Result(); err != nil || n != 0 {
		t.Errorf("the strict step's function ran %d times (%v) after the job was taken over, want never", n, err)
	}
}
