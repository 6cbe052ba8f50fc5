package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestDefaultMaxAttemptsNotStored: a job with the default max attempts
// has no keys.FieldMaxAttempts (a smaller pending job), still reads back as the
// default, and is archived at exactly that many returned errors; another
// value is stored and honoured.
func TestDefaultMaxAttemptsNotStored(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "dflt", MaxAttempts: store.DefaultMaxAttempts}, store.NewJob{Local: "two", MaxAttempts: 2})
			if n, err := f.rdb.HExists(f.ctx, f.p.Job("dflt"), keys.FieldMaxAttempts).Result(); err != nil || n {
				t.Fatalf("default job has an 'ma' field (%v)", err)
			}
			for id, ma := range map[string]int{"dflt": store.DefaultMaxAttempts, "two": 2} {
				if j, _ := f.get(id); j.MaxAttempts != ma {
					t.Errorf("%s reads back max attempts %d, want %d", id, j.MaxAttempts, ma)
				}
			}
			fail := func(id string) string {
				t.Helper()
				for {
					for _, j := range f.claim(10, "w").Jobs {
						if j.Local == id {
							return f.ack(j, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x", Delay: time.Second}).State
						}
						f.ack(j, store.Ack{Code: store.CodeOK})
					}
					f.clk.Advance(time.Second)
				}
			}
			for attempt := 1; attempt <= store.DefaultMaxAttempts; attempt++ {
				want := "retryable"
				if attempt == store.DefaultMaxAttempts {
					want = "archived"
				}
				if got := fail("dflt"); got != want {
					t.Fatalf("error %d: job is %s, want %s", attempt, got, want)
				}
				f.clk.Advance(time.Second)
			}
		})
	}
}
