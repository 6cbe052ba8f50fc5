package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestBrowserAgesInStoreTime: the console shows each time with its age
// ("12s ago"), which the page's script computes. The times are Redis's;
// here Redis's clock (miniredis, no clock injected) is an hour behind the
// clock of the console's host and browser. A job just enqueued shows an
// age of seconds: the page carries Redis's time when it was made, and
// the script counts from it. (It counted from the browser's clock: "1h
// ago".)
func TestBrowserAgesInStoreTime(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: redistest.NewNamespace(t)})
	testkit.Must(t, err)
	job, err := c.Enqueue(t.Context(), work{Order: "now"})
	testkit.Must(t, err)
	h, err := Handler(Options{Admin: admin.New(c), Prefix: testPrefix})
	testkit.Must(t, err)
	mux := http.NewServeMux()
	mux.Handle(testPrefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	ctx := browser(t)
	do(t, ctx, "open the job page", chromedp.Navigate(srv.URL+testPrefix+"/jobs/"+job.ID), chromedp.WaitVisible(chromedp.CSS("time .rel")))
	age, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("time .rel").textContent`))
	testkit.Must(t, err)
	if age != "0s ago" && age != "1s ago" && age != "2s ago" {
		t.Errorf("the job created just now (store time) shows %q: its age was counted from the browser's clock, an hour ahead of Redis's", age)
	}
}
