package web

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestCancelSaysRetention: the console has no retention setting of its
// own; a job it cancels is kept as long as the queue's workers keep the
// jobs they cancel, which they record in Redis, and the page after the
// cancel says so. Where no worker recorded it, the console keeps the
// default and says that it did and why, rather than "cancelled" alone.
func TestCancelSaysRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	c := client()
	cancel := func(id string) string {
		t.Helper()
		code, loc, body := f.act(c, "cancel", url.Values{"id": {id}})
		if code != 303 {
			t.Fatalf("cancel %s: %d\n%s", id, code, body)
		}
		_, page := f.get(c, strings.TrimPrefix(loc, testPrefix))
		return html.UnescapeString(page)
	}

	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	if page, want := cancel(id), fmt.Sprintf("cancelled %s; kept 24h0m0s, the default: no worker of queue %s has recorded",
		id, testQueue); !strings.Contains(page, want) {
		t.Errorf("the page after a cancel with nothing recorded lacks %q:\n%s", want, page)
	}

	f.startWorker(runtime.Options{RetainCancelled: 48 * time.Hour})
	redistest.Within(t, testkit.Timeout, "the worker to record its retention", func() (bool, string) {
		r, err := f.ops.Retention(context.Background(), testQueue)
		return r.Recorded, fmt.Sprint(r, err)
	})
	id = f.enqueue(work{}, flow.WithDelay(time.Hour))
	if page, want := cancel(id), fmt.Sprintf("cancelled %s; kept 48h0m0s, as the queue's workers keep cancelled jobs", id); !strings.Contains(page, want) {
		t.Errorf("the page after a cancel lacks %q:\n%s", want, page)
	}
}
