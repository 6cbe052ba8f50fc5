package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestRunNowOnReusedIDRefused: a run now confirmed for a job that was
// deleted since, its ID then taken by a new job (flow.WithID), is
// refused (409) and leaves the new job, which the operator never saw,
// scheduled. A helper's audit found the form recorded only the job's
// fence, which every new job starts at, so the new job was made
// available; redrive and release recorded the same alone, and now all
// three record the job's creation time too, as cancel and delete do.
func TestRunNowOnReusedIDRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{Order: "old"}, flow.WithID("reused-runnow"), flow.WithDelay(time.Hour))
	c := client()
	code, body := f.get(c, "/confirm/runnow?id="+url.QueryEscape(id))
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d", code)
	}
	form := hiddenFields(body)
	if form.Get("created") == "" {
		t.Fatalf("the confirmation records no creation time: %v", form)
	}
	testkit.Must(t, f.ops.DeleteJob(context.Background(), id))
	if id2 := f.enqueue(work{Order: "new"}, flow.WithID("reused-runnow"), flow.WithDelay(time.Hour)); id2 != id {
		t.Fatalf("new job %s, old %s: not the same ID", id2, id)
	}
	code, _, _ = f.post(c, "/act/runnow", form)
	if st := f.env.Job(id).State; code != http.StatusConflict || st != flow.StateScheduled {
		t.Errorf("run now confirmed for the deleted job: POST %d, the new job with its ID is %s; want 409 and it scheduled", code, st)
	}
}
