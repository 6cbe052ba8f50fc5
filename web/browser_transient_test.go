package web

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestBrowserTransientErrorKeepsFollowing: one failed refresh of a
// followed job page (a 502 of a proxy, a 500 of a Redis blip: anything
// but the job's 404) does not end the page's stream: a review found a
// first version of the page's handling of a deleted job closed it on any
// answer that was not ok, and a later change (here a cancel) was never
// shown, the page keeping the stale state and its actions.
func TestBrowserTransientErrorKeepsFollowing(t *testing.T) {
	blip := newRefreshBlip()
	f := newFixture(t, Options{Auth: blip.middleware, Insecure: true}, false)
	ctx := browser(t)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageHooks}); err != nil {
		t.Fatalf("browser: add the page hooks: %v", err)
	}
	do(t, ctx, "the scheduled job's page", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the job page to follow the job live",
		`document.querySelector("#live")?.dataset.state === "scheduled" && window.jobEvents >= 1`)
	blip.arm()
	bg := context.Background()
	testkit.Must(t, f.ops.RunNow(bg, id))
	until(t, ctx, "the job event of run now", `window.jobEvents >= 2`)
	testkit.Recv(t, blip.failed, "the page's refresh to meet the 502")
	_, err := f.ops.CancelJob(bg, id)
	testkit.Must(t, err)
	until(t, ctx, "the page to show the job cancelled after one failed refresh",
		`document.querySelector("#live")?.dataset.state === "cancelled"`)
}

// TestBrowserFailedRefreshOfLastChangeRetried: a failed refresh for the
// job's last change (run now: available, and no worker takes it, so no
// job event follows) is asked again: the page comes to show the job
// available. A review found it waited for a next event that never came,
// showing the old state under a live dot for good.
func TestBrowserFailedRefreshOfLastChangeRetried(t *testing.T) {
	blip := newRefreshBlip()
	f := newFixture(t, Options{Auth: blip.middleware, Insecure: true}, false)
	ctx := browser(t)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageHooks}); err != nil {
		t.Fatalf("browser: add the page hooks: %v", err)
	}
	do(t, ctx, "the scheduled job's page", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the job page to follow the job live",
		`document.querySelector("#live")?.dataset.state === "scheduled" && window.jobEvents >= 1`)
	blip.arm()
	testkit.Must(t, f.ops.RunNow(context.Background(), id))
	until(t, ctx, "the page to show the job available after its refresh met a 502",
		`document.querySelector("#live")?.dataset.state === "available"`)
	testkit.Recv(t, blip.failed, "the page's refresh to meet the 502")
}

// refreshBlip is an Auth middleware that answers the next fetch a job
// page makes of itself, once armed, with a 502 (a proxy's blip), and says
// when it did on failed.
type refreshBlip struct {
	armed  atomic.Bool
	failed chan struct{}
}

func newRefreshBlip() *refreshBlip { return &refreshBlip{failed: make(chan struct{}, 1)} }

func (b *refreshBlip) arm() { b.armed.Store(true) }

func (b *refreshBlip) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/jobs/") && r.Header.Get("Sec-Fetch-Dest") == "empty" && b.armed.CompareAndSwap(true, false) {
			http.Error(w, "502 Bad Gateway (a proxy's blip)", http.StatusBadGateway)
			b.failed <- struct{}{}
			return
		}
		next.ServeHTTP(w, r)
	})
}
