package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
)

var (
	jobRow   = regexp.MustCompile(`<tr data-job="([^"]+)">`)
	nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
)

// queuePage fetches a queue page and returns the jobs it lists, in order,
// and its next page's path ("" for none).
func (f *fixture) queuePage(path string) (jobs []string, next string) {
	f.t.Helper()
	code, body := f.get(client(), path)
	if code != http.StatusOK {
		f.t.Fatalf("%s: %d\n%s", path, code, body)
	}
	for _, m := range jobRow.FindAllStringSubmatch(body, -1) {
		jobs = append(jobs, html.UnescapeString(m[1]))
	}
	if m := nextLink.FindStringSubmatch(body); m != nil {
		next = strings.TrimPrefix(html.UnescapeString(m[1]), testPrefix)
	}
	return jobs, next
}

// TestQueuePagination: a queue's jobs in a state, over several pages
// followed by their next links, are each listed exactly once: no job on
// two pages, none missing; the last page has no next link.
func TestQueuePagination(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	for _, tc := range []struct {
		state string
		opts  []flow.EnqueueOption
	}{
		{flow.StateAvailable, nil},
		{flow.StateScheduled, []flow.EnqueueOption{flow.WithDelay(time.Hour)}},
	} {
		var want []string
		for range pageSize + 7 {
			want = append(want, f.enqueue(work{}, tc.opts...))
		}
		var got []string
		path := "/queues/" + testQueue + "?state=" + tc.state
		pages := 0
		for path != "" {
			if pages++; pages > 3 {
				t.Fatalf("%s: more than 3 pages for %d jobs", tc.state, len(want))
			}
			jobs, next := f.queuePage(path)
			if next != "" && len(jobs) != pageSize {
				t.Errorf("%s: page %d lists %d jobs and has a next page, want %d", tc.state, pages, len(jobs), pageSize)
			}
			if next != "" && !strings.Contains(next, "cursor=") {
				t.Errorf("%s: next link %q has no cursor", tc.state, next)
			}
			got = append(got, jobs...)
			path = next
		}
		if pages != 2 {
			t.Errorf("%s: %d pages for %d jobs, want 2", tc.state, pages, len(want))
		}
		seen := map[string]int{}
		for _, id := range got {
			if seen[id]++; seen[id] == 2 {
				t.Errorf("%s: job %s listed twice", tc.state, id)
			}
		}
		for _, id := range want {
			if seen[id] == 0 {
				t.Errorf("%s: job %s on no page", tc.state, id)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d jobs listed, want %d", tc.state, len(got), len(want))
		}
	}
}

// TestQueueKindFilter: a kind filter lists the jobs of that kind only,
// and its pages' next links keep it; a kind with no job says so.
func TestQueueKindFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	var works, flakies []string
	for range pageSize + 2 {
		works = append(works, f.enqueue(work{}))
	}
	for range 3 {
		flakies = append(flakies, f.enqueue(flaky{}))
	}
	jobs, next := f.queuePage("/queues/" + testQueue + "?state=available&kind=flaky")
	slices.Sort(jobs)
	slices.Sort(flakies)
	if !slices.Equal(jobs, flakies) || next != "" {
		t.Errorf("kind=flaky lists %v (next %q), want %v", jobs, next, flakies)
	}
	jobs, next = f.queuePage("/queues/" + testQueue + "?state=available&kind=work")
	if len(jobs) != pageSize || !strings.Contains(next, "kind=work") {
		t.Fatalf("kind=work: %d jobs, next %q: want %d and a next link keeping the kind", len(jobs), next, pageSize)
	}
	more, next := f.queuePage(next)
	jobs = append(jobs, more...)
	slices.Sort(jobs)
	slices.Sort(works)
	if !slices.Equal(jobs, works) || next != "" {
		t.Errorf("kind=work over two pages lists %v (next %q), want %v", jobs, next, works)
	}
	code, body := f.get(client(), "/queues/"+testQueue+"?state=available&kind=nosuch")
	if code != http.StatusOK || !strings.Contains(body, "No available job of kind nosuch.") || jobRow.MatchString(body) {
		t.Errorf("kind=nosuch: %d, want a page saying no job of that kind\n%s", code, body)
	}
}

// TestFindByID: the search box sends a job's ID (spaces trimmed) to the
// job's page; an ID of no job is 404, a malformed one 400.
func TestFindByID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{})
	c := client()
	for _, q := range []string{id, "  " + id + " "} {
		req, err := http.NewRequest(http.MethodGet, f.url+"/find?id="+url.QueryEscape(q), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != testPrefix+jobPath(id) {
			t.Errorf("find %q: %d to %q, want 303 to %q", q, resp.StatusCode, loc, testPrefix+jobPath(id))
		}
	}
	if code, _ := f.get(c, "/find?id="+url.QueryEscape(testQueue+":0:nosuch")); code != http.StatusNotFound {
		t.Errorf("find of no job: %d, want 404", code)
	}
	if code, _ := f.get(c, "/find?id=garbage"); code != http.StatusBadRequest {
		t.Errorf("find of a malformed ID: %d, want 400", code)
	}
}

// TestQueuePageReadsItsLayout: a queue's page shows the partition count
// Redis records now, not the overview's list of up to 30 s before: after
// a resize it showed the old count, and totals over the old partitions.
// A queue no one registered is 404.
func TestQueuePageReadsItsLayout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	c := client()
	ctx := context.Background()
	f.enqueue(flaky{})
	// a console whose client is given no partition count, as sluice web's
	// (the fixture's is, and would refuse the resized queue)
	fc, err := flow.NewClient(f.env.RDB, flow.ClientOptions{Namespace: f.env.NS})
	testkit.Must(t, err)
	h, err := Handler(Options{Admin: admin.New(fc), Prefix: testPrefix, PollInterval: 200 * time.Millisecond})
	testkit.Must(t, err)
	mux := http.NewServeMux()
	mux.Handle(testPrefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g := &fixture{t: t, url: srv.URL + testPrefix}
	want := func(n int) {
		t.Helper()
		code, body := g.get(c, "/queues/"+testQueue)
		if s := fmt.Sprintf("%d partition(s)", n); code != http.StatusOK || !strings.Contains(body, s) {
			t.Fatalf("queue page: %d, want it to say %q\n%s", code, s, body)
		}
	}
	if code, _ := g.get(c, "/"); code != http.StatusOK { // the overview reads the queue list
		t.Fatalf("overview: %d", code)
	}
	want(testPartitions)
	testkit.Must(t, f.ops.PauseQueue(ctx, testQueue))
	testkit.Must(t, f.ops.ResizeQueue(ctx, testQueue, testPartitions+2))
	want(testPartitions + 2)
	if code, _ := g.get(c, "/queues/nosuchqueue"); code != http.StatusNotFound {
		t.Errorf("an unknown queue's page: %d, want 404", code)
	}
}
