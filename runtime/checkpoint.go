package runtime

import (
	"context"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// flushCheckpoints writes a batch of step checkpoints of one partition.
func (w *Worker) flushCheckpoints(ctx context.Context, p keys.Partition, cs []store.Checkpoint) []store.CheckpointResult {
	return w.st.Checkpoints(ctx, p, cs)
}
