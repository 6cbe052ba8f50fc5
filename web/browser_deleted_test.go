package web

import (
	"context"
	"testing"
	"time"

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
	followJobPage(t, ctx, f, id, "scheduled")
	testkit.Must(t, f.ops.DeleteJob(context.Background(), id))
	until(t, ctx, "the page to say the job is gone, with no actions and no live dot",
		`!document.querySelector("#live") && !!document.querySelector("main .flash.error") &&
		 !document.querySelector(".live-dot.on") && !document.querySelector("main form")`)
}
