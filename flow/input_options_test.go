package flow_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestRegisterInterfaceType: Register with an interface type parameter
// (which satisfies the Args constraint) must be refused with ErrInvalid,
// not panic.
func TestRegisterInterfaceType(t *testing.T) {
	reg := flow.NewRegistry()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Register[flow.Args] panicked: %v; want an ErrInvalid error", r)
			}
		}()
		err = flow.Register(reg, func(context.Context, *flow.Job[flow.Args]) error { return nil })
	}()
	if !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("Register[flow.Args]: %v, want ErrInvalid", err)
	}
}

// TestSentAsHugePartition: SentAs naming a partition the queue does
// not have is ErrInvalid (documented); the largest int as partition
// overflows part = idx+1 and the option is silently ignored: the job is
// added to partition 0 under another ID than the one SentAs named.
func TestSentAsHugePartition(t *testing.T) {
	c, _ := newClient(t, realRedis(t), nil)
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, email{To: "a"}); err != nil { // registers the queue
		t.Fatal(err)
	}
	id := "default:9223372036854775807:abc"
	res, err := c.Enqueue(ctx, email{To: "b"}, flow.SentAs(id))
	if !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("SentAs(%q) on a one-partition queue: %+v, %v; want ErrInvalid (the queue has no such partition)", id, res, err)
	}
}

// TestUniqueHugeTTL: WithUnique with a TTL in the top millisecond of
// time.Duration (math.MaxInt64, a natural "for ever") overflows the
// rounding to milliseconds (msUp) and is stored as no TTL: the key is
// released when the job finishes instead of being held for the TTL.
func TestUniqueHugeTTL(t *testing.T) {
	rdb := realRedis(t)
	c, ns := newClient(t, rdb, nil)
	ctx := context.Background()
	res, err := c.Enqueue(ctx, email{To: "a"}, flow.WithUnique("k", time.Duration(math.MaxInt64), flow.KeepExisting))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, "*"+ns+"*uq:k").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("unique key: %v, %v", keys, err)
	}
	// PTTL in ms as Redis says it: a Duration cannot hold it (the TTL is
	// the largest Duration, rounded up to whole ms)
	ms, err := rdb.Do(ctx, "PTTL", keys[0]).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(math.MaxInt64).Milliseconds() - 60_000; ms < want {
		t.Fatalf("job %s: unique key %s with WithUnique ttl %s has PTTL %d ms: held only until the job finishes, not for the TTL", res.ID, keys[0], time.Duration(math.MaxInt64), ms)
	}
}
