package store_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
)

// TestGeneratedIDTaken: a generated ID that another job already has (two
// producers drew the same random bits) never overwrites that job: the new
// job is added under another ID, which its result reports, and both jobs
// keep their own payloads.
func TestGeneratedIDTaken(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "same", Generated: true, Payload: []byte("first")})
			jobs := []store.NewJob{
				{Local: "same", Generated: true, Kind: "k", Payload: []byte("second"), MaxAttempts: 3},
				{Local: "other", Generated: true, Kind: "k", Payload: []byte("third"), MaxAttempts: 3},
			}
			res, err := f.st.Enqueue(f.ctx, f.p, jobs)
			if err != nil {
				t.Fatal(err)
			}
			if jobs[0].Local != "same" {
				t.Errorf("the caller's job was changed: %q", jobs[0].Local)
			}
			if res[0].Status != store.Added || !strings.HasPrefix(res[0].Local, "same-") {
				t.Fatalf("colliding job: %+v, want added under a new ID", res[0])
			}
			if res[1].Status != store.Added || res[1].Local != "" {
				t.Fatalf("other job: %+v", res[1])
			}
			for id, want := range map[string]string{"same": "first", res[0].Local: "second", "other": "third"} {
				if j, _ := f.get(id); string(j.Payload) != want {
					t.Errorf("job %s has payload %q, want %q", id, j.Payload, want)
				}
			}
			if got := f.stats()["available"]; got != 3 {
				t.Errorf("%d jobs available, want 3", got)
			}
		})
	}
}

// TestTakenRetryReplyLost: when the call that enqueues a job again under
// a new ID (its generated one was taken) fails after Redis ran it (a
// lost reply), the failed result names that new ID, not the taken one:
// sending the job again under the ID its result gives (flow.SentAs) must
// find the job that call added, where the taken ID names another job.
func TestTakenRetryReplyLost(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "same", Generated: true, Payload: []byte("first")})
			b.rdb.AddHook(&testkit.FailCalls{Script: lua.Enqueue, Part: f.p, Pass: 1, LostReply: true})
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "same", Generated: true, Kind: "k", Payload: []byte("second"), MaxAttempts: 3}})
			if err == nil || res[0].Status != store.Failed {
				t.Fatalf("enqueue whose retry's reply was lost: %+v, %v; want failed", res, err)
			}
			if !strings.HasPrefix(res[0].Local, "same-") {
				t.Fatalf("the failed result names ID %q, want the new one it was sent under", res[0].Local)
			}
			if j, _ := f.get(res[0].Local); string(j.Payload) != "second" {
				t.Errorf("job %s has payload %q, want the job the lost call added", res[0].Local, j.Payload)
			}
		})
	}
}
