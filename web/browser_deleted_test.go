package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestBrowserDeletedJobPage: a job page open while someone else deletes
// the job (the CLI, retention) says the job is gone, with no actions, and
// stops following it. A helper's audit found it went on showing the job
// scheduled, with its Run now, Cancel and Delete buttons, under a live
// dot that stayed on: the page dropped its own fetch's 404 in silence.
func TestBrowserDeletedJobPage(t *testing.T) {
	f := newFixture(t, Options{}, false)
	ctx := browser(t)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageHooks}); err != nil {
		t.Fatalf("browser: add the page hooks: %v", err)
	}
	do(t, ctx, "the scheduled job's page", chromedp.Navigate(f.url+jobPath(id)))
	until(t, ctx, "the job page to follow the job live",
		`document.querySelector("#live")?.dataset.state === "scheduled" && window.jobEvents >= 1`)
	testkit.Must(t, f.ops.DeleteJob(context.Background(), id))
	until(t, ctx, "the page to say the job is gone, with no actions and no live dot",
		`!document.querySelector("#live") && !!document.querySelector("main .flash.error") &&
		 !document.querySelector(".live-dot.on") && !document.querySelector("main form")`)
}
