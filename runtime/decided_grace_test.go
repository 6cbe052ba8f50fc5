package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestDecidedOutcomeOutlastsGrace: an attempt whose outcome is known
// before its timeout (an isolated child replied that it crashed) and
// whose handler takes longer than CancelGrace to return (winding its
// child down) is settled by that outcome when the handler returns, not by
// the grace watch as a timeout. A helper's audit found the grace watch
// settled such an attempt without reading that its outcome was decided,
// so the crash the child reported was charged as an ordinary failure.
func TestDecidedOutcomeOutlastsGrace(t *testing.T) {
	t.Parallel()
	const (
		timeout = 10 * time.Second
		grace   = 7 * time.Second // a duration no other timer of the worker has
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	decided, release := testkit.Chan[string](), make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		if st, ok := attempt.From(ctx); ok {
			st.Decide() // as an isolated child's reply does
		}
		decided <- job.ID
		<-ctx.Done()
		<-release // its child exits slowly
		return &sluicetype.CrashError{Reason: "panic", Message: "the child panicked"}
	}))
	e.startWorker(reg, runtime.Options{Clock: clk, Lease: time.Minute, RenewInterval: 20 * time.Second, Timeout: timeout,
		CancelGrace: grace, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, decided, "the outcome to be decided")
	clk.Advance(timeout)
	clk.waitTimers(t, grace, 1)
	clk.Advance(grace)
	select {
	case s := <-e.Sig.Settled.C():
		t.Fatalf("settled %+v by the grace watch, while the decided outcome's handler winds down", s)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id })
	j := e.Job(id)
	if s.By != testsignal.Ack || j.CrashAttempt != 1 || j.Attempt != 0 || len(j.Errors) != 1 || j.Errors[0].Class != "panic" {
		t.Errorf("settled %+v: attempt %d, crash_attempt %d, errors %+v; want the crash the outcome reported", s, j.Attempt, j.CrashAttempt, j.Errors)
	}
}
