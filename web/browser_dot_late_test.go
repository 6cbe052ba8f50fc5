package web

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestBrowserDotRefreshAfterStreamEnd: a job page's refresh (its fetch
// after a job event) that completes after the stream ended for good (its
// reconnect refused 503) leaves the new dot off: the page does not say it
// is live with no stream open.
func TestBrowserDotRefreshAfterStreamEnd(t *testing.T) {
	cut := newStreamCutter()
	var refuse, hold atomic.Bool
	var refused, held atomic.Int64
	release := make(chan struct{})
	auth := func(next http.Handler) http.Handler {
		inner := cut.middleware(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/events" && refuse.Load() {
				refused.Add(1)
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			if r.URL.Path != "/events" && hold.Load() && r.Header.Get("Accept") == "text/html" {
				held.Add(1)
				<-release
			}
			inner.ServeHTTP(w, r)
		})
	}
	f := newFixture(t, Options{Auth: auth, Insecure: true}, false)
	ctx := browser(t)
	id := f.enqueue(work{Order: "dot"}, flow.WithDelay(time.Hour))
	do(t, ctx, "the job page", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the page to be live", `!!document.querySelector("#live .live-dot.on")`)
	hold.Store(true)
	_, err := f.ops.CancelJob(context.Background(), id)
	testkit.Must(t, err)
	redistest.Within(t, testkit.Timeout, "the page's refresh to be held", func() (bool, string) {
		return held.Load() > 0, "no refresh yet"
	})
	refuse.Store(true)
	if n := cut.cut(id); n != 1 {
		t.Fatalf("cut %d streams, want 1", n)
	}
	redistest.Within(t, testkit.Timeout, "the browser's reconnect to be refused", func() (bool, string) {
		return refused.Load() > 0, "no reconnect yet"
	})
	until(t, ctx, "setup: the dot to go off as the stream ended", `!document.querySelector(".live-dot.on")`)
	close(release)
	// the refresh's callback replaces #live and sets its dot at once
	until(t, ctx, "the refresh to land", `document.getElementById("live").dataset.state === "cancelled"`)
	on, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("#live .live-dot.on") ? "on" : "off")`))
	testkit.Must(t, err)
	if on[:2] == "on" {
		t.Errorf("the stream ended for good before the job page's refresh landed, and the refreshed dot says live: %s", on)
	}
}
