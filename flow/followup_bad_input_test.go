package flow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestFollowUpWithIDRegistersNoQueue: a follow-up given WithID is
// ErrInvalid, and writes nothing: not even the registration of the new
// queue it names. The ID was checked only after the job was placed,
// which registered the queue.
func TestFollowUpWithIDRegistersNoQueue(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	st := store.New(rdb, store.Config{NS: ns})
	as := attempt.New(st, keys.Ref{Partition: st.Partition("default", 0), Local: "parent"}, store.Lease{}, nil)
	as.Layouts = store.NewLayouts(st, nil)
	_, err := flow.FollowUp(attempt.With(ctx, as), email{To: "x"}, flow.WithQueue("fu-new-queue"), flow.WithID("mine"))
	if !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("FollowUp with WithID: %v, want ErrInvalid", err)
	}
	if _, err := st.ReadLayout(ctx, "fu-new-queue"); !errors.Is(err, sluicetype.ErrQueueNotFound) {
		t.Fatalf("the refused follow-up's queue: %v, want ErrQueueNotFound (not registered)", err)
	}
}
