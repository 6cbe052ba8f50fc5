package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConfirmOfMissingQueueOrScheduleIsNotFound: the confirmation page of
// an action on a queue or schedule that does not exist (a mistyped link,
// one removed since) answers 404 saying so, and offers no button. It
// offered one, whose POST then answered 404.
func TestConfirmOfMissingQueueOrScheduleIsNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.startScheduler("nightly")
	f.enqueue(work{Order: "first"}) // registers the queue testQueue
	c := client()
	for _, path := range []string{
		"/confirm/pause?" + url.Values{"queue": {"nosuch"}}.Encode(),
		"/confirm/resume?" + url.Values{"queue": {"nosuch"}}.Encode(),
		"/confirm/pause-schedule?" + url.Values{"schedule": {"nosuch"}}.Encode(),
		"/confirm/resume-schedule?" + url.Values{"schedule": {"nosuch"}}.Encode(),
		"/confirm/trigger?" + url.Values{"schedule": {"nosuch"}}.Encode(),
		"/confirm/delete-schedule?" + url.Values{"schedule": {"nosuch"}}.Encode(),
	} {
		code, body := f.get(c, path)
		if code != http.StatusNotFound || strings.Contains(body, `name="csrf"`) || !strings.Contains(body, "nosuch") {
			t.Errorf("GET %s: %d, want 404 naming it, with no form\n%s", path, code, body)
		}
	}
	for _, path := range []string{ // those that exist are still offered
		"/confirm/pause?" + url.Values{"queue": {testQueue}}.Encode(),
		"/confirm/trigger?" + url.Values{"schedule": {"nightly"}}.Encode(),
	} {
		if code, body := f.get(c, path); code != http.StatusOK || !strings.Contains(body, `name="csrf"`) {
			t.Errorf("GET %s: %d, want the confirmation\n%s", path, code, body)
		}
	}
}
