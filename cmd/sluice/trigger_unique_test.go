package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/store"
)

// digestSchedule publishes schedule "digest" (hourly, an email job with
// unique, in queue default) as a scheduler would, and registers the
// queue as its first process does.
func (f *fixture) digestSchedule(unique store.Unique) {
	f.t.Helper()
	tmpl, err := msgpack.Marshal(store.ScheduleJob{
		NewJob: store.NewJob{Kind: "email", Payload: []byte{0x80}, MaxAttempts: 3, Unique: unique},
		Route:  "digest", Placed: true})
	if err != nil {
		f.t.Fatal(err)
	}
	def := store.ScheduleDef{Name: "digest", Every: time.Hour, Missed: "skip", Grace: time.Minute, Queue: "default", Kind: "email", Template: tmpl}
	if err := f.st.PublishSchedule(f.ctx, def); err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.st.RegisterLayout(f.ctx, "default", 1); err != nil {
		f.t.Fatal(err)
	}
}

// TestTriggerUniqueNotTriggered: a unique schedule's trigger that meets
// the job holding the schedule's unique key adds nothing
// (admin.TriggerSchedule answers Duplicate). The command says so, names
// that job and exits 1, in text and in --json; it said "triggered" with
// exit 0 before, naming the other job as if it were new.
func TestTriggerUniqueNotTriggered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.digestSchedule(store.Unique{Key: "digest"})
	id, ok := strings.CutPrefix(strings.TrimSpace(f.must("schedules", "trigger", "digest")), "triggered digest: job ")
	if !ok {
		t.Fatal("the first trigger did not say it triggered")
	}
	for _, args := range [][]string{{"schedules", "trigger", "digest"}, {"--json", "schedules", "trigger", "digest"}} {
		out, errs, code := f.sluice(args...)
		if code != exitError || out != "" || !strings.Contains(errs, "not triggered") || !strings.Contains(errs, id) {
			t.Errorf("%q while job %s holds the key: exit %d, stdout %q, stderr %q; want exit 1 saying not triggered, naming it",
				args, id, code, out, errs)
		}
	}
	if n := strings.Count(f.must("jobs", "list", "--state", flow.StateAvailable), "sched:digest:trigger:"); n != 1 {
		t.Errorf("%d trigger jobs, want 1", n)
	}
}
