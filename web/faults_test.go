package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// mainOf is the <main> of a page, for messages.
func mainOf(body string) string {
	if i := strings.Index(body, "<main>"); i >= 0 {
		return body[i:]
	}
	return body
}

// TestCorruptQueueHidesNoOther: a queue whose data is corrupt (a counter
// that is not a number, a stats key of another type, a registry entry
// that is not a layout) is a row with its error on the overview; the
// healthy queue's row, its page and the dead-effects page are served as
// usual. Each of these took every page down with a 500 (the overview, the
// live stream, the page of every queue, which read the whole registry to
// find its own layout).
func TestCorruptQueueHidesNoOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		corrupt func(f *fixture)
	}{
		{"counter", func(f *fixture) {
			p := keys.Partition{NS: f.env.NS, Queue: "other", Index: 0}
			testkit.Must(t, f.env.RDB.HSet(ctx, p.Stats(), "available", "garbage").Err())
		}},
		{"wrong type", func(f *fixture) {
			p := keys.Partition{NS: f.env.NS, Queue: "other", Index: 0}
			testkit.Must(t, f.env.RDB.Del(ctx, p.Stats()).Err())
			testkit.Must(t, f.env.RDB.Set(ctx, p.Stats(), "x", 0).Err())
		}},
		{"registry", func(f *fixture) {
			testkit.Must(t, f.env.RDB.HSet(ctx, keys.Queues(f.env.NS), "other", "garbage").Err())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{}, false)
			f.enqueue(work{})
			f.env.Enqueue(work{}, flow.WithQueue("other"))
			tc.corrupt(f)
			c := client()
			code, body := f.get(c, "/")
			if code != http.StatusOK || !strings.Contains(body, `data-count="`+testQueue+`/available">1<`) {
				t.Errorf("overview: %d, without the healthy queue's count\n%s", code, mainOf(body))
			}
			if !strings.Contains(body, "<b>other</b>") || !strings.Contains(body, "could not be read") {
				t.Errorf("overview: the corrupt queue is not a row with its error\n%s", mainOf(body))
			}
			for _, p := range []string{"/queues/" + testQueue, "/effects"} {
				if code, body := f.get(c, p); code != http.StatusOK {
					t.Errorf("%s: %d\n%s", p, code, mainOf(body))
				}
			}
			if tc.name != "registry" { // its own page says what is wrong, above its jobs
				code, body := f.get(c, "/queues/other")
				if code != http.StatusOK || !strings.Contains(body, "counters could not be read") {
					t.Errorf("/queues/other: %d\n%s", code, mainOf(body))
				}
			}
		})
	}
}

// TestCorruptWorkerHidesNoOther: a worker record that does not decode is
// a row with its error on the overview and the workers page, which list
// the healthy workers as usual (one took both pages down).
func TestCorruptWorkerHidesNoOther(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	f.enqueue(work{})
	ctx := context.Background()
	w := keys.Workers{NS: f.env.NS}
	testkit.Must(t, f.env.RDB.ZAdd(ctx, w.Live(), redis.Z{Score: float64(time.Now().UnixMilli()), Member: "bad-worker"}).Err())
	testkit.Must(t, f.env.RDB.HSet(ctx, w.Worker("bad-worker"), "pid", "not-a-number", "started", "x", "seen", "y").Err())
	c := client()
	for _, p := range []string{"/", "/workers"} {
		code, body := f.get(c, p)
		if code != http.StatusOK || !strings.Contains(body, "bad-worker") || !strings.Contains(body, "record could not be read") {
			t.Errorf("%s with one corrupt worker record: %d\n%s", p, code, mainOf(body))
		}
		if strings.Contains(body, "No live worker") {
			t.Errorf("%s: the healthy worker is not listed\n%s", p, mainOf(body))
		}
	}
}

// TestCorruptScheduleHidesNoOther: a schedule whose record does not
// decode is a row with its error; the others are listed as usual (one
// took the schedules page down).
func TestCorruptScheduleHidesNoOther(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.startScheduler("hourly")
	ctx := context.Background()
	ks := keys.Schedules{NS: f.env.NS}
	testkit.Must(t, f.env.RDB.SAdd(ctx, ks.Names(), "broken").Err())
	testkit.Must(t, f.env.RDB.HSet(ctx, ks.Schedule("broken"), "every", "soon", "queue", testQueue).Err())
	code, body := f.get(client(), "/schedules")
	if code != http.StatusOK || !strings.Contains(body, "hourly") || !strings.Contains(body, "<b>broken</b>") ||
		!strings.Contains(body, "record could not be read") {
		t.Errorf("schedules page with one corrupt schedule: %d\n%s", code, mainOf(body))
	}
}
