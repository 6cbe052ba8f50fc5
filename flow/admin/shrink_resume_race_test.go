package admin_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// TestCancelledShrinkLeavesAResumeAsItIs: a shrink from 4 to 2 retires
// partitions 2 and 3; while it checks them an operator resumes the queue
// (ResumeQueue takes the resize lock from the shrink, brings 2 and 3 back
// and resumes every partition), and the shrink's caller gives up (its
// context cancelled). The shrink's undoing, which runs past its caller's
// end, brings back only partitions still retired: it leaves the resumed
// queue running. A review found a first version of that undoing paused 2
// and 3 again, with no error to the operator.
func TestCancelledShrinkLeavesAResumeAsItIs(t *testing.T) {
	t.Parallel()
	const q = "csr"
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{q: 4})
	ctx := context.Background()
	ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 4 partitions
	ok(t, a.ops.PauseQueue(ctx, q))

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var resumeErr error
	other := env.Client(t)
	other.AddHook(&cancelOnOutboxRead{fn: func() {
		resumeErr = a.ops.ResumeQueue(ctx, q) // the operator, on its own connection
		cancel()                              // the shrink's caller gives up
	}})
	oc, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	err = admin.New(oc).ResizeQueue(sctx, q, 2)
	t.Logf("the shrink: %v", err)
	ok(t, resumeErr)
	for i := range 4 {
		if f := a.flag(q, i); f != "" {
			t.Errorf("partition %d has flag %q after ResumeQueue succeeded, want none (running)", i, f)
		}
	}
}
