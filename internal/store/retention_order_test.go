package store_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// recordAll records st's retention for queues and fails the test unless
// every one was written (none left to a worker that started later).
func recordAll(t *testing.T, st *store.Store, ctx context.Context, queues []string, worker string, started time.Time) {
	t.Helper()
	newer, err := st.RecordRetention(ctx, queues, worker, started)
	if err != nil || len(newer) != 0 {
		t.Fatalf("recording %s's retention for %v: left %v, %v", worker, queues, newer, err)
	}
}

// rawRetention is the value of queue's field in the retention hash, ""
// when there is none.
func (f *fixture) rawRetention(queue string) string {
	f.t.Helper()
	v, err := f.rdb.HGet(f.ctx, keys.Retention(f.st.NS()), queue).Result()
	if err != nil && err.Error() != "redis: nil" {
		f.t.Fatal(err)
	}
	return v
}

// TestRetentionLateWriteKeepsNewerRecord: worker A starts with the old
// configuration and its write fails; worker B starts a minute later with
// a new one (a deploy) and records it; A's maintenance loop then writes
// its record again and succeeds. The record must stay B's, the worker
// that started last: it was A's, the last to write, whose configuration
// the deploy replaced. A's queue that B does not serve gets A's record.
func TestRetentionLateWriteKeepsNewerRecord(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			aStarted := epoch.Add(-time.Minute) // A's write at this time failed
			deploy := store.New(f.rdb, store.Config{NS: f.st.NS(), RetainCompleted: -1, RetainArchived: time.Hour,
				RetainCancelled: 3 * time.Hour, Now: f.clk.Now})
			recordAll(t, deploy, f.ctx, []string{"mail"}, "B", epoch)
			f.clk.Advance(time.Hour) // A's next maintenance pass
			newer, err := f.st.RecordRetention(f.ctx, []string{"mail", "reports"}, "A", aStarted)
			if err != nil || !slices.Equal(newer, []string{"mail"}) {
				t.Errorf("A's late write: left %v, %v; want [mail] left to B", newer, err)
			}
			got, _, err := f.st.ReadRetention(f.ctx, "mail")
			want := store.Retention{Queue: "mail", Completed: -1, Archived: time.Hour, Cancelled: 3 * time.Hour,
				Worker: "B", Started: epoch}
			if d := cmp.Diff(want, got); err != nil || d != "" {
				t.Errorf("mail after A's late write (%v): -want B's +got\n%s", err, d)
			}
			if got, _, err := f.st.ReadRetention(f.ctx, "reports"); err != nil || got.Worker != "A" || !got.Started.Equal(aStarted) {
				t.Errorf("reports, which only A serves: %+v, %v; want A's record", got, err)
			}
		})
	}
}

// TestRetentionRecordByStart: a record is replaced by a writer that
// started after its worker or at the same time, and left to it by one
// that started before.
func TestRetentionRecordByStart(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range []struct {
				name     string
				writer   time.Duration // the writer's start after the record's
				replaced bool
			}{
				{"older", -time.Millisecond, false},
				{"equal", 0, true},
				{"newer", time.Millisecond, true},
				{"much newer", 30 * time.Minute, true},
			} {
				f := newFixture(t, b)
				there := epoch.Add(-time.Hour)
				recordAll(t, f.st, f.ctx, []string{"q"}, "there", there)
				before := f.rawRetention("q")
				newer, err := f.st.RecordRetention(f.ctx, []string{"q"}, "writer", there.Add(c.writer))
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got, _, err := f.st.ReadRetention(f.ctx, "q")
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				switch {
				case c.replaced && (len(newer) != 0 || got.Worker != "writer" || !got.Started.Equal(there.Add(c.writer))):
					t.Errorf("%s: left %v, record %+v; want the writer's", c.name, newer, got)
				case !c.replaced && (!slices.Equal(newer, []string{"q"}) || f.rawRetention("q") != before):
					t.Errorf("%s: left %v, record %+v; want it left as it was (%q)", c.name, newer, got, before)
				}
			}
		})
	}
}

// TestRetentionRecordSentTwice: go-redis sends a command again when its
// reply was lost, so the script may run twice. The second run of a write
// finds its own record and changes nothing; a record of a worker that
// started later, written between the two runs, stays.
func TestRetentionRecordSentTwice(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			a := epoch.Add(-time.Minute)
			recordAll(t, f.st, f.ctx, []string{"q"}, "A", a)
			first := f.rawRetention("q")
			recordAll(t, f.st, f.ctx, []string{"q"}, "A", a)
			if got := f.rawRetention("q"); got != first {
				t.Errorf("after the same write twice: %q, want %q", got, first)
			}

			recordAll(t, f.st, f.ctx, []string{"q"}, "B", epoch)
			bs := f.rawRetention("q")
			if newer, err := f.st.RecordRetention(f.ctx, []string{"q"}, "A", a); err != nil || !slices.Equal(newer, []string{"q"}) {
				t.Errorf("A's write again after B's: left %v, %v; want [q]", newer, err)
			}
			if got := f.rawRetention("q"); got != bs {
				t.Errorf("A's write again after B's: %q, want B's %q", got, bs)
			}
		})
	}
}

