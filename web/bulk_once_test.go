package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
)

// TestBulkDeletePostedTwice: a bulk delete's confirmation posted twice
// (a double click, a re-sent request) runs once, and the second post's
// answer, the page the browser shows, says what the first did. A
// helper's audit found the second post ran the selector again over what
// the first left and said "deleted 0", though the first deleted 2.
func TestBulkDeletePostedTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ids := f.cancelled(work{}, 2)
	c := client()
	code, body := f.get(c, "/confirm/bulk-delete?"+url.Values{"queue": {testQueue}, "state": {flow.StateCancelled}}.Encode())
	if code != http.StatusOK || !strings.Contains(body, `id="dry-run-count">2<`) {
		t.Fatalf("confirmation: %d", code)
	}
	form := hiddenFields(body)
	for k := range form {
		if form.Get(k) == "" {
			form.Del(k)
		}
	}
	if form.Get("once") == "" {
		t.Fatalf("the confirmation has no key of its own: %v", form)
	}
	flashOf := func(code int, loc string) string {
		if code != http.StatusSeeOther {
			t.Fatalf("post: %d, want 303", code)
		}
		_, page := f.get(c, strings.TrimPrefix(loc, testPrefix))
		_, rest, _ := strings.Cut(page, `class="flash" role="status">`)
		msg, _, _ := strings.Cut(rest, "<")
		return msg
	}
	code, loc, _ := f.post(c, "/act/bulk-delete", form)
	if msg := flashOf(code, loc); !strings.Contains(msg, "deleted 2 cancelled") {
		t.Fatalf("first post: %q, want deleted 2", msg)
	}
	for _, id := range ids {
		if _, err := f.ops.Job(context.Background(), id); err == nil {
			t.Fatalf("job %s not deleted by the first post", id)
		}
	}
	code, loc, _ = f.post(c, "/act/bulk-delete", form)
	if msg := flashOf(code, loc); !strings.Contains(msg, "done already") || !strings.Contains(msg, "deleted 2 cancelled") {
		t.Errorf("the same confirmation posted again: %q; want it said done already, deleted 2", msg)
	}
}

// TestOnceKeyIsItsActions: a bulk redrive posted with a key a bulk
// delete's confirmation used runs, as its own: a review found it ran
// nothing and answered the delete's message.
func TestOnceKeyIsItsActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.cancelled(work{}, 2)
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
	redrive := url.Values{"queue": {testQueue}, "state": {flow.StateArchived}, "once": {form.Get("once")}, "csrf": {form.Get("csrf")}}
	code, loc, _ := f.post(c, "/act/bulk-redrive", redrive)
	if code != http.StatusSeeOther {
		t.Fatalf("redrive post: %d", code)
	}
	_, page := f.get(c, strings.TrimPrefix(loc, testPrefix))
	_, rest, _ := strings.Cut(page, `class="flash" role="status">`)
	if msg, _, _ := strings.Cut(rest, "<"); !strings.HasPrefix(msg, "redrove") {
		t.Fatalf("a bulk redrive posted with a bulk delete's key answers %q; want its own run", msg)
	}
}
