package runtime

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDeathKeepOutlivesGraceAndHold: an archived or quarantined job, kept
// at least store.DeathKeep whatever its retention, outlives the grace
// before any worker may take its death report (30 s, lua DEATH_GRACE)
// plus one taker's hold, deathHold, with time to spare: deleting the job
// deletes its report.
func TestDeathKeepOutlivesGraceAndHold(t *testing.T) {
	const grace = 30 * time.Second
	if store.DeathKeep < grace+deathHold+grace {
		t.Errorf("DeathKeep %v, want at least the grace %v, a hold %v and a grace again", store.DeathKeep, grace, deathHold)
	}
}
