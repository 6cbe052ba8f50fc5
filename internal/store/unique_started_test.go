package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDuplicateLeavesAStartedHolder: ReplaceArgs and Debounce act on the
// holder of a unique key only while it has not started and only when it
// is of the duplicate's kind. A holder that ran and is scheduled again
// (snoozed; a suspended workflow is the same) keeps its arguments, which
// its checkpointed steps were run with, and its run time, which its
// timers set; a holder of another kind keeps the arguments it can read.
// Before, both were changed: a workflow resumed with other arguments
// than its first steps saw, or slept an hour past its timer, and a job
// decoded another kind's payload as its own (found by an audit).
func TestDuplicateLeavesAStartedHolder(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, policy := range []string{"replace", "debounce"} {
			t.Run(b.name+"/"+policy, func(t *testing.T) {
				f := newFixture(t, b)
				// dup enqueues a duplicate of holder's key
				dup := func(holder string, j store.NewJob) {
					t.Helper()
					j.MaxAttempts = 3
					res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{j})
					if err != nil || res[0].Existing != holder {
						t.Fatalf("duplicate of %s: %+v %v", holder, res, err)
					}
				}
				uq := store.Unique{Key: "u", OnDuplicate: policy}
				f.enqueue(store.NewJob{Local: "ran", Kind: "k", Payload: []byte("first"), Unique: uq})
				held := f.claimLeases(1, "w")
				if _, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: held["ran"], Code: store.CodeSnooze, Delay: time.Minute}}); err != nil {
					t.Fatal(err)
				}
				due, _ := f.due("ran")
				dup("ran", store.NewJob{Local: "dup", Kind: "k", Payload: []byte("second"), Unique: uq, Delay: time.Hour})
				if j, _ := f.get("ran"); j.State != "scheduled" || string(j.Payload) != "first" {
					t.Errorf("the holder that ran: %s with %q, want scheduled with its own arguments", j.State, j.Payload)
				}
				if now, _ := f.due("ran"); now != due {
					t.Errorf("the holder that ran is due at %v, was %v: moved", now, due)
				}

				other := store.Unique{Key: "v", OnDuplicate: policy}
				f.enqueue(store.NewJob{Local: "mine", Kind: "invoice", Payload: []byte("acme"), Unique: other, Delay: time.Minute})
				due, _ = f.due("mine")
				dup("mine", store.NewJob{Local: "theirs", Kind: "report", Payload: []byte("7"), Unique: other, Delay: time.Hour})
				if j, _ := f.get("mine"); string(j.Payload) != "acme" {
					t.Errorf("a holder of another kind got the duplicate's arguments: %q", j.Payload)
				}
				if now, _ := f.due("mine"); now != due {
					t.Errorf("a holder of another kind is due at %v, was %v: moved", now, due)
				}

				// a holder that has not run, of the kind, still takes them
				fresh := store.Unique{Key: "w", OnDuplicate: policy}
				f.enqueue(store.NewJob{Local: "new", Kind: "k", Payload: []byte("old"), Unique: fresh, Delay: time.Minute})
				due, _ = f.due("new")
				dup("new", store.NewJob{Local: "newer", Kind: "k", Payload: []byte("new"), Unique: fresh, Delay: time.Hour})
				j, _ := f.get("new")
				now, _ := f.due("new")
				if policy == "replace" && string(j.Payload) != "new" {
					t.Errorf("replace on a holder that has not run: %q, want the new arguments", j.Payload)
				}
				if policy == "debounce" && now <= due {
					t.Errorf("debounce on a holder that has not run: due %v, was %v; want it moved on", now, due)
				}
			})
		}
	}
}
