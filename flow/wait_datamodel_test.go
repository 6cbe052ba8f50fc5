package flow_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
)

type dmJob struct{ N int }

func (dmJob) Kind() string { return "dm-test" }

// TestWaitAtNewerDataModel: Wait on a job whose partition a newer
// release has raised to its data model returns ErrNewerDataModel at
// once: the watch script's refusal is one no retry changes (only
// upgrading the process does), unlike an unreachable Redis, which Wait
// retries until ctx ends.
func TestWaitAtNewerDataModel(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := c.Enqueue(ctx, dmJob{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := keys.Partition{NS: ns, Queue: "default", Index: 0}
	if err := rdb.Set(ctx, p.DataModel(), store.DataModel+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Wait(wctx, e.ID)
	if !errors.Is(err, flow.ErrNewerDataModel) {
		t.Fatalf("Wait(%s) on a partition at a newer data model: %v after %v; want ErrNewerDataModel at once", e.ID, err, time.Since(start).Round(time.Millisecond))
	}
	if _, err := flow.Result[int](wctx, c, e.ID); !errors.Is(err, flow.ErrNewerDataModel) {
		t.Fatalf("Result(%s) on a partition at a newer data model: %v; want ErrNewerDataModel at once", e.ID, err)
	}
}

// TestWaitRefusedDuringTheWait: a Wait in progress whose job becomes
// unreadable to this release (a newer release raises its partition's
// data model; its key is overwritten with another type) returns the
// typed error once its poll finds it: the poll reads such a job as gone,
// so that the waiter reads it and learns why, and one unreadable job
// does not fail the poll of the others.
func TestWaitRefusedDuringTheWait(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, ns := waitClient(t, rdb, map[string]int{"default": 2}, 50*time.Millisecond)
	ctx := context.Background()
	var ids [2]string
	for i := 0; ids[0] == "" || ids[1] == ""; i++ { // one job on each partition
		id := enqueueID(t, c, dmJob{N: i}, flow.WithPartitionKey(fmt.Sprint("k", i)))
		ref, _ := keys.ParseRef(ns, id)
		if ids[ref.Index] == "" {
			ids[ref.Index] = id
		}
	}
	newer := waitAsync(ctx, c, ids[0])
	other := waitAsync(ctx, c, ids[1])
	awaitWatched(t, rdb, ns, ids[0])
	awaitWatched(t, rdb, ns, ids[1])

	ref0, _ := keys.ParseRef(ns, ids[0])
	testkit.Must(t, rdb.Set(ctx, ref0.DataModel(), store.DataModel+1, 0).Err())
	if o := testkit.Recv(t, newer, "the Wait at a newer data model"); !errors.Is(o.err, flow.ErrNewerDataModel) {
		t.Fatalf("Wait(%s) when its partition's model was raised: %v, want ErrNewerDataModel", ids[0], o.err)
	}
	ref1, _ := keys.ParseRef(ns, ids[1])
	// one SET: a DEL before it let a poll between them find the job gone
	testkit.Must(t, rdb.Set(ctx, ref1.Job(ref1.Local), "not a hash", 0).Err())
	if o := testkit.Recv(t, other, "the Wait on a key of another type"); !errors.Is(o.err, flow.ErrMalformed) {
		t.Fatalf("Wait(%s) when its key was overwritten with a string: %v, want ErrMalformed", ids[1], o.err)
	}
}

// jobOfAnotherType makes a client of a fresh namespace on a real Redis
// and the ID of a job of its default queue whose key holds a string.
func jobOfAnotherType(t *testing.T) (*flow.Client, string) {
	t.Helper()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, dmJob{N: 1}); err != nil { // registers the queue
		t.Fatal(err)
	}
	p := keys.Partition{NS: ns, Queue: "default", Index: 0}
	if err := rdb.Set(ctx, p.Job("bad"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	return c, keys.Ref{Partition: p, Local: "bad"}.String()
}

// TestWaitOnJobKeyOfAnotherType: Wait on a job whose key holds another
// type than a hash (written by hand, another tool) returns ErrMalformed
// at once (docs/errors.md), not retrying the watch script's WRONGTYPE
// until ctx ends.
func TestWaitOnJobKeyOfAnotherType(t *testing.T) {
	t.Parallel()
	c, id := jobOfAnotherType(t)
	ctx := context.Background()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.Wait(wctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("Wait(%s) on a job key that is not a hash: %v after %v; want ErrMalformed at once", id, err, time.Since(start).Round(time.Millisecond))
	}
}

// TestJobOfAnotherTypeIsMalformed: docs/errors.md: ErrMalformed is
// "data read from Redis is not a valid job ... also an operator's call on
// a job whose key holds another type than a hash (Redis's WRONGTYPE)".
// Job (flow.Client.Job, admin.Client.Job, `sluice jobs show`, the
// console's job page) of such a job answers it, as an operator's cancel
// of the same job does, not Redis's bare WRONGTYPE.
func TestJobOfAnotherTypeIsMalformed(t *testing.T) {
	t.Parallel()
	c, id := jobOfAnotherType(t)
	ctx := context.Background()
	if _, err := admin.New(c).CancelJob(ctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("CancelJob(%s): %v, want ErrMalformed (the documented answer)", id, err)
	}
	if _, err := c.Job(ctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("Job(%s) of a job key that is not a hash: %v; want ErrMalformed, as CancelJob of it answers", id, err)
	}
}
