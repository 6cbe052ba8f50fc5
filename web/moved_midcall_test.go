package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
)

// TestJobActionsOnJobMovedOnMidCallRefused: the job is redriven, or runs
// again, after the console checked the job its confirmation showed
// (unchanged: its redrives for cancel and delete, its fence for redrive,
// release and run now) and before the action's script call, keeping its
// creation time. Each action is refused (409) by its own script call and
// the job is left as the race left it: the check in Go alone cancelled
// or deleted the redriven job, redrove or released it a second time, or
// ran it again, and said so.
func TestJobActionsOnJobMovedOnMidCallRefused(t *testing.T) {
	t.Parallel()
	// ranAgain stands for an attempt a worker began: its claim moves the
	// fence, as every claim does
	ranAgain := func(f *fixture, id string) {
		ref, _ := keys.ParseRef(f.env.NS, id)
		if err := f.env.RDB.HIncrBy(context.Background(), ref.Job(ref.Local), keys.FieldFence, 1).Err(); err != nil {
			f.t.Errorf("the attempt: %v", err)
		}
	}
	redriven := func(f *fixture, id string) {
		if _, err := f.ops.Redrive(context.Background(), id); err != nil {
			f.t.Errorf("the other operator's redrive: %v", err)
		}
	}
	for _, tc := range []struct {
		action string
		// job makes the job the confirmation shows
		job func(f *fixture) string
		// race moves it on between the check and the call
		race func(f *fixture, id string)
		want string // its state once the race is over, left so
		why  string // what the refusal says
	}{
		{action: "cancel", job: scheduled, race: func(f *fixture, id string) {
			cancelled(f, id)
			redriven(f, id)
		}, want: flow.StateAvailable, why: "was redriven since"},
		{action: "delete", job: func(f *fixture) string {
			id := scheduled(f)
			cancelled(f, id)
			return id
		}, race: func(f *fixture, id string) {
			redriven(f, id)
			cancelled(f, id)
		}, want: flow.StateCancelled, why: "was redriven since"},
		{action: "redrive", job: func(f *fixture) string {
			id := scheduled(f)
			cancelled(f, id)
			return id
		}, race: func(f *fixture, id string) {
			redriven(f, id)
			ranAgain(f, id)
			cancelled(f, id)
		}, want: flow.StateCancelled, why: "ran again since"},
		{action: "runnow", job: scheduled, race: ranAgain, want: flow.StateScheduled, why: "ran again since"},
		{action: "release", job: func(f *fixture) string { return f.quarantined() }, race: func(f *fixture, id string) {
			ctx := context.Background()
			j, err := f.ops.Job(ctx, id)
			if err != nil {
				f.t.Errorf("the job: %v", err)
				return
			}
			// released by another operator, it crashes again on the
			// fixture's worker and is quarantined again
			if _, err := f.ops.Release(ctx, id); err != nil {
				f.t.Errorf("the other operator's release: %v", err)
			}
			// polled, not waited on with Fatal: this runs in the console's
			// handler goroutine
			if ok, last := redisproc.Poll(10*time.Second, func() (bool, string) {
				k, err := f.ops.Job(ctx, id)
				return err == nil && k.State == flow.StateQuarantined && k.Fence > j.Fence, fmt.Sprintf("%+v %v", k, err)
			}); !ok {
				f.t.Errorf("the released job was not quarantined again: %s", last)
			}
		}, want: flow.StateQuarantined, why: "ran again since"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := &racingOps{}
			f := newFixture(t, Options{ops: r}, false)
			r.ops = adminOps{Client: f.ops}
			id := tc.job(f)
			c := client()
			code, body := f.get(c, "/confirm/"+tc.action+"?id="+url.QueryEscape(id))
			if code != http.StatusOK {
				t.Fatalf("confirmation: %d\n%s", code, mainOf(body))
			}
			form := hiddenFields(body)
			if form.Get("fence") == "" && form.Get("redrives") == "" {
				t.Fatalf("the confirmation records neither fence nor redrives: %v", form)
			}
			var after *flow.JobInfo
			r.before = func() {
				tc.race(f, id)
				after, _ = f.ops.Job(ctx, id)
			}
			r.armed.Store(true)
			code, _, body = f.post(c, "/act/"+tc.action, form)
			if after == nil || after.State != tc.want {
				t.Fatalf("the race left the job %+v, want it %s", after, tc.want)
			}
			j, err := f.ops.Job(ctx, id)
			if code != http.StatusConflict || err != nil || j.State != tc.want || j.Redrives != after.Redrives || j.Fence != after.Fence {
				t.Fatalf("%s confirmed for a job that moved on mid-call: POST %d, the job %+v (%v); want 409 and it left %+v\n%s",
					tc.action, code, j, err, after, mainOf(body))
			}
			if !strings.Contains(body, tc.why) {
				t.Errorf("the refusal does not say the job %s\n%s", tc.why, mainOf(body))
			}
		})
	}
}

// scheduled enqueues a job due in an hour.
func scheduled(f *fixture) string {
	return f.enqueue(work{}, flow.WithDelay(time.Hour))
}
