package flow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// invoice declares its defaults; its priority depends on its arguments.
type invoice struct{ Urgent bool }

func (invoice) Kind() string { return "invoice" }

func (i invoice) Defaults() []flow.EnqueueOption {
	prio := 1
	if i.Urgent {
		prio = 7
	}
	return []flow.EnqueueOption{
		flow.WithQueue("billing"), flow.WithMaxAttempts(4), flow.WithTimeout(time.Minute), flow.WithPriority(prio),
	}
}

// badDefaults declares an invalid default and one that sets an ID.
type badDefaults struct{ ID bool }

func (badDefaults) Kind() string { return "bad_defaults" }

func (b badDefaults) Defaults() []flow.EnqueueOption {
	if b.ID {
		return []flow.EnqueueOption{flow.WithID("same-for-all")}
	}
	return []flow.EnqueueOption{flow.WithMaxAttempts(-1)}
}

// TestKindDefaults: a type's Defaults apply to every job of it, options
// given at enqueue override them, they may depend on the arguments, and a
// bad default fails the enqueue with an error naming the kind, adding
// nothing.
func TestKindDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	c, err := flow.NewClient(rdb, flow.ClientOptions{Partitions: map[string]int{"billing": 1, "urgent": 1}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(id string) *flow.JobInfo {
		t.Helper()
		j, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}

	plain, err := c.Enqueue(ctx, invoice{})
	if err != nil {
		t.Fatal(err)
	}
	if j := get(plain.ID); j.Queue != "billing" || j.MaxAttempts != 4 || j.Timeout != time.Minute || j.Priority != 1 {
		t.Errorf("defaults not applied: queue %s, max %d, timeout %s, priority %d", j.Queue, j.MaxAttempts, j.Timeout, j.Priority)
	}
	if j := get(mustEnqueue(t, c, invoice{Urgent: true}).ID); j.Priority != 7 {
		t.Errorf("argument-dependent default: priority %d, want 7", j.Priority)
	}
	over := mustEnqueue(t, c, invoice{}, flow.WithQueue("urgent"), flow.WithMaxAttempts(9), flow.WithPriority(0))
	if j := get(over.ID); j.Queue != "urgent" || j.MaxAttempts != 9 || j.Priority != 0 || j.Timeout != time.Minute {
		t.Errorf("enqueue options must override defaults: queue %s, max %d, priority %d, timeout %s", j.Queue, j.MaxAttempts, j.Priority, j.Timeout)
	}

	before := rdb.DBSize(ctx).Val()
	for _, args := range []flow.Args{badDefaults{}, badDefaults{ID: true}} {
		_, err := c.Enqueue(ctx, args)
		if !errors.Is(err, flow.ErrInvalid) || !strings.Contains(err.Error(), "defaults of kind bad_defaults") {
			t.Errorf("%+v: want ErrInvalid naming the kind's defaults, got %v", args, err)
		}
	}
	if _, err := c.Enqueue(ctx, badDefaults{}, flow.WithID("x")); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("a bad default must fail even when the job sets an ID: %v", err)
	}
	if after := rdb.DBSize(ctx).Val(); after != before {
		t.Errorf("refused enqueues wrote keys: %d before, %d after", before, after)
	}
}

// TestKindDefaultsReachFollowUps: a follow-up is planned with its type's
// defaults too (a spawned child goes through the same planner).
func TestKindDefaultsReachFollowUps(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	st := store.New(rdb, store.Config{NS: "ns"})
	as := attempt.New(st, keys.Ref{Partition: st.Partition("default", 0), Local: "parent"}, store.Lease{}, nil)
	as.Layouts = store.OfflineLayouts(st) // planning asks no one
	ctx := attempt.With(context.Background(), as)
	fx, err := flow.FollowUp(ctx, invoice{Urgent: true})
	if err != nil {
		t.Fatal(err)
	}
	fu, err := store.DecodeFollowUp(fx)
	if err != nil {
		t.Fatal(err)
	}
	if fu.Partition.Queue != "billing" || fu.Job.MaxAttempts != 4 || fu.Job.Priority != 7 || fu.Job.Timeout != time.Minute {
		t.Errorf("follow-up planned without its defaults: queue %s, %+v", fu.Partition.Queue, fu.Job)
	}
}

func mustEnqueue(t *testing.T, c *flow.Client, args flow.Args, opts ...flow.EnqueueOption) flow.Enqueued {
	t.Helper()
	r, err := c.Enqueue(context.Background(), args, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
