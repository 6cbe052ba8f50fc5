package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestDeleteConfirmedOnChangedJob: a delete confirmed of a job shown
// cancelled, and redriven by another operator before the Confirm was
// posted, is refused (409), the job left. A helper's audit found the
// form carried nothing of the job the operator saw, and the POST deleted
// it.
func TestDeleteConfirmedOnChangedJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.cancelled(work{}, 1)[0]
	c := client()
	code, body := f.get(c, "/confirm/delete?id="+url.QueryEscape(id))
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d", code)
	}
	form := hiddenFields(body)
	if _, err := f.ops.Redrive(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	j, err := f.ops.Job(context.Background(), id)
	testkit.Must(t, err)
	if j.State != flow.StateAvailable {
		t.Fatalf("redriven job is %s", j.State)
	}
	code, _, _ = f.post(c, "/act/delete", form)
	if _, err := f.ops.Job(context.Background(), id); err != nil {
		t.Fatalf("delete confirmed for the job seen cancelled deleted it once it was available again (POST %d, form %v): %v",
			code, form, err)
	}
	if code != http.StatusConflict {
		t.Fatalf("POST: %d, want 409", code)
	}
}

// TestDeleteConfirmedTwiceReusedID: the delete form posted twice (two
// tabs, a re-sent request) after a producer enqueued a new job under the
// same ID (flow.WithID) does not delete the new job, which the operator
// never saw (a helper's audit found it did, and said "deleted" again).
func TestDeleteConfirmedTwiceReusedID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{Order: "old"}, flow.WithID("reused"), flow.WithDelay(time.Hour))
	c := client()
	_, body := f.get(c, "/confirm/delete?id="+url.QueryEscape(id))
	form := hiddenFields(body)
	if code, _, _ := f.post(c, "/act/delete", form); code != http.StatusSeeOther {
		t.Fatalf("first post: %d", code)
	}
	id2 := f.enqueue(work{Order: "new"}, flow.WithID("reused"), flow.WithDelay(time.Hour))
	if id2 != id {
		t.Fatalf("new job %s, old %s: not the same ID", id2, id)
	}
	code, loc, _ := f.post(c, "/act/delete", form)
	_, err := f.ops.Job(context.Background(), id)
	if err != nil {
		page := ""
		if code == http.StatusSeeOther {
			_, page = f.get(c, strings.TrimPrefix(loc, testPrefix))
		}
		t.Fatalf("the same delete form posted again deleted the new job with the reused ID (POST %d, says deleted: %v)",
			code, strings.Contains(page, "deleted "+id))
	}
}

// TestCancelConfirmedTwiceAfterRedrive: a cancel form posted twice (a
// re-sent request, a second tab) after the cancelled job was redriven in
// between does not cancel the new run, which the operator never
// confirmed (a helper's audit found it did, and said "cancelled" again).
func TestCancelConfirmedTwiceAfterRedrive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	c := client()
	_, body := f.get(c, "/confirm/cancel?id="+url.QueryEscape(id))
	form := hiddenFields(body)
	if code, _, _ := f.post(c, "/act/cancel", form); code != http.StatusSeeOther {
		t.Fatalf("first post: %d", code)
	}
	if _, err := f.ops.Redrive(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	code, _, _ := f.post(c, "/act/cancel", form)
	j, err := f.ops.Job(context.Background(), id)
	testkit.Must(t, err)
	if j.State != flow.StateAvailable || code != http.StatusConflict {
		t.Fatalf("the same cancel form posted again after a redrive: POST %d, job now %s; want 409 and the job left available", code, j.State)
	}
}
