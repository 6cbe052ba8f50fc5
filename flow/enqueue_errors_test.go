package flow_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestEnqueueErrorTexts: Enqueue's error for bad input says what is wrong
// without EnqueueMany's "job N:" (there is one job), EnqueueMany's names
// the bad job's index, and a conflicting ID names the existing job, as a
// *sluicetype.ConflictError that is ErrConflict, from both.
func TestEnqueueErrorTexts(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, realRedis(t), nil)
	ctx := context.Background()

	_, err := c.Enqueue(ctx, email{To: "a"}, flow.WithQueue("bad queue"))
	if !errors.Is(err, flow.ErrInvalid) || strings.Contains(err.Error(), "job 0") ||
		!strings.HasPrefix(err.Error(), "sluice: invalid input") {
		t.Fatalf("Enqueue with a bad queue: %v, want ErrInvalid without a job index", err)
	}
	_, err = c.EnqueueMany(ctx, flow.Item{Args: email{To: "a"}},
		flow.Item{Args: email{To: "b"}, Opts: []flow.EnqueueOption{flow.WithQueue("bad queue")}})
	if !errors.Is(err, flow.ErrInvalid) || !strings.HasPrefix(err.Error(), "job 1: sluice: invalid input") {
		t.Fatalf("EnqueueMany with a bad second job: %v, want it named job 1", err)
	}

	first, err := c.Enqueue(ctx, email{To: "a"}, flow.WithID("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Enqueue(ctx, email{To: "other"}, flow.WithID("order-7"))
	var ce *sluicetype.ConflictError
	if !errors.Is(err, flow.ErrConflict) || !errors.As(err, &ce) || ce.ID != first.ID {
		t.Fatalf("conflicting ID: %v (%#v), want a ConflictError naming %s", err, ce, first.ID)
	}
	if want := "sluice: job " + first.ID + " exists with a different kind or payload"; err.Error() != want {
		t.Fatalf("conflict error %q, want %q", err, want)
	}
	res, err := c.EnqueueMany(ctx, flow.Item{Args: email{To: "b"}},
		flow.Item{Args: email{To: "other"}, Opts: []flow.EnqueueOption{flow.WithID("order-7")}})
	if err != nil || res[0].Err != nil || !errors.As(res[1].Err, &ce) || ce.ID != first.ID {
		t.Fatalf("EnqueueMany with a conflicting ID: %+v, %v; want the second's Err naming %s", res, err, first.ID)
	}
}
