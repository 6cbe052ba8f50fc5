package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestSuspectsShareOneProcess: a job with a crash on record never runs
// beside another in one worker process (docs/guarantees.md), whichever of
// the process's runtime.Workers claims them: two Workers in one process
// (as examples/sticky runs them) run one suspect at a time.
func TestSuspectsShareOneProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	running := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		if job.CrashAttempt == 0 {
			panic("first attempt crashes: the job becomes a suspect")
		}
		running <- job.ID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	o := runtime.Options{CrashDelay: noCrashDelay, Concurrency: 4, IdlePoll: 50 * time.Millisecond}
	e.startWorker(reg, o)
	e.startWorker(reg, o)                // a second Worker in the same OS process
	t.Cleanup(func() { close(release) }) // before the workers stop
	a := e.Enqueue(workArgs{N: 1})
	b := e.Enqueue(workArgs{N: 2})
	first := testkit.Recv(t, running, "a suspect to run")
	select {
	case second := <-running:
		ja, jb := e.Job(a), e.Job(b)
		t.Errorf("suspects %s and %s run side by side in one process (crash_attempt %d and %d, holders %s and %s): "+
			"a culprit among them that kills the process charges the other a second crash",
			first, second, ja.CrashAttempt, jb.CrashAttempt, ja.LeaseHolder, jb.LeaseHolder)
	case <-time.After(2 * time.Second):
		// only one suspect at a time in this process: as documented
	}
}
