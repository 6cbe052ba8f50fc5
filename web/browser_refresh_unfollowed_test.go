package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestBrowserRefreshAfterUnfollowed: a job page's refresh is in flight
// when its stream reconnects to a console that follows maxWatchedJobs
// jobs already (event unfollowed: the note shows, the dot goes off). The
// refresh lands while that stream is open: the note stays and the dot
// stays off, since the page is not followed and will get no job event.
func TestBrowserRefreshAfterUnfollowed(t *testing.T) {
	cut := newStreamCutter()
	var hold atomic.Bool
	var held atomic.Int64
	release := make(chan struct{})
	auth := func(next http.Handler) http.Handler {
		inner := cut.middleware(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/events" && hold.Load() && r.Header.Get("Accept") == "text/html" {
				held.Add(1)
				<-release
			}
			inner.ServeHTTP(w, r)
		})
	}
	f := newFixture(t, Options{Auth: auth, Insecure: true}, false)
	ctx := browser(t)
	fill, unfill := context.WithCancel(context.Background())
	defer unfill()
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * maxWatchedJobs}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	followed := make(chan struct{}, maxWatchedJobs+1)
	follow := func(i int) {
		id := f.enqueue(work{Order: fmt.Sprint("fill", i)}, flow.WithDelay(time.Hour))
		req, err := http.NewRequestWithContext(fill, http.MethodGet, f.url+"/events?job="+url.QueryEscape(id), nil)
		testkit.Must(t, err)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := hc.Do(req)
		testkit.Must(t, err)
		go func() {
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			said := false
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if line == "event: job\n" && !said {
					said = true
					followed <- struct{}{}
				}
			}
		}()
	}
	id := f.enqueue(work{Order: "page"}, flow.WithDelay(time.Hour))
	do(t, ctx, "the job page", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the page to be live", `!!document.querySelector("#live .live-dot.on")`)
	for i := range maxWatchedJobs - 1 {
		follow(i)
	}
	for range maxWatchedJobs - 1 {
		testkit.Recv(t, followed, "the other tabs to be followed")
	}
	hold.Store(true)
	_, err := f.ops.CancelJob(context.Background(), id)
	testkit.Must(t, err)
	redistest.Within(t, testkit.Timeout, "the page's refresh to be held", func() (bool, string) {
		return held.Load() > 0, "no refresh yet"
	})
	if n := cut.cut(id); n != 1 {
		t.Fatalf("cut %d streams, want 1", n)
	}
	// another tab takes the freed slot before the page reconnects (retry 3 s)
	follow(maxWatchedJobs)
	testkit.Recv(t, followed, "the last tab to be followed")
	until(t, ctx, "the page to say it is not live", `!!document.getElementById("unfollowed") && !document.querySelector(".live-dot.on")`)
	close(release)
	// the refresh's callback replaces #live and sets its dot at once
	until(t, ctx, "the refresh to land", `document.getElementById("live").dataset.state === "cancelled"`)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("#live .live-dot.on") ? "dot on" : "dot off") + ", note " + (document.getElementById("unfollowed") ? "shown" : "gone")`))
	testkit.Must(t, err)
	if got != "dot off, note shown" {
		t.Errorf("the page's stream is open but unfollowed (no job event will come); after the refresh landed: %s, want dot off, note shown", got)
	}
}
