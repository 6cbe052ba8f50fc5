package flow_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/flow"
)

type argsDedup struct{ N int }

func (argsDedup) Kind() string { return "args_dedup" }

// Defaults: unique by arguments, unless the call says otherwise.
func (argsDedup) Defaults() []flow.EnqueueOption {
	return []flow.EnqueueOption{flow.WithUniqueArgs(0, flow.KeepExisting)}
}

// TestUniqueKeyOverridesUniqueArgs: options given with a job apply
// after its kind's Defaults "and so override them" (ArgsWithDefaults), and
// of two options the last wins. A job whose Defaults set WithUniqueArgs,
// enqueued with WithUnique("tenant-7", ...), keeps the derived key (the
// uniqueArgs flag set by the default is never cleared): the explicit key
// is silently ignored, and two jobs with that key and other arguments are
// both added.
func TestUniqueKeyOverridesUniqueArgs(t *testing.T) {
	c, _ := newClient(t, realRedis(t), nil)
	ctx := context.Background()
	a, err := c.Enqueue(ctx, argsDedup{N: 1}, flow.WithUnique("tenant-7", 0, flow.KeepExisting))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Enqueue(ctx, argsDedup{N: 2}, flow.WithUnique("tenant-7", 0, flow.KeepExisting))
	if err != nil {
		t.Fatal(err)
	}
	if !b.Duplicate || b.ID != a.ID {
		t.Fatalf("second job with unique key tenant-7: %+v; want a duplicate of %s (the explicit key overrides the kind's WithUniqueArgs default)", b, a.ID)
	}
	// the same without Defaults, in one call's options
	c2, _ := newClient(t, realRedis(t), nil)
	x, err := c2.Enqueue(ctx, email{To: "x"}, flow.WithUniqueArgs(0, flow.KeepExisting), flow.WithUnique("k", 0, flow.KeepExisting))
	if err != nil {
		t.Fatal(err)
	}
	y, err := c2.Enqueue(ctx, email{To: "y"}, flow.WithUnique("k", 0, flow.KeepExisting))
	if err != nil {
		t.Fatal(err)
	}
	if !y.Duplicate || y.ID != x.ID {
		t.Fatalf("WithUniqueArgs then WithUnique(\"k\"): the job holds another key; a job with key k: %+v, want a duplicate of %s", y, x.ID)
	}
}
