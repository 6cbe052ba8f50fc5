package runtime

import (
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// ArchivedAtClaim exposes the claim path's death hook to tests.
func (w *Worker) ArchivedAtClaim(p keys.Partition, parked []store.Parked) {
	w.archivedAtClaim(p, parked)
}

// InflightCount is the number of attempts not yet retired.
func (w *Worker) InflightCount() int { return w.inflightCount() }
