package flow_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestFollowUpsSpreadOverPartitions: unkeyed follow-ups of a queue with
// several partitions do not all land on one (each FollowUp call plans
// with a fresh round-robin, which used to start at the same place).
// Planning a follow-up makes no Redis call.
func TestFollowUpsSpreadOverPartitions(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	st := store.New(rdb, store.Config{NS: "ns"})
	as := attempt.New(st, keys.Ref{Partition: st.Partition("default", 0), Local: "parent"}, store.Lease{}, nil)
	as.Layouts = store.FixedLayouts(st, map[string]int{"default": 4}) // known: planning asks no one
	ctx := attempt.With(context.Background(), as)
	used := map[int]int{}
	for range 64 {
		fx, err := flow.FollowUp(ctx, email{To: "x"})
		if err != nil {
			t.Fatal(err)
		}
		fu, err := store.DecodeFollowUp(fx)
		if err != nil {
			t.Fatal(err)
		}
		used[fu.Partition.Index]++
	}
	if len(used) < 2 {
		t.Errorf("64 follow-ups used partitions %v, want them spread", used)
	}
}
