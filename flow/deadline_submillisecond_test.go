package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestDeadlineWithinRunTimesMillisecondRefused: the store keeps a run time
// rounded up to a whole millisecond and a deadline rounded down, and a
// claim archives a job whose deadline is at or before the store time
// (deadline_exceeded). A deadline after the run time but within its
// millisecond (or the next one's start) is stored at or before the run
// time: the job could never run, which WithDeadline says is refused. It is
// refused (ErrInvalid) and nothing is written.
func TestDeadlineWithinRunTimesMillisecondRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := realRedis(t)
	c, ns := newClient(t, rdb, nil)
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for _, tc := range []struct{ run, dl time.Time }{
		{at, at.Add(500 * time.Microsecond)},                             // stored: run at, deadline at
		{at.Add(300 * time.Microsecond), at.Add(900 * time.Microsecond)}, // stored: run at+1ms, deadline at
		{at.Add(300 * time.Microsecond), at.Add(time.Millisecond)},       // stored: run at+1ms, deadline at+1ms
	} {
		if res, err := c.Enqueue(ctx, email{To: "never"}, flow.WithRunAt(tc.run), flow.WithDeadline(tc.dl)); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("run at %v, deadline %v: %+v %v, want ErrInvalid (it could never run)", tc.run, tc.dl, res, err)
		}
	}
	if n := len(rdb.Keys(ctx, "{"+ns+":*:j:*").Val()); n != 0 {
		t.Fatalf("%d job keys after the refused enqueues", n)
	}
	if _, err := c.Enqueue(ctx, email{To: "soon"}, flow.WithRunAt(at.Add(300*time.Microsecond)), flow.WithDeadline(at.Add(2*time.Millisecond))); err != nil {
		t.Fatalf("a deadline in the millisecond after the run time's: %v", err)
	}
}
