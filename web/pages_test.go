package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestNotFoundIs404: a page or an action naming a queue, job, schedule
// or dead effect that does not exist answers 404 with the operator API's
// message, not 500.
func TestNotFoundIs404(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.enqueue(work{}) // registers the test queue
	c := client()
	for _, tc := range []struct{ path, says string }{
		{"/queues/nosuch", "queue not found"},
		{"/queues/nosuch?state=archived&kind=x", "queue not found"},
		{jobPath(testQueue + ":0:nosuch"), "job not found"},
		{"/find?id=" + url.QueryEscape(testQueue+":1:nosuch"), "job not found"},
		{"/effects?queue=nosuch", "not found"},
	} {
		code, body := f.get(c, tc.path)
		if code != http.StatusNotFound || !strings.Contains(body, tc.says) {
			t.Errorf("GET %s: %d, want 404 saying %q\n%s", tc.path, code, tc.says, body)
		}
	}
	_, body := f.get(c, "/confirm/trigger?schedule=nosuch")
	tok := csrfOf(body)
	for _, tc := range []struct {
		action string
		form   url.Values
	}{
		{"trigger", url.Values{"schedule": {"nosuch"}}},
		{"redrive-effect", url.Values{"effect": {testQueue + ":0:nosuch"}}},
		{"cancel", url.Values{"id": {testQueue + ":0:nosuch"}}},
	} {
		tc.form.Set("csrf", tok)
		if code, _, body := f.post(c, "/act/"+tc.action, tc.form); code != http.StatusNotFound {
			t.Errorf("POST %s of something not there: %d, want 404\n%s", tc.action, code, body)
		}
	}
}
