package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestDeletePostedTwiceNamesJob: a delete confirmation posted twice (a
// double click) answers the second with a not-found error that names the
// job and says why it may be gone; it said only "sluice: job not found"
// (found by a helper's audit).
func TestDeletePostedTwiceNamesJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	c := client()
	_, body := f.get(c, "/confirm/delete?id="+url.QueryEscape(id))
	form := hiddenFields(body)
	if code, _, _ := f.post(c, "/act/delete", form); code != http.StatusSeeOther {
		t.Fatalf("first post: %d", code)
	}
	code, _, page := f.post(c, "/act/delete", form)
	alert := page
	if _, rest, ok := strings.Cut(page, `role="alert">`); ok {
		alert, _, _ = strings.Cut(rest, "<")
	}
	if !strings.Contains(alert, id) {
		t.Fatalf("the delete posted again: %d %q: the message does not name job %s", code, alert, id)
	}
}

// TestJobIDTrailingSpaceConsole: a job ID pasted with a trailing space
// can name no job (flow.WithID refuses spaces): the console refuses it as
// malformed (400). A helper's audit found it offered a confirmation to
// cancel it, and the job page and the POST answered "job not found".
func TestJobIDTrailingSpaceConsole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	bad := id + " "
	c := client()
	if code, body := f.get(c, "/confirm/cancel?id="+url.QueryEscape(bad)); code == http.StatusOK && strings.Contains(body, `id="confirm"`) {
		t.Errorf("confirmation of cancel %q: %d with a Confirm button; want it refused as a malformed ID", bad, code)
	}
	if code, body := f.get(c, "/jobs/"+url.PathEscape(bad)); code != http.StatusBadRequest {
		_, rest, _ := strings.Cut(body, `role="alert">`)
		msg, _, _ := strings.Cut(rest, "<")
		t.Errorf("job page of %q: %d %q; want 400 saying the ID is malformed", bad, code, msg)
	}
	_, body := f.get(c, "/confirm/cancel?id="+url.QueryEscape(id))
	form := hiddenFields(body)
	form.Set("id", bad)
	if code, _, _ := f.post(c, "/act/cancel", form); code != http.StatusBadRequest {
		t.Errorf("POST cancel %q: %d, want 400", bad, code)
	}
	if j, err := f.ops.Job(context.Background(), id); err != nil || j.State != flow.StateScheduled {
		t.Fatalf("job %s: %v %v", id, j, err)
	}
}
