package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

type huntJob struct{ N int }

func (huntJob) Kind() string { return "hunt" }

// TestHuntWaitAtNewerDataModel: Wait on a job whose partition a newer
// release has raised to its data model. The watch script refuses the
// partition with ErrNewerDataModel, a refusal no retry can change (only
// upgrading the process does); Wait took it for Redis being unreachable
// and retried it every WaitPoll until ctx ended, so the caller got
// context.DeadlineExceeded (or hung, with a context that never ends)
// instead of the typed error docs/errors.md promises.
func TestHuntWaitAtNewerDataModel(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := c.Enqueue(ctx, huntJob{N: 1})
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
}

// TestHuntWaitOnJobKeyOfAnotherType: Wait on a job whose key holds
// another type than a hash (written by hand, another tool): the watch
// script's refusal of the key (WRONGTYPE, which no retry changes) was
// taken for Redis being unreachable and retried until ctx ended, where
// docs/errors.md promises ErrMalformed (and Wait returns ErrMalformed
// when its read of a job finds it so).
func TestHuntWaitOnJobKeyOfAnotherType(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, huntJob{N: 1}); err != nil { // registers the queue
		t.Fatal(err)
	}
	p := keys.Partition{NS: ns, Queue: "default", Index: 0}
	if err := rdb.Set(ctx, p.Job("bad"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	id := keys.Ref{Partition: p, Local: "bad"}.String()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Wait(wctx, id)
	if !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("Wait(%s) on a job key that is not a hash: %v after %v; want ErrMalformed at once", id, err, time.Since(start).Round(time.Millisecond))
	}
}

// TestHuntJobOfAnotherTypeIsMalformed: docs/errors.md: ErrMalformed is
// "data read from Redis is not a valid job ... also an operator's call on
// a job whose key holds another type than a hash (Redis's WRONGTYPE)".
// Job (flow.Client.Job, admin.Client.Job, `sluice jobs show`, the
// console's job page) of such a job returned Redis's bare WRONGTYPE
// reply, matching no sentinel, while an operator's cancel of the same job
// answers ErrMalformed.
func TestHuntJobOfAnotherTypeIsMalformed(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, huntJob{N: 1}); err != nil { // registers the queue
		t.Fatal(err)
	}
	p := keys.Partition{NS: ns, Queue: "default", Index: 0}
	if err := rdb.Set(ctx, p.Job("bad"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	id := keys.Ref{Partition: p, Local: "bad"}.String()
	if _, err := admin.New(c).CancelJob(ctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("CancelJob(%s): %v, want ErrMalformed (the documented answer)", id, err)
	}
	if _, err := c.Job(ctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("Job(%s) of a job key that is not a hash: %v; want ErrMalformed, as CancelJob of it answers", id, err)
	}
}
