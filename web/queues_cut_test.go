package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestOverviewSaysQueuesLeftOut: with more queues registered than
// admin.MaxQueuesListed, the overview says how many it shows of how many
// and how to open one it leaves out; with fewer it says nothing. A
// helper's audit found it showed the first MaxQueuesListed as if they
// were all.
func TestOverviewSaysQueuesLeftOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ctx := context.Background()
	overview := func() (int, string) {
		h, err := Handler(Options{Admin: f.ops, Prefix: testPrefix, ops: listedOnly{ops: adminOps{Client: f.ops}, a: f.ops}})
		testkit.Must(t, err)
		req := httptest.NewRequest(http.MethodGet, testPrefix+"/", nil)
		req.Host, req.RemoteAddr = "127.0.0.1:8080", "127.0.0.1:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	f.enqueue(work{}) // registers the test queue
	if code, body := overview(); code != http.StatusOK || !strings.Contains(body, testQueue) || strings.Contains(body, `id="queues-cut"`) {
		t.Fatalf("overview of a namespace with one queue: %d, without it or saying some are left out\n%s", code, body)
	}
	const extra = 3
	args := []any{}
	for i := range admin.MaxQueuesListed + extra {
		args = append(args, "q"+strconv.Itoa(100000+i), "1:1:1767225600000:1767225600000")
	}
	testkit.Must(t, f.env.RDB.HSet(ctx, keys.Queues(f.env.NS), args...).Err())
	total := admin.MaxQueuesListed + extra + 1
	if n, err := f.ops.QueueCount(ctx); err != nil || n != total {
		t.Fatalf("QueueCount: %d, %v; want %d", n, err, total)
	}
	code, body := overview()
	want := fmt.Sprintf("Showing %d of %d queues", admin.MaxQueuesListed, total)
	if code != http.StatusOK || !strings.Contains(body, want) || !strings.Contains(body, testPrefix+"/queues/&lt;name&gt;") {
		i := strings.Index(body, "<h1>")
		t.Fatalf("overview of %d queues: %d, want it to say %q and how to open a queue by name\n%.1500s", total, code, want, body[max(i, 0):])
	}
}

// listedOnly lists the registry's queues as QueuesLive does (the same
// bounded listing) without reading their counters, each with an error
// instead: the counters and hour of 10,000 queues are 20,000 calls,
// longer than a test's timeout under -race, and say nothing of the
// listing's bound.
type listedOnly struct {
	ops
	a *admin.Client
}

var errNotRead = errors.New("counters not read in this test")

func (l listedOnly) QueuesLive(ctx context.Context, queues map[string]int) ([]admin.QueueLive, error) {
	if len(queues) > 0 {
		return l.ops.QueuesLive(ctx, queues)
	}
	qs, err := l.a.Layouts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]admin.QueueLive, len(qs))
	for i, q := range qs {
		out[i] = admin.QueueLive{Queue: q.Name, Partitions: q.Partitions, Err: errNotRead}
	}
	return out, nil
}

// TestOverviewQueueCountFails: when the listing reaches MaxQueuesListed
// and the HLEN that follows fails (a timeout, a dropped connection), the
// overview still lists the queues it read (the listing is whole; only the
// notice needs the count) and says it could not count the registry. A
// review found the whole overview answered 500 (and the stream skipped
// the read).
func TestOverviewQueueCountFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ctx := context.Background()
	args := []any{}
	for i := range admin.MaxQueuesListed {
		args = append(args, "q"+strconv.Itoa(100000+i), "1:1:1767225600000:1767225600000")
	}
	testkit.Must(t, f.env.RDB.HSet(ctx, keys.Queues(f.env.NS), args...).Err())
	h, err := Handler(Options{Admin: f.ops, Prefix: testPrefix,
		ops: countFails{listedOnly{ops: adminOps{Client: f.ops}, a: f.ops}}})
	testkit.Must(t, err)
	req := httptest.NewRequest(http.MethodGet, testPrefix+"/", nil)
	req.Host, req.RemoteAddr = "127.0.0.1:8080", "127.0.0.1:5000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, "q100000") || !strings.Contains(body, "could not be counted") {
		i := strings.Index(body, "<h1>")
		t.Errorf("overview with the registry count failing: %d, want 200 with the queues listed and a notice that they were not counted\n%.600s",
			rec.Code, body[max(i, 0):])
	}
}

type countFails struct{ listedOnly }

func (countFails) QueueCount(context.Context) (int, error) {
	return 0, errors.New("i/o timeout (HLEN)")
}

// TestOverviewExactlyMaxQueues: a registry of exactly MaxQueuesListed
// queues is listed whole and the overview says nothing is left out.
func TestOverviewExactlyMaxQueues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ctx := context.Background()
	f.enqueue(work{})
	args := []any{}
	for i := range admin.MaxQueuesListed - 1 {
		args = append(args, "q"+strconv.Itoa(100000+i), "1:1:1767225600000:1767225600000")
	}
	testkit.Must(t, f.env.RDB.HSet(ctx, keys.Queues(f.env.NS), args...).Err())
	if n, err := f.ops.QueueCount(ctx); err != nil || n != admin.MaxQueuesListed {
		t.Fatalf("QueueCount %d %v", n, err)
	}
	h, err := Handler(Options{Admin: f.ops, Prefix: testPrefix, ops: listedOnly{ops: adminOps{Client: f.ops}, a: f.ops}})
	testkit.Must(t, err)
	req := httptest.NewRequest(http.MethodGet, testPrefix+"/", nil)
	req.Host, req.RemoteAddr = "127.0.0.1:8080", "127.0.0.1:5000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `id="queues-cut"`) || !strings.Contains(rec.Body.String(), "q"+strconv.Itoa(100000+admin.MaxQueuesListed-2)) {
		t.Errorf("overview of exactly %d queues: %d, says some are left out or misses the last", admin.MaxQueuesListed, rec.Code)
	}
}
