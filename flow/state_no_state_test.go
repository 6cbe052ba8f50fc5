package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// jobOfNoState makes a client of a fresh namespace on a real Redis and
// the ID of a finished (archived, in its index) job whose state field
// was overwritten with a value that names no state (written by hand,
// another tool): corrupt data.
func jobOfNoState(t *testing.T) (*flow.Client, string) {
	t.Helper()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := c.Enqueue(ctx, dmJob{N: 1}, flow.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := keys.ParseRef(ns, res.ID)
	st := store.New(rdb, store.Config{NS: ns, RetainArchived: time.Hour, CrashLimit: 3})
	cl, err := st.Claim(ctx, ref.Partition, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "n"})
	if err != nil || len(cl.Jobs) != 1 {
		t.Fatalf("claim: %+v, %v", cl, err)
	}
	j := cl.Jobs[0]
	ack := store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom",
		Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}}
	if _, _, err := st.Ack(ctx, ref.Partition, []store.Ack{ack}); err != nil {
		t.Fatal(err)
	}
	if info, err := c.Job(ctx, res.ID); err != nil || info.State != flow.StateArchived {
		t.Fatalf("before the corruption: %+v, %v", info, err)
	}
	if err := rdb.HSet(ctx, ref.Job(ref.Local), "s", "bogus").Err(); err != nil {
		t.Fatal(err)
	}
	return c, res.ID
}

// TestJobWhoseStateNamesNoStateIsMalformed: Job of a job whose state
// field names none of flow.States answers ErrMalformed (docs/errors.md:
// data read from Redis that is not a valid job), not a JobInfo whose
// State is no state, with no error.
func TestJobWhoseStateNamesNoStateIsMalformed(t *testing.T) {
	t.Parallel()
	c, id := jobOfNoState(t)
	j, err := c.Job(context.Background(), id)
	if !errors.Is(err, flow.ErrMalformed) {
		state := ""
		if j != nil {
			state = j.State
		}
		t.Fatalf("Job(%s) of a job whose state field names no state: state %q, %v; want ErrMalformed", id, state, err)
	}
}

// TestWaitOnJobWhoseStateNamesNoState: Wait on such a job returns
// ErrMalformed at once, as it does for a job key of another type, rather
// than watch it until ctx ends: no worker ever finishes a job whose state
// it cannot read (a claim or a lease reap archives one only from the
// ready, due or running indexes).
func TestWaitOnJobWhoseStateNamesNoState(t *testing.T) {
	t.Parallel()
	c, id := jobOfNoState(t)
	wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.Wait(wctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Fatalf("Wait(%s) on a job whose state field names no state: %v after %v; want ErrMalformed at once", id, err, time.Since(start).Round(time.Millisecond))
	}
}
