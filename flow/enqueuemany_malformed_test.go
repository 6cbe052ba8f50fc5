package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
)

// TestEnqueueManyMalformedIsAnError: a job of an EnqueueMany call that
// was not added (its unique key holds another type: ErrMalformed) makes
// the call's error say so, as a failed partition call does: a caller
// that checks the error alone must not believe every job was added. The
// others are added; a conflict alone is still answered in its Err only.
func TestEnqueueManyMalformedIsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := realRedis(t)
	c, ns := newClient(t, rdb, nil)
	if err := rdb.RPush(ctx, keys.Partition{NS: ns, Queue: "default"}.Unique("promo"), "junk").Err(); err != nil {
		t.Fatal(err)
	}
	res, err := c.EnqueueMany(ctx,
		flow.Item{Args: email{To: "a"}},
		flow.Item{Args: email{To: "b"}, Opts: []flow.EnqueueOption{flow.WithUnique("promo", time.Hour, flow.KeepExisting)}},
	)
	if !errors.Is(err, flow.ErrMalformed) || len(res) != 2 {
		t.Fatalf("EnqueueMany: %v (%d results), want an error wrapping ErrMalformed and both results", err, len(res))
	}
	if res[0].Err != nil || !errors.Is(res[1].Err, flow.ErrMalformed) {
		t.Errorf("results: %+v", res)
	}
	if _, err := c.Job(ctx, res[0].ID); err != nil {
		t.Errorf("job 0 was not added: %v", err)
	}
	if _, err := c.Job(ctx, res[1].ID); !errors.Is(err, flow.ErrNotFound) {
		t.Errorf("job 1: %v, want ErrNotFound", err)
	}
	// a conflict alone stays in its job's Err
	if _, err := c.Enqueue(ctx, email{To: "c"}, flow.WithID("taken")); err != nil {
		t.Fatal(err)
	}
	res, err = c.EnqueueMany(ctx, flow.Item{Args: email{To: "d"}, Opts: []flow.EnqueueOption{flow.WithID("taken")}})
	if err != nil || !errors.Is(res[0].Err, flow.ErrConflict) {
		t.Errorf("a conflict: %v, %+v", err, res)
	}
}
