package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestSignalJobCreated: a signal sent with WithSignalJobCreated reaches
// only the job created then; once that job is deleted and its ID given to
// a new one, the call is refused (an OtherJobError naming the new job's
// creation time) and the new job keeps nothing. A signal without it still
// names the job by ID alone.
func TestSignalJobCreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	testkit.Must(t, err)
	adm := admin.New(c)
	later := flow.WithDelay(time.Hour) // kept waiting: no worker runs here

	id := enqueueID(t, c, squareJob{N: 5}, flow.WithID("order-s"), later)
	first, err := c.Job(ctx, id)
	testkit.Must(t, err)
	testkit.Must(t, c.Signal(ctx, id, "go", 1, flow.WithSignalJobCreated(first.Created)))

	testkit.Must(t, adm.DeleteJob(ctx, id))
	enqueueID(t, laterClient(t, rdb, ns), squareJob{N: 9}, flow.WithID("order-s"), later)
	second, err := c.Job(ctx, id)
	testkit.Must(t, err)
	if second.Created.Equal(first.Created) {
		t.Fatalf("the new job's creation time %v is the old one's", second.Created)
	}

	err = c.Signal(ctx, id, "go", 2, flow.WithSignalJobCreated(first.Created))
	var other *sluicetype.OtherJobError
	if !errors.As(err, &other) || !errors.Is(err, sluicetype.ErrWrongState) || !other.Created.Equal(second.Created) {
		t.Fatalf("signal to the deleted job's creation time: %v, want an OtherJobError created %v", err, second.Created)
	}
	if err := c.Signal(ctx, id, "go", 3, flow.WithSignalJobCreated(time.Time{})); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("WithSignalJobCreated of the zero time: %v, want ErrInvalid", err)
	}
	if info, err := c.Job(ctx, id); err != nil || len(info.Signals) != 0 {
		t.Fatalf("the new job keeps %+v (%v), want no signal", info, err)
	}

	testkit.Must(t, c.Signal(ctx, id, "go", 4, flow.WithSignalJobCreated(second.Created)))
	testkit.Must(t, c.Signal(ctx, id, "go", 5)) // by ID alone, as before
	if info, err := c.Job(ctx, id); err != nil || len(info.Signals) != 2 {
		t.Fatalf("the new job keeps %+v (%v), want two signals", info.Signals, err)
	}
}
