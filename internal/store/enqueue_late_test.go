package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestEnqueueRefusesDeadlineNotAfterDelay: a job whose delay (counted
// from the store's clock) makes it due at or after its deadline could
// never run. The script refuses it alone, writing nothing for it (no
// hash, no follow-up or tick marker, no fold into a unique key's holder),
// and names both times; the call's other jobs are added, one whose
// deadline is 1 ms after its due time among them. Before, it was added
// and archived deadline_exceeded when it came due, never run.
func TestEnqueueRefusesDeadlineNotAfterDelay(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			uq := store.Unique{Key: "U", OnDuplicate: "replace"}
			f.enqueue(store.NewJob{Local: "holder", Payload: []byte("old"), Unique: uq, Delay: time.Hour})
			due := f.clk.Now().Add(time.Hour)
			late := func(local string) store.NewJob {
				return store.NewJob{Local: local, Kind: "k", Payload: []byte("new"), MaxAttempts: 3,
					Delay: time.Hour, Deadline: f.clk.Now().Add(time.Minute)}
			}
			jobs := []store.NewJob{
				late("late"),
				{Local: "at", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, Delay: time.Hour, Deadline: due},
				{Local: "ok", Kind: "k", Payload: []byte("p"), MaxAttempts: 3, Delay: time.Hour, Deadline: due.Add(time.Millisecond)},
				late("dup"),
				late("child"),
				late("tick"),
				{Local: "plain", Kind: "k", Payload: []byte("p"), MaxAttempts: 3},
			}
			jobs[3].Unique = uq
			jobs[4].Relayed = true
			jobs[5].Tick = true
			res, err := f.st.Enqueue(f.ctx, f.p, jobs)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range []int{0, 1, 3, 4, 5} {
				r := res[i]
				if r.Status != store.Failed || !errors.Is(r.Err, store.ErrDeadlineNotAfterDue) {
					t.Errorf("%s: %+v, want refused (ErrDeadlineNotAfterDue)", jobs[i].Local, r)
					continue
				}
				msg := r.Err.Error()
				dl := jobs[i].Deadline.UTC().Format(time.RFC3339Nano)
				if !strings.Contains(msg, dl) || !strings.Contains(msg, due.UTC().Format(time.RFC3339Nano)) {
					t.Errorf("%s: %q names not both the deadline %s and the due time %s", jobs[i].Local, msg, dl, due)
				}
			}
			for _, i := range []int{2, 6} {
				if res[i].Status != store.Added || res[i].Err != nil {
					t.Errorf("%s: %+v, want added", jobs[i].Local, res[i])
				}
			}
			for _, local := range []string{"late", "at", "dup", "child", "tick"} {
				for _, k := range []string{f.p.Job(local), f.p.FollowUp(local)} {
					if n, _ := f.rdb.Exists(f.ctx, k).Result(); n != 0 {
						t.Errorf("%s: key %s written for a refused job", local, k)
					}
				}
			}
			if j, _ := f.get("holder"); string(j.Payload) != "old" {
				t.Errorf("the unique key's holder has payload %q: the refused duplicate replaced it", j.Payload)
			}
			// the same job with a deadline after its due time is added
			ok := late("late")
			ok.Deadline = f.clk.Now().Add(2 * time.Hour)
			if r, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{ok}); err != nil || r[0].Status != store.Added {
				t.Fatalf("late with a later deadline: %+v %v, want added", r, err)
			}
		})
	}
}

// TestFollowUpPastItsDeadlineDeadLettered: a follow-up whose delay, counted
// from the relay's store time, makes it due at or after its deadline is
// refused by the enqueue script and dead-lettered, naming both times:
// nothing is added, no marker set. Before, it was added and archived
// deadline_exceeded when due, never run.
func TestFollowUpPastItsDeadlineDeadLettered(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "order"})
			j := f.claimOne("w")
			fu, err := store.FollowUpEffect(store.FollowUp{Partition: f.p,
				Job: store.NewJob{Kind: "ship", Payload: []byte("p"), MaxAttempts: 3, Delay: time.Hour, Deadline: f.clk.Now().Add(time.Minute)}})
			if err != nil {
				t.Fatal(err)
			}
			if r := f.ack(j, store.Ack{Code: store.CodeOK, Commit: "order@1:#complete", Effects: []sluicetype.Effect{fu}}); r.State != "completed" {
				t.Fatalf("ack: %+v", r)
			}
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || len(res.Dead) != 1 || !strings.Contains(res.Dead[0].Error, "due time") {
				t.Fatalf("relay: %+v %v, want the follow-up dead-lettered naming its due time", res, err)
			}
			local := "order@1:#complete:0"
			for _, k := range []string{f.p.Job(local), f.p.FollowUp(local)} {
				if n, _ := f.rdb.Exists(f.ctx, k).Result(); n != 0 {
					t.Errorf("key %s written for the refused follow-up", k)
				}
			}
		})
	}
}

// TestEnqueueRepeatOfAddedJobNotRefusedPastDeadline: a job of a chosen ID
// already there is a repeat (Duplicate), whatever its delay makes of its
// deadline by now: it was added when its due time came before its
// deadline, and it runs. Enqueued again later (a producer's retry, a
// Spawn run again after its worker died before the step's checkpoint),
// the same job with the same delay is due later by the store's clock, and
// the new check refused it, ErrDeadlineNotAfterDue (ErrInvalid: a Spawn
// step failed), for a job that is there and will run.
func TestEnqueueRepeatOfAddedJobNotRefusedPastDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			job := store.NewJob{Local: "x", Kind: "k", Payload: []byte("p"), MaxAttempts: 3,
				Delay: time.Hour, Deadline: f.clk.Now().Add(90 * time.Minute)}
			f.enqueue(job)
			f.clk.Advance(40 * time.Minute) // due now + 1h: after the deadline
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{job})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Status != store.Duplicate || res[0].Err != nil {
				t.Fatalf("the same job enqueued again: %+v, want Duplicate (it is there and runs)", res[0])
			}
		})
	}
}
