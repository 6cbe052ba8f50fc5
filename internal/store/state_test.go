package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestStateStoredAsCode: a job hash holds its state as one character
// (lua/lib.lua SCODE), which store.StateName turns back into the state a
// read reports, in every state; a job written with the state's name (as
// before codes) is still claimed and run.
func TestStateStoredAsCode(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "running"}, store.NewJob{Local: "retryable"}, store.NewJob{Local: "completed"})
			f.enqueue(store.NewJob{Local: "archived", MaxAttempts: 1}, store.NewJob{Local: "quarantined"})
			claimed := map[string]*store.Job{}
			for _, j := range f.claim(5, "w").Jobs {
				claimed[j.Local] = j
			}
			f.ack(claimed["retryable"], store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x", Delay: time.Minute})
			f.ack(claimed["completed"], store.Ack{Code: store.CodeOK})
			f.ack(claimed["archived"], store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x"})
			for crash := 1; crash <= 3; crash++ {
				if crash > 1 {
					claimed["quarantined"] = f.claimOne("w")
				}
				f.ack(claimed["quarantined"], store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "x"})
				f.clk.Advance(time.Duration(1<<(crash-1)) * time.Second) // its crash delay, not the retry's minute
			}
			f.enqueue(store.NewJob{Local: "available"}, store.NewJob{Local: "scheduled", Delay: time.Hour})
			f.enqueue(store.NewJob{Local: "cancelled", Delay: time.Hour})
			if _, err := f.st.Cancel(f.ctx, f.ref("cancelled"), retainCancelled); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"available", "scheduled", "running", "retryable", "completed", "archived", "quarantined", "cancelled"} {
				raw, err := f.rdb.HGet(f.ctx, f.p.Job(want), keys.FieldState).Result()
				if err != nil {
					t.Fatalf("%s: %v", want, err)
				}
				if len(raw) != 1 || store.StateName(raw) != want {
					t.Errorf("job %s stores state %q, read as %q", want, raw, store.StateName(raw))
				}
				if j, _ := f.get(want); j.State != want {
					t.Errorf("job %s reads as %s", want, j.State)
				}
			}

			// a job written before codes, with its state by name; at
			// priority 9 it is claimed before the available one
			f.enqueue(store.NewJob{Local: "old", Priority: 9})
			if err := f.rdb.HSet(f.ctx, f.p.Job("old"), keys.FieldState, "available").Err(); err != nil {
				t.Fatal(err)
			}
			if j, _ := f.get("old"); j.State != "available" {
				t.Fatalf("old job reads as %s", j.State)
			}
			j := f.claimOne("w")
			if j.Local != "old" {
				t.Fatalf("claimed %s, want old", j.Local)
			}
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); r.State != "completed" {
				t.Fatalf("old job acked: %+v", r)
			}
		})
	}
}
