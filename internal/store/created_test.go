package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestCreatedTimeFromID: a job whose generated ID carries a time within
// 50 ms of the store's has no 'ct' field (a smaller pending job) and reads
// back that time; every other job stores the store's time: a generated ID
// from a skewed clock, an ID the caller chose (whatever it looks like) and
// a generated ID without a time in front.
func TestCreatedTimeFromID(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			now := f.clk.Now().Truncate(time.Millisecond)
			close := keys.NewLocalAt(now.Add(-20 * time.Millisecond))
			skewed := keys.NewLocalAt(now.Add(-10 * time.Second))
			chosen := keys.NewLocalAt(now)
			prefixed := "sched:daily:trigger:" + keys.NewLocal()
			f.enqueue(
				store.NewJob{Local: close, Generated: true},
				store.NewJob{Local: skewed, Generated: true},
				store.NewJob{Local: chosen},
				store.NewJob{Local: prefixed, Generated: true},
			)
			for _, c := range []struct {
				id     string
				stored bool
				want   time.Time
			}{
				{close, false, now.Add(-20 * time.Millisecond)},
				{skewed, true, now},
				{chosen, true, now},
				{prefixed, true, now},
			} {
				has, err := f.rdb.HExists(f.ctx, f.p.Job(c.id), "ct").Result()
				if err != nil || has != c.stored {
					t.Errorf("%s: 'ct' stored %v (%v), want %v", c.id, has, err, c.stored)
				}
				if j, _ := f.get(c.id); !j.Created.Equal(c.want) {
					t.Errorf("%s: created %v, want %v", c.id, j.Created, c.want)
				}
			}
		})
	}
}
