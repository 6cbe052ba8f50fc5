package flow_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
)

// uniqueParts is the partition count of the queues of these tests.
const uniqueParts = 4

// TestUniqueWithIDPartitioned: on a queue of 4 partitions, jobs with one
// unique key and different caller IDs meet on the unique key's partition,
// ahead of their IDs: only the first is added, the others report the
// holder as a unique duplicate, and no job is left under their IDs on any
// partition. (By ID alone, report-1, report-2 and report-3 hash to three
// different partitions of 4: the regression put each on its own and
// added all three.) A repeat of an ID with the same unique key meets its
// earlier job, and an ID without a unique key still places its job.
func TestUniqueWithIDPartitioned(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: redistest.NewNamespace(t), Partitions: map[string]int{"default": uniqueParts}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := []string{"report-1", "report-2", "report-3"}
	unique := flow.WithUnique("weekly-report", 0, flow.KeepExisting)

	t.Run("one at a time", func(t *testing.T) {
		var first flow.Enqueued
		for i, id := range ids {
			res, err := c.Enqueue(ctx, email{To: id}, flow.WithID(id), unique)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if i == 0 {
				if res.Duplicate || res.Unique || res.ID != "default:"+partitionOf(t, res.ID)+":"+id {
					t.Fatalf("first %s: %+v, want added under its own ID", id, res)
				}
				first = res
				continue
			}
			if !res.Duplicate || !res.Unique || res.ID != first.ID {
				t.Fatalf("%s: %+v, want a unique duplicate of %s", id, res, first.ID)
			}
		}
		assertOnlyHolder(t, c, first.ID, ids)

		// The holder's ID again, with the same unique key: the same
		// partition, so ID idempotency meets the job.
		again, err := c.Enqueue(ctx, email{To: ids[0]}, flow.WithID(ids[0]), unique)
		if err != nil || !again.Duplicate || again.ID != first.ID {
			t.Fatalf("the holder's ID again: %+v %v, want a duplicate of %s", again, err, first.ID)
		}
		// ... and with other arguments: the same job, a conflict.
		if _, err := c.Enqueue(ctx, email{To: "other"}, flow.WithID(ids[0]), unique); !errors.Is(err, flow.ErrConflict) {
			t.Fatalf("the holder's ID with other arguments: %v, want ErrConflict", err)
		}
	})

	t.Run("in one EnqueueMany call", func(t *testing.T) {
		batch := []string{"batch-1", "batch-2", "batch-3"}
		uk := flow.WithUnique("batch-report", 0, flow.KeepExisting)
		items := make([]flow.Item, len(batch))
		for i, id := range batch {
			items[i] = flow.Item{Args: email{To: id}, Opts: []flow.EnqueueOption{flow.WithID(id), uk}}
		}
		res, err := c.EnqueueMany(ctx, items...)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Duplicate || res[0].Err != nil {
			t.Fatalf("first: %+v, want added", res[0])
		}
		for i, r := range res[1:] {
			if !r.Duplicate || !r.Unique || r.ID != res[0].ID || r.Err != nil {
				t.Fatalf("%s: %+v, want a unique duplicate of %s", batch[i+1], r, res[0].ID)
			}
		}
		assertOnlyHolder(t, c, res[0].ID, batch)
	})

	t.Run("ID without a unique key", func(t *testing.T) {
		// Placed by the ID, the same every time: a repeat is idempotent.
		for i := range 8 {
			id := fmt.Sprint("plain-", i)
			first, err := c.Enqueue(ctx, email{To: id}, flow.WithID(id))
			if err != nil || first.Duplicate {
				t.Fatalf("%s: %+v %v", id, first, err)
			}
			again, err := c.Enqueue(ctx, email{To: id}, flow.WithID(id))
			if err != nil || !again.Duplicate || again.Unique || again.ID != first.ID {
				t.Fatalf("%s again: %+v %v, want a duplicate of %s", id, again, err, first.ID)
			}
		}
	})
}

// TestUniqueWithoutIDPartitioned: without WithID, a unique key still places
// its jobs (generated IDs play no part): the first is added, every repeat,
// whatever partition the round-robin is at, is a unique duplicate of it,
// and another key is added.
func TestUniqueWithoutIDPartitioned(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: redistest.NewNamespace(t), Partitions: map[string]int{"default": uniqueParts}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.Enqueue(ctx, email{To: "a"}, flow.WithUnique("weekly-report", 0, flow.KeepExisting))
	if err != nil || first.Duplicate || first.Unique {
		t.Fatalf("first: %+v %v", first, err)
	}
	for i := range 2 * uniqueParts {
		again, err := c.Enqueue(ctx, email{To: fmt.Sprint(i)}, flow.WithUnique("weekly-report", 0, flow.KeepExisting))
		if err != nil || !again.Duplicate || !again.Unique || again.ID != first.ID {
			t.Fatalf("repeat %d: %+v %v, want a unique duplicate of %s", i, again, err, first.ID)
		}
	}
	other, err := c.Enqueue(ctx, email{To: "b"}, flow.WithUnique("monthly-report", 0, flow.KeepExisting))
	if err != nil || other.Duplicate || other.ID == first.ID {
		t.Fatalf("another key: %+v %v", other, err)
	}
	for _, id := range []string{first.ID, other.ID} {
		if _, err := c.Job(ctx, id); err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
	}
}

// assertOnlyHolder checks that holder exists, is the first of ids, and
// that the other ids name no job on any partition of the default queue.
func assertOnlyHolder(t *testing.T, c *flow.Client, holder string, ids []string) {
	t.Helper()
	ctx := context.Background()
	info, err := c.Job(ctx, holder)
	if err != nil {
		t.Fatalf("holder %s: %v", holder, err)
	}
	if want := "default:" + partitionOf(t, holder) + ":" + ids[0]; info.ID != want {
		t.Fatalf("holder is %s, want %s", info.ID, want)
	}
	for _, id := range ids[1:] {
		for p := range uniqueParts {
			ref := fmt.Sprintf("default:%d:%s", p, id)
			if _, err := c.Job(ctx, ref); !errors.Is(err, flow.ErrNotFound) {
				t.Errorf("job %s: %v, want ErrNotFound (a duplicate must add nothing)", ref, err)
			}
		}
	}
}
