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

// TestOnceKeyIsItsForms: a bulk delete posted with the key of a bulk
// delete of another selector (another state) runs as its own, and
// deletes what it selects: the key ran a form once, whatever the form
// said, so the second answered "done already" with the first's message
// and deleted nothing.
func TestOnceKeyIsItsForms(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.cancelled(work{}, 2)
	scheduled := f.enqueue(work{}, flow.WithDelay(time.Hour))
	c := client()
	_, body := f.get(c, "/confirm/bulk-delete?"+url.Values{"queue": {testQueue}, "state": {flow.StateCancelled}}.Encode())
	form := hiddenFields(body)
	for k := range form {
		if form.Get(k) == "" {
			form.Del(k)
		}
	}
	if code, _, _ := f.post(c, "/act/bulk-delete", form); code != http.StatusSeeOther {
		t.Fatalf("first post: %d", code)
	}
	other := url.Values{"queue": {testQueue}, "state": {flow.StateScheduled}, "once": {form.Get("once")}, "csrf": {form.Get("csrf")}}
	code, loc, body := f.post(c, "/act/bulk-delete", other)
	if code != http.StatusSeeOther {
		t.Fatalf("second post: %d\n%s", code, mainOf(body))
	}
	_, page := f.get(c, strings.TrimPrefix(loc, testPrefix))
	_, rest, _ := strings.Cut(page, `class="flash" role="status">`)
	msg, _, _ := strings.Cut(rest, "<")
	if _, err := f.ops.Job(context.Background(), scheduled); err == nil || !strings.HasPrefix(msg, "deleted 1 scheduled") {
		t.Errorf("a bulk delete of scheduled jobs posted with the key of one of cancelled jobs answers %q, and the scheduled job is there (%v); want it deleted", msg, err)
	}
}
