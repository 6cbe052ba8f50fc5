package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestRunTimeNeverEarly: a run time or delay a fraction of a millisecond
// past a whole one is kept rounded up, as timers' wake times are (the
// store keeps whole milliseconds): a job is never due before the time it
// was given. Rounded down, it was promoted up to a millisecond early.
func TestRunTimeNeverEarly(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			at := epoch.Add(time.Second + 400*time.Microsecond)
			f.enqueue(store.NewJob{Local: "at", RunAt: at}, store.NewJob{Local: "after", Delay: time.Second + 400*time.Microsecond})
			for _, id := range []string{"at", "after"} {
				if due, ok := f.due(id); !ok || due != float64(epoch.Add(1001*time.Millisecond).UnixMilli()) {
					t.Errorf("%s due at %v (%v), want %d: rounded up", id, due, ok, epoch.Add(1001*time.Millisecond).UnixMilli())
				}
			}
		})
	}
}