// TestRetentionRecordReplacesUnreadable: a record that cannot be read is
// replaced by any writer, however early it started; so is one whose
// start is more than a minute after the store's time, which no start read
// from the store can be (an older build wrote it from a worker's clock
// that ran ahead). The script reads a record exactly as DecodeRetention
// does: a value the decoder refuses is replaced even when its start field
// reads as late, and one it accepts is kept when its worker started after
// the writer, within a minute of now.
func TestRetentionRecordReplacesUnreadable(t *testing.T) {
	t.Parallel()
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	late := ms(epoch) // the store's now in the fixture
	values := []string{
		// readable
		"1:2:3:" + late + ":w", "-1:0:0:" + late + ":w:with:colons", "9223372036854:0:0:" + late + ":w",
		"0:0:0:" + ms(epoch.Add(time.Minute)) + ":w",                  // a minute ahead: kept
		"0:0:0:" + ms(epoch.Add(time.Minute+time.Millisecond)) + ":w", // more: from the future
		"0:0:0:5:w", // older than the writer
		// not
		"", "garbage", "1:2:" + late + ":w", "1:2:3:" + late + ":", "1:2:3:" + late,
		"01:2:3:" + late + ":w", "1:2:3:0" + late + ":w", "1:2:3:+" + late + ":w", "-0:2:3:" + late + ":w",
		"1:-2:3:" + late + ":w", "-1:-1:-1:-1:w", "1.5:2:3:" + late + ":w", "1e3:2:3:" + late + ":w",
		"0x10:2:3:" + late + ":w", " 1:2:3:" + late + ":w", "1:2:3:" + late + " :w", "1:2:3:" + late + "\n:w",
		"9223372036855:0:0:" + late + ":w", "1:2:99999999999999999:" + late + ":w", "1:2:3:99999999999999:w",
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			key := keys.Retention(f.st.NS())
			writer := epoch.Add(-time.Hour)
			for _, v := range values {
				must(t, f.rdb.HSet(f.ctx, key, "q", v).Err())
				newer, err := f.st.RecordRetention(f.ctx, []string{"q"}, "writer", writer)
				if err != nil {
					t.Fatalf("over %q: %v", v, err)
				}
				r, derr := store.DecodeRetention("q", v)
				keep := derr == nil && r.Started.After(writer) && !r.Started.After(epoch.Add(time.Minute))
				got := f.rawRetention("q")
				switch {
				case keep && (got != v || !slices.Equal(newer, []string{"q"})):
					t.Errorf("over %q (readable, newer): now %q, left %v; want it kept", v, got, newer)
				case !keep && (len(newer) != 0 || !hasWorker(got, "writer")):
					t.Errorf("over %q: now %q, left %v; want the writer's record", v, got, newer)
				}
			}
		})
	}
}

// hasWorker reports whether v is a readable record of worker.
func hasWorker(v, worker string) bool {
	r, err := store.DecodeRetention("q", v)
	return err == nil && r.Worker == worker
}

// TestRetentionRecordRefused: a key of another type than a hash is an
// error wrapping ErrMalformed, and a start more than a minute after the
// store's time (not read from it) is refused; neither writes anything.
// No queue, nothing to do.
func TestRetentionRecordRefused(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			key := keys.Retention(f.st.NS())
			must(t, f.rdb.Set(f.ctx, key, "not a hash", 0).Err())
			if _, err := f.st.RecordRetention(f.ctx, []string{"q"}, "w", epoch); !errors.Is(err, store.ErrMalformed) {
				t.Errorf("on a string key: %v, want ErrMalformed", err)
			}
			if v, err := f.rdb.Get(f.ctx, key).Result(); err != nil || v != "not a hash" {
				t.Errorf("the string key after: %q, %v", v, err)
			}
			must(t, f.rdb.Del(f.ctx, key).Err())

			if _, err := f.st.RecordRetention(f.ctx, []string{"q"}, "w", epoch.Add(2*time.Minute)); err == nil {
				t.Error("a start two minutes after the store's time was recorded")
			}
			if _, err := f.st.RecordRetention(f.ctx, []string{"q"}, "", epoch); err == nil {
				t.Error("a record with no worker ID was written")
			}
			if n, err := f.rdb.Exists(f.ctx, key).Result(); err != nil || n != 0 {
				t.Errorf("the hash after refused writes: exists %d, %v", n, err)
			}
			if newer, err := f.st.RecordRetention(f.ctx, nil, "w", epoch); newer != nil || err != nil {
				t.Errorf("no queue: %v, %v", newer, err)
			}
		})
	}
}
