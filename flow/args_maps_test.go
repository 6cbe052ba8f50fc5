package flow_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/flow"
)

// mapArgs carries maps: Go iterates a map in random order, and msgpack
// writes most maps in that order.
type mapArgs struct {
	Labels map[string]string
	Counts map[string]int
}

func (mapArgs) Kind() string { return "map_args" }

func newMapArgs() mapArgs {
	a := mapArgs{Labels: map[string]string{}, Counts: map[string]int{}}
	for i := range 8 {
		a.Labels[fmt.Sprintf("k%d", i)] = "v"
		a.Counts[fmt.Sprintf("c%d", i)] = i
	}
	return a
}

// TestArgsWithMapsMeetTheirRepeats: equal arguments that hold maps are
// equal bytes, so a repeat of an idempotent ID is a duplicate (not
// ErrConflict), and WithUniqueArgs meets the job of equal arguments.
// Before, each enqueue encoded the maps in a random order: the repeat
// was refused as a conflict, and the unique key differed.
func TestArgsWithMapsMeetTheirRepeats(t *testing.T) {
	c, _ := newClient(t, realRedis(t), nil)
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, newMapArgs(), flow.WithID("order-1")); err != nil {
		t.Fatal(err)
	}
	first, err := c.Enqueue(ctx, newMapArgs(), flow.WithUniqueArgs(0, flow.KeepExisting))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		e, err := c.Enqueue(ctx, newMapArgs(), flow.WithID("order-1"))
		if errors.Is(err, flow.ErrConflict) || err == nil && !e.Duplicate {
			t.Fatalf("repeat %d of WithID(order-1), equal arguments: %+v %v; want a duplicate", i, e, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		e, err = c.Enqueue(ctx, newMapArgs(), flow.WithUniqueArgs(0, flow.KeepExisting))
		if err != nil || !e.Duplicate || e.ID != first.ID {
			t.Fatalf("enqueue %d of equal arguments with WithUniqueArgs: %+v %v; want a duplicate of %s", i, e, err, first.ID)
		}
	}
}
