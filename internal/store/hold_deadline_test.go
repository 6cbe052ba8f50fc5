package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHeldJobArchivedAtDeadline: a job held behind a quarantined twin
// that has a deadline (flow.WithDeadline: it bounds the job's useful life
// across attempts) is archived deadline_exceeded by the claim that meets
// it at its deadline, though no operator released or deleted the twin;
// held by enqueue (its deadline in sched, and in a bucket of later jobs)
// and by a replace of a unique job. A review found it scheduled for ever
// (HOLD_AT), and a parent joining it waiting for ever. Once archived it
// is held no more (HeldBy, the held list), and the twin's release later
// does not revive it.
func TestHeldJobArchivedAtDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "q", Hold: "fp"},
				store.NewJob{Local: "r", Delay: 30 * time.Minute, Deadline: f.clk.Now().Add(time.Hour),
					Unique: store.Unique{Key: "u", OnDuplicate: "replace"}})
			f.crashOut("q")
			now := f.clk.Now()
			f.enqueue(store.NewJob{Local: "near", Hold: "fp", Deadline: now.Add(2 * time.Second)},
				store.NewJob{Local: "far", Hold: "fp", Deadline: now.Add(30 * time.Minute)},
				store.NewJob{Local: "never", Hold: "fp"})
			// a replace of r's arguments by a copy of q's holds r behind q
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "r2", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp",
				Unique: store.Unique{Key: "u", OnDuplicate: "replace"}}})
			if err != nil || res[0].Status != store.Held {
				t.Fatalf("replace: %+v %v", res, err)
			}
			for _, l := range []string{"near", "far", "never", "r"} {
				if j, _ := f.get(l); j.State != "scheduled" || j.HeldBy != "q" {
					t.Fatalf("%s: %s held by %q, want scheduled held by q", l, j.State, j.HeldBy)
				}
			}
			f.clk.Advance(2 * time.Hour)
			parked := map[string]string{}
			for range 3 {
				c := f.claim(10, "w")
				if len(c.Jobs) != 0 {
					t.Fatalf("claimed %v while q is quarantined", locals(c.Jobs))
				}
				for _, p := range c.Parked {
					parked[p.Local] = p.Reason
				}
			}
			want := map[string]string{"near": "deadline_exceeded", "far": "deadline_exceeded", "r": "deadline_exceeded"}
			if len(parked) != len(want) || parked["near"] != want["near"] || parked["far"] != want["far"] || parked["r"] != want["r"] {
				t.Fatalf("claims archived %v, want %v", parked, want)
			}
			for l := range want {
				j, _ := f.get(l)
				if j.State != "archived" || j.Reason != "deadline_exceeded" || j.HeldBy != "" {
					t.Fatalf("%s: %s (%s) held by %q, want archived deadline_exceeded, held by none", l, j.State, j.Reason, j.HeldBy)
				}
			}
			if l, _ := f.rdb.LRange(f.ctx, f.p.HeldOn("fp"), 0, -1).Result(); !slices.Equal(l, []string{"never"}) {
				t.Fatalf("held list %v, want never alone", l)
			}
			if got := f.listAll("scheduled", 2); !slices.Equal(got, []string{"never"}) {
				t.Fatalf("scheduled lists %v, want never alone", got)
			}
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRelease, []string{"q"}); err != nil || errs[0] != nil {
				t.Fatalf("release: %v %v", errs, err)
			}
			if got := locals(f.claim(10, "w").Jobs); len(got) != 2 || !got["q"] || !got["never"] {
				t.Fatalf("after the release claimed %v, want q and never", got)
			}
			for l := range want {
				if j, _ := f.get(l); j.State != "archived" {
					t.Fatalf("%s is %s after the release, want archived still", l, j.State)
				}
			}
		})
	}
}
