package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestRetentionRecord: a worker's store records its retention for the
// queues it serves, and a reader finds it; a worker that started later
// replaces it; a queue with none is not an error (ok false: old workers,
// or none yet); a value that is not a retention is an EntryError naming
// the queue.
func TestRetentionRecord(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			started := epoch.Add(-time.Minute)
			recordAll(t, f.st, f.ctx, []string{"mail", "reports"}, "w:1", started)
			want := store.Retention{Queue: "mail", Completed: retainCompleted, Archived: retainArchived,
				Cancelled: retainCancelled, Worker: "w:1", Started: started}
			got, ok, err := f.st.ReadRetention(f.ctx, "mail")
			if d := cmp.Diff(want, got); err != nil || !ok || d != "" {
				t.Fatalf("read back (%v, %v): -want +got\n%s", ok, err, d)
			}

			// a worker that started later, discarding completed jobs
			later := store.New(f.rdb, store.Config{NS: f.st.NS(), RetainCompleted: -1, RetainArchived: time.Hour,
				RetainCancelled: 3 * time.Hour})
			recordAll(t, later, f.ctx, []string{"mail"}, "w2", epoch)
			got, _, _ = f.st.ReadRetention(f.ctx, "mail")
			want = store.Retention{Queue: "mail", Completed: -1, Archived: time.Hour, Cancelled: 3 * time.Hour,
				Worker: "w2", Started: epoch}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("after a later worker: -want +got\n%s", d)
			}
			if got, _, _ := f.st.ReadRetention(f.ctx, "reports"); got.Worker != "w:1" {
				t.Errorf("reports recorded by %q, want w:1 (the later worker does not serve it)", got.Worker)
			}

			if _, ok, err := f.st.ReadRetention(f.ctx, "never"); ok || err != nil {
				t.Errorf("a queue with no record: ok %v, err %v; want false, nil", ok, err)
			}
			must(t, f.rdb.HSet(f.ctx, keys.Retention(f.st.NS()), "broken", "1:2").Err())
			_, ok, err = f.st.ReadRetention(f.ctx, "broken")
			var ee *store.EntryError
			if ok || !errors.As(err, &ee) || ee.Name != "broken" || !errors.Is(err, store.ErrMalformed) {
				t.Errorf("a corrupt record: ok %v, err %v; want an EntryError naming it, ErrMalformed", ok, err)
			}
		})
	}
}

// TestDecodeRetention: what a record may hold, and what it may not.
func TestDecodeRetention(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli
	for v, want := range map[string]store.Retention{
		"1000:2000:3000:5:w": {Queue: "q", Completed: time.Second, Archived: 2 * time.Second, Cancelled: 3 * time.Second,
			Worker: "w", Started: at(5)},
		"-1:1:0:0:host:1:abc":  {Queue: "q", Completed: -1, Archived: time.Millisecond, Worker: "host:1:abc", Started: at(0)},
		"0:0:604800000:0:w-xy": {Queue: "q", Cancelled: 7 * 24 * time.Hour, Worker: "w-xy", Started: at(0)},
	} {
		got, err := store.DecodeRetention("q", v)
		if d := cmp.Diff(want, got); err != nil || d != "" {
			t.Errorf("%q: %v, -want +got\n%s", v, err, d)
		}
	}
	for _, v := range []string{"", "1:2:3:4", "1:2:3:4:", "a:2:3:4:w", "1:-2:3:4:w", "1:2:3:-1:w", "01:2:3:4:w",
		"1:2:99999999999999999:4:w", "1:2: 3:4:w", "1.5:2:3:4:w"} {
		if _, err := store.DecodeRetention("q", v); !errors.Is(err, store.ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", v, err)
		}
	}
}
