package web

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestBrowserJobReplacedBetweenPolls: a job page open while the job is
// deleted and its ID given to a new job (flow.WithID) between two polls of
// the live stream shows the new job once the next poll reads it, though
// the new one has the same state and counters (scheduled, fence 0, no
// attempts). The live stream's brief of a job had no creation time: the
// stream saw no change and sent nothing, and the page went on showing the
// deleted job's arguments under a live dot. The console's poller is held
// while the job is replaced, so that no poll reads the ID in between (it
// would see the job gone, and the page would say so instead).
func TestBrowserJobReplacedBetweenPolls(t *testing.T) {
	f := newFixture(t, Options{}, false)
	ctx := browser(t)
	id := f.enqueue(work{Order: "first"}, flow.WithID("reused-live"), flow.WithDelay(time.Hour))
	followJobPage(t, ctx, f, id, "scheduled")
	until(t, ctx, "the page to show the first job", `document.querySelector("#args")?.textContent.includes("first")`)

	f.con.hub.compute.Lock() // no poll reads the ID until the new job has it
	err := f.ops.DeleteJob(context.Background(), id)
	var id2 string
	if err == nil {
		time.Sleep(2 * time.Millisecond) // a creation time of its own, in ms
		id2 = f.enqueue(work{Order: "second"}, flow.WithID("reused-live"), flow.WithDelay(time.Hour))
	}
	f.con.hub.compute.Unlock()
	testkit.Must(t, err)
	if id2 != id {
		t.Fatalf("the new job is %s, the first %s: not the same ID", id2, id)
	}
	created := f.env.Job(id).Created.UnixMilli()
	until(t, ctx, "the page to show the new job under the ID",
		`document.querySelector("#live")?.dataset.created === "`+strconv.FormatInt(created, 10)+`" &&
		 document.querySelector("#args")?.textContent.includes("second") && !!document.querySelector(".live-dot.on")`)
}
