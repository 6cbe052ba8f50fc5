package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDebounceStopsShortOfDeadline: a debounced duplicate moves its
// holder's run time only to a time before the holder's deadline. Moved to
// or past it, the holder was archived unrun (deadline_exceeded) by the
// claim that met it: neither it nor any of its duplicates ran. It now
// stays due when it was, and runs.
func TestDebounceStopsShortOfDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			uq := func(k string) store.Unique { return store.Unique{Key: k, OnDuplicate: "debounce"} }
			t0 := f.clk.Now()
			f.enqueue(store.NewJob{Local: "s", Delay: 10 * time.Second, Deadline: t0.Add(30 * time.Second), Unique: uq("s")},
				store.NewJob{Local: "a", Deadline: t0.Add(30 * time.Second), Unique: uq("a")})
			runAt := func(local string) time.Time {
				t.Helper()
				j, _ := f.get(local)
				return j.RunAt
			}
			f.duplicate(store.NewJob{Local: "s2", Delay: 20 * time.Second, Unique: uq("s")})
			if got := runAt("s"); !got.Equal(t0.Add(20 * time.Second)) {
				t.Fatalf("s due at %v after a duplicate of 20 s, want %v (before its deadline: moved)", got, t0.Add(20*time.Second))
			}
			f.duplicate(store.NewJob{Local: "s3", Delay: time.Minute, Unique: uq("s")})
			f.duplicate(store.NewJob{Local: "s4", Delay: 30 * time.Second, Unique: uq("s")})
			if got := runAt("s"); !got.Equal(t0.Add(20 * time.Second)) {
				t.Fatalf("s due at %v after duplicates due at and past its deadline, want %v (not moved)", got, t0.Add(20*time.Second))
			}
			f.duplicate(store.NewJob{Local: "a2", Delay: time.Minute, Unique: uq("a")})
			if j, _ := f.get("a"); j.State != "available" {
				t.Fatalf("a is %s after a duplicate due past its deadline, want available (not moved)", j.State)
			}
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["a"] {
				t.Fatalf("claimed %v, want a", got)
			}
			f.clk.Advance(20 * time.Second)
			res := f.claim(10, "w")
			if got := locals(res.Jobs); len(got) != 1 || !got["s"] || len(res.Parked) != 0 {
				t.Fatalf("at 20 s claimed %v, parked %v; want s run", got, res.Parked)
			}
		})
	}
}
