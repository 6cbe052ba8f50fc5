package web

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit"
)

// pageHooks run in every document before its own script: they count the
// job events of the page's stream (window.jobEvents) and, while
// window.hold is true, hold the response of each fetch the page makes
// until window.release() (window.held counts them).
const pageHooks = `(() => {
  window.jobEvents = 0; window.held = 0; window.hold = false;
  const ES = window.EventSource;
  window.EventSource = function (url) {
    const s = new ES(url);
    s.addEventListener("job", () => { window.jobEvents++; });
    return s;
  };
  // the page reads EventSource.OPEN (whether to light the live dot)
  Object.assign(window.EventSource, { CONNECTING: ES.CONNECTING, OPEN: ES.OPEN, CLOSED: ES.CLOSED });
  const fetch0 = window.fetch;
  window.fetch = function (...args) {
    const p = fetch0.apply(this, args);
    if (!window.hold) return p;
    window.held++;
    return new Promise(resolve => { window.release = () => resolve(p); });
  };
})()`

// followJobPage opens job id's page in ctx with pageHooks, and waits
// until it follows the job live, shown in state.
func followJobPage(t *testing.T, ctx context.Context, f *fixture, id, state string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageHooks}); err != nil {
		t.Fatalf("browser: add the page hooks: %v", err)
	}
	do(t, ctx, "the job's page", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the job page to follow the job live",
		`document.querySelector("#live")?.dataset.state === "`+state+`" && window.jobEvents >= 1`)
}

// TestBrowserJobEventDuringRefresh: a job event that arrives while the
// job page is fetching itself for an earlier one is not lost (the server
// sends only changes): the page fetches again once the first fetch is
// done and shows the latest state, without a reload.
func TestBrowserJobEventDuringRefresh(t *testing.T) {
	f := newFixture(t, Options{}, true)
	ctx := browser(t)
	bg := context.Background()
	id := f.enqueue(block{})
	if got := testkit.Recv(t, f.started, "the blocking job to start"); got != id {
		t.Fatalf("started %s, want %s", got, id)
	}
	followJobPage(t, ctx, f, id, "running")
	do(t, ctx, "mark the page, hold its fetches", chromedp.Evaluate[chromedp.Void](`window.sameDocument = true; window.hold = true`))

	// The cancel's event starts a fetch, held: it read the page cancelled.
	_, err := f.ops.CancelJob(bg, id)
	testkit.Must(t, err)
	testkit.Recv(t, f.canceled, "the handler's context to be cancelled")
	until(t, ctx, "the page to fetch itself after the cancel", `window.held === 1`)
	seen, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.jobEvents`))
	testkit.Must(t, err)

	// The redrive's event arrives while that fetch is in flight.
	_, err = f.ops.Redrive(bg, id)
	testkit.Must(t, err)
	if got := testkit.Recv(t, f.started, "the redriven job to start"); got != id {
		t.Fatalf("started %s, want %s", got, id)
	}
	until(t, ctx, "a job event during the fetch", fmt.Sprintf(`window.jobEvents > %d`, seen))
	do(t, ctx, "release the fetch", chromedp.Evaluate[chromedp.Void](`window.hold = false; window.release()`))
	until(t, ctx, "the page to show the job running again, without a reload",
		`window.sameDocument === true && document.querySelector("#live")?.dataset.state === "running"`)
	// Cancel it: a worker stopping waits a while for a running job.
	_, err = f.ops.CancelJob(bg, id)
	testkit.Must(t, err)
	testkit.Recv(t, f.canceled, "the handler's context to be cancelled")
}
