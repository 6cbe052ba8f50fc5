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

// TestBrowserDotAfterJobRefresh: refreshJob replaces #live (and the
// .live-dot in it) on every change of the job, so the stream's open and
// error handlers look the dot up each time. After one change, a stream
// that ends for good (the console answers its reconnect 503, as a proxy
// would during an outage) turns the visible dot off: the page does not
// claim to be live while no stream is open. A review found the handlers
// held the dot of the page's load, detached after the first change.
func TestBrowserDotAfterJobRefresh(t *testing.T) {
	t.Run("control-no-refresh", func(t *testing.T) { dotAfterEnd(t, false) })
	t.Run("after-refresh", func(t *testing.T) { dotAfterEnd(t, true) })
}

func dotAfterEnd(t *testing.T, refresh bool) {
	cut := newStreamCutter()
	var refuse atomic.Bool
	var refused atomic.Int64
	auth := func(next http.Handler) http.Handler {
		inner := cut.middleware(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/events" && refuse.Load() {
				refused.Add(1)
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	f := newFixture(t, Options{Auth: auth, Insecure: true}, false)
	ctx := browser(t)
	id := f.enqueue(work{Order: "dot"}, flow.WithDelay(time.Hour))
	do(t, ctx, "the job page", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the page to be live", `!!document.querySelector("#live .live-dot.on")`)
	if refresh {
		_, err := f.ops.CancelJob(context.Background(), id)
		testkit.Must(t, err)
		until(t, ctx, "the page to show the change", `document.getElementById("live").dataset.state === "cancelled"`)
	}
	refuse.Store(true)
	if n := cut.cut(id); n != 1 {
		t.Fatalf("cut %d streams, want 1", n)
	}
	redistest.Within(t, testkit.Timeout, "the browser's reconnect to be refused", func() (bool, string) {
		return refused.Load() > 0, "no reconnect yet"
	})
	// the stream ended for good (its reconnect refused): the job page's
	// dot goes off (it stayed on when the handlers held a replaced dot)
	until(t, ctx, "the job page's dot to go off", `!document.querySelector("#live .live-dot.on")`)
}
