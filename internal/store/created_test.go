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
				has, err := f.rdb.HExists(f.ctx, f.p.Job(c.id), keys.FieldCreated).Result()
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

// TestListKeyOfCreatedFromID: listing available jobs orders them by
// priority, then created time, also for jobs whose created time comes
// from their ID (no 'ct'): the later job's sort key is the higher, across
// partitions too (flow's listing merges partitions by these keys).
func TestListKeyOfCreatedFromID(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			early := keys.NewLocalAt(f.clk.Now())
			f.enqueue(store.NewJob{Local: early, Generated: true})
			f.clk.Advance(time.Hour)
			other := f.st.Partition("q", 1)
			late := keys.NewLocalAt(f.clk.Now())
			if _, err := f.st.Enqueue(f.ctx, other, []store.NewJob{{Local: late, Generated: true, Kind: "k", Payload: []byte("p"), MaxAttempts: store.DefaultMaxAttempts}}); err != nil {
				t.Fatal(err)
			}
			key := func(p keys.Partition) float64 {
				t.Helper()
				page, err := f.st.List(f.ctx, p, "available", "", 10, 100, "")
				if err != nil || len(page.Entries) != 1 {
					t.Fatalf("list: %+v %v", page, err)
				}
				return page.Entries[0].Key
			}
			if k0, k1 := key(f.p), key(other); k0 >= k1 || k0 != float64(f.clk.Now().Add(-time.Hour).UnixMilli()) {
				t.Errorf("keys: earlier job %.0f, later job %.0f; want the earlier one's created time, and lower", k0, k1)
			}
		})
	}
}
