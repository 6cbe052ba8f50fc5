package admin_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/store"
)

// TestChildParkReasonSelectable: an isolated child may park its job
// with any reason (runtime/isolated/doc.go: 'R' "park" (reason, message);
// "a child in another language can too"), and the worker records it as
// the archived job's reason (outcome.go -> CodePark -> ack.lua finish).
// A selector naming that recorded reason must select those jobs, not be
// refused as a reason "Sluice records no such reason".
func TestChildParkReasonSelectable(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	for range 2 {
		a.enqueue(email{To: "x"})
	}
	if n := a.finish("default", 1, time.Millisecond, store.Ack{Code: store.CodePark, Reason: "gpu_oom", Message: "parked by the child"}); n != 2 {
		t.Fatalf("parked %d", n)
	}
	all, err := a.ops.RedriveSelected(a.ctx, admin.Selector{Queue: "default"}, admin.RedriveOptions{DryRun: true})
	if err != nil || all.Matched != 2 {
		t.Fatalf("dry run of every archived job: %+v %v", all, err)
	}
	pr, err := a.ops.RedriveSelected(a.ctx, admin.Selector{Queue: "default", Reason: "gpu_oom"}, admin.RedriveOptions{DryRun: true})
	if err != nil || pr.Matched != 2 {
		t.Fatalf("redrive dry run of the reason the jobs were archived with: %+v %v, want 2 matched", pr, err)
	}
}
