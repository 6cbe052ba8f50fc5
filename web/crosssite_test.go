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
// helper's audit found it ran. A link from another site, followed, opens
// the page as before.
func TestCrossSiteFetchRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.cancelled(work{}, 2)
	path := "/confirm/bulk-delete?queue=" + testQueue + "&state=cancelled"
	code, body := f.get(client(), path, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image")
	if code != http.StatusForbidden || strings.Contains(body, "dry-run-count") {
		t.Errorf("a cross-site <img> of the bulk delete's confirmation: %d, body %.120q; want 403 before any read", code, body)
	}
	code, body = f.get(client(), path, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document")
	if code != http.StatusOK || !strings.Contains(body, `id="dry-run-count">2<`) {
		t.Errorf("a link from another site to the confirmation, followed: %d; want the page, counting 2", code)
	}
}
