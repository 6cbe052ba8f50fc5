package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/runtime"
)

// TestJobActionsOnIDReusedMidCallRefused: the job is deleted and its ID
// given to a new job after the console checked the job its confirmation
// showed (unchanged) and before the action's script call. Each one-job
// action is refused (409) by its own script call, which names the job's
// creation time, and the new job, which the operator never saw, is left
// as it was: the check in Go alone cancelled, deleted, ran, redrove or
// rerouted the new job and said so.
func TestJobActionsOnIDReusedMidCallRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action string
		// prep puts a job (the old or the new one) in the state the
		// action takes
		prep  func(f *fixture, id string)
		extra url.Values
		// left says what became of the new job, "" when it is as it was
		left func(f *fixture, id string) string
	}{
		{action: "cancel", left: stateIs(flow.StateScheduled)},
		{action: "delete", left: stateIs(flow.StateScheduled)},
		{action: "runnow", left: stateIs(flow.StateScheduled)},
		{action: "redrive", prep: cancelled, left: stateIs(flow.StateCancelled)},
		{action: "reroute", extra: url.Values{"worker": {"worker-b"}, "policy": {"after"}, "delay": {"1m"}}, left: func(f *fixture, id string) string {
			ref, _ := keys.ParseRef(f.env.NS, id)
			sw, err := f.env.RDB.HGet(context.Background(), ref.Job(ref.Local), keys.FieldStickyWorker).Result()
			if err != redis.Nil {
				return "prefers " + sw
			}
			return ""
		}},
	} {
		t.Run(tc.action, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := &racingOps{}
			f := newFixture(t, Options{ops: r}, false)
			r.ops = adminOps{Client: f.ops}
			local := "reused-mid-" + tc.action
			id := f.enqueue(work{Order: "old"}, flow.WithID(local), flow.WithDelay(time.Hour))
			if tc.prep != nil {
				tc.prep(f, id)
			}
			c := client()
			code, body := f.get(c, "/confirm/"+tc.action+"?id="+url.QueryEscape(id))
			if code != http.StatusOK {
				t.Fatalf("confirmation: %d\n%s", code, mainOf(body))
			}
			form := hiddenFields(body)
			for k, v := range tc.extra {
				form[k] = v
			}
			if form.Get("created") == "" {
				t.Fatalf("the confirmation records no creation time: %v", form)
			}
			r.before = func() {
				if err := f.ops.DeleteJob(ctx, id); err != nil {
					t.Errorf("deleting the job: %v", err)
				}
				// enqueued a second later by store time: another
				// creation time, with no sleep for the clock to move on
				later, err := flow.NewClient(f.env.RDB, flow.ClientOptions{Namespace: f.env.NS,
					Clock: runtime.NewFakeClock(time.Now().Add(time.Second))})
				if err != nil {
					t.Errorf("the later client: %v", err)
					return
				}
				if _, err := later.Enqueue(ctx, work{Order: "new"}, flow.WithQueue(testQueue), flow.WithID(local), flow.WithDelay(time.Hour)); err != nil {
					t.Errorf("the new job: %v", err)
				}
				if tc.prep != nil {
					tc.prep(f, id)
				}
			}
			r.armed.Store(true)
			code, _, body = f.post(c, "/act/"+tc.action, form)
			if left := tc.left(f, id); code != http.StatusConflict || left != "" {
				t.Errorf("%s confirmed for the job deleted mid-call: POST %d, the new job with its ID %s; want 409 and it untouched\n%s",
					tc.action, code, left, mainOf(body))
			}
		})
	}
}

// cancelled cancels job id, for a redrive to take it.
func cancelled(f *fixture, id string) {
	f.t.Helper()
	if _, err := f.ops.CancelJob(context.Background(), id); err != nil {
		f.t.Errorf("cancelling %s: %v", id, err)
	}
}

// stateIs says what became of a job that should be in state want.
func stateIs(want string) func(f *fixture, id string) string {
	return func(f *fixture, id string) string {
		j, err := f.ops.Job(context.Background(), id)
		switch {
		case err != nil:
			return "is " + err.Error()
		case j.State != want:
			return "is " + j.State
		}
		return ""
	}
}
