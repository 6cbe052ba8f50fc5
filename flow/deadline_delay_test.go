package flow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestDeadlineNotAfterDelayRefused: a job whose WithDelay makes it due at
// or after its WithDeadline could never run, as one whose WithRunAt does.
// The delay counts from the store's clock, which only the enqueue script
// reads: it refuses the job there (ErrInvalid, naming both times) and
// writes nothing for it. In EnqueueMany the refusal is that job's alone:
// the others are added. Before, the job was added and archived
// deadline_exceeded when it came due, never run.
func TestDeadlineNotAfterDelayRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := realRedis(t)
	c, ns := newClient(t, rdb, nil)
	res, err := c.Enqueue(ctx, email{To: "never"}, flow.WithDelay(time.Hour), flow.WithDeadline(time.Now().Add(time.Minute)))
	if !errors.Is(err, flow.ErrInvalid) || !strings.Contains(err.Error(), "deadline") || !strings.Contains(err.Error(), "due time") {
		t.Fatalf("delay 1h, deadline in 1m: %+v %v, want ErrInvalid naming the deadline and the due time", res, err)
	}
	if n := len(rdb.Keys(ctx, "{"+ns+":*:j:*").Val()); n != 0 {
		t.Fatalf("%d job keys after the refused enqueue", n)
	}
	many, err := c.EnqueueMany(ctx,
		flow.Item{Args: email{To: "a"}, Opts: []flow.EnqueueOption{flow.WithDelay(time.Hour), flow.WithDeadline(time.Now().Add(2 * time.Hour))}},
		flow.Item{Args: email{To: "b"}, Opts: []flow.EnqueueOption{flow.WithDelay(time.Hour), flow.WithDeadline(time.Now().Add(time.Minute))}},
		flow.Item{Args: email{To: "c"}},
	)
	if !errors.Is(err, flow.ErrInvalid) || len(many) != 3 {
		t.Fatalf("EnqueueMany: %+v %v, want the second job refused (ErrInvalid), the others added", many, err)
	}
	if many[0].Err != nil || many[2].Err != nil || !errors.Is(many[1].Err, flow.ErrInvalid) {
		t.Fatalf("EnqueueMany: %+v, want the second job alone refused (ErrInvalid)", many)
	}
	if n := len(rdb.Keys(ctx, "{"+ns+":*:j:*").Val()); n != 2 {
		t.Fatalf("%d job keys, want the 2 jobs added", n)
	}
}
