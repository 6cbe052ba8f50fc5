package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestResizeToItsCountRacingAResize: `queues resize Q 4` that read 4
// partitions, with 2 and 3 retired by a shrink under way, and called the
// resize after that shrink was recorded (2 partitions), grew the queue
// back to 4, and said "big has 4 partitions already; brought back ..."
// (--json "changed": false), no restart asked for, though the count had
// changed under the workers restarted for the shrink. It says it resized.
// Not parallel: it sets beforeTakeBack.
func TestResizeToItsCountRacingAResize(t *testing.T) {
	f := newFixture(t)
	if _, _, err := f.st.RegisterLayout(f.ctx, "big", 4); err != nil {
		t.Fatal(err)
	}
	f.must("queues", "pause", "big")
	for _, i := range []int{2, 3} { // the other operator's shrink to 2, under way
		testkit.Must(t, f.st.Retire(f.ctx, f.st.Partition("big", i)))
	}
	beforeTakeBack = func() { testkit.Must(t, admin.New(f.c).ResizeQueue(f.ctx, "big", 2)) } // ... and recorded
	t.Cleanup(func() { beforeTakeBack = func() {} })
	out, errs, code := f.sluice("--json", "queues", "resize", "big", "4")
	if code != exitOK || !strings.Contains(out, `"changed": true`) {
		t.Fatalf("resize to 4 racing a shrink to 2: exit %d, stdout %s, stderr %q; want it said changed", code, out, errs)
	}
	if lay, err := admin.New(f.c).QueueLayout(f.ctx, "big"); err != nil || lay.Partitions != 4 {
		t.Fatalf("layout after: %+v %v", lay, err)
	}
}
