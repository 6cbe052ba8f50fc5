package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestCrossSiteFetchRefused: a request another site's page makes the
// browser send (an <img>, a fetch: cross-site, not a navigation) is
// refused before anything is read; a bulk delete's confirmation would run
// its dry run, a scan of every matching job, at any site's request. A
// helper's audit found it ran; so does a frame (navigate mode, a frame's
// destination), which the console's headers keep from showing only. A
// link from another site, followed, opens the page as before.
func TestCrossSiteFetchRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.cancelled(work{}, 2)
	path := "/confirm/bulk-delete?queue=" + testQueue + "&state=cancelled"
	code, body := f.get(client(), path, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image")
	if code != http.StatusForbidden || strings.Contains(body, "dry-run-count") {
		t.Errorf("a cross-site <img> of the bulk delete's confirmation: %d, body %.120q; want 403 before any read", code, body)
	}
	for _, dest := range []string{"iframe", "frame", "object", "embed"} { // a review found frames let through
		code, body := f.get(client(), path, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", dest)
		if code != http.StatusForbidden || strings.Contains(body, "dry-run-count") {
			t.Errorf("a cross-site <%s> of the bulk delete's confirmation: %d; want 403 before any read", dest, code)
		}
	}
	code, body = f.get(client(), path, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document")
	if code != http.StatusOK || !strings.Contains(body, `id="dry-run-count">2<`) {
		t.Errorf("a link from another site to the confirmation, followed: %d; want the page, counting 2", code)
	}
}
