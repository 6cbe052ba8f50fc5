package web

import (
	"context"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestNotFoundIs404: a page, an action or the event stream naming a
// queue, job, schedule or dead effect that does not exist answers 404
// with the operator API's message, not 500 (nor, for the stream, 200).
func TestNotFoundIs404(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.enqueue(work{}) // registers the test queue
	c := client()
	for _, tc := range []struct{ path, says string }{
		{"/queues/nosuch", "queue not found"},
		{"/queues/nosuch?state=archived&kind=x", "queue not found"},
		{jobPath(testQueue + ":0:nosuch"), "job not found"},
		{"/find?id=" + url.QueryEscape(testQueue+":1:nosuch"), "job not found"},
		{"/effects?queue=nosuch", "not found"},
		// nothing to follow: it held one of the follow slots
		{"/events?job=" + url.QueryEscape(testQueue+":0:nosuch"), "job not found"},
	} {
		code, body := f.get(c, tc.path)
		if code != http.StatusNotFound || !strings.Contains(body, tc.says) {
			t.Errorf("GET %s: %d, want 404 saying %q\n%s", tc.path, code, tc.says, body)
		}
	}
	_, body := f.get(c, "/confirm/pause?queue="+testQueue) // a page with a form, for the CSRF token
	tok := csrfOf(body)
	for _, tc := range []struct {
		action string
		form   url.Values
	}{
		{"trigger", url.Values{"schedule": {"nosuch"}}},
		{"delete-schedule", url.Values{"schedule": {"nosuch"}}},
		{"delete-schedule", url.Values{"schedule": {"nosuch"}, "force": {"1"}}},
		{"redrive-effect", url.Values{"effect": {testQueue + ":0:nosuch"}}},
		{"cancel", url.Values{"id": {testQueue + ":0:nosuch"}}},
	} {
		tc.form.Set("csrf", tok)
		if code, _, body := f.post(c, "/act/"+tc.action, tc.form); code != http.StatusNotFound {
			t.Errorf("POST %s of something not there: %d, want 404\n%s", tc.action, code, body)
		}
	}
}

// TestTemplatesHaveNoStyleAttribute: the Content-Security-Policy says
// style-src 'self', so a browser drops every style attribute: no
// template may carry one (nor may the CSP allow them).
func TestTemplatesHaveNoStyleAttribute(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(templateFS, "templates/*.html")
	testkit.Must(t, err)
	if len(files) != len(pageNames)+1 { // the pages and the layout
		t.Fatalf("templates: %v", files)
	}
	attr := regexp.MustCompile(`(?i)[\s"']style\s*=`)
	for _, name := range files {
		b, err := fs.ReadFile(templateFS, name)
		testkit.Must(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			if attr.MatchString(line) {
				t.Errorf("%s:%d has a style attribute, which the CSP drops: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
	f := newFixture(t, Options{}, false)
	req, err := http.NewRequest(http.MethodGet, f.url+"/", nil)
	testkit.Must(t, err)
	resp, err := client().Do(req)
	testkit.Must(t, err)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "style-src 'self';") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q: want style-src 'self' and nothing unsafe", csp)
	}
}

// TestAttemptsAsTheCLISaysThem: the job page counts failed attempts
// against their limit, as sluice jobs show does, not "0 of 25" for a
// job that completed; after a redrive it says the limit grows.
func TestAttemptsAsTheCLISaysThem(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	c := client()
	done := f.enqueue(work{})
	f.env.WaitState(done, flow.StateCompleted)
	_, body := f.get(c, jobPath(done))
	if want := "<dt>Attempts</dt><dd>0 failed (limit 25), 0 crashes</dd>"; !strings.Contains(body, want) {
		t.Errorf("completed job's page lacks %q:\n%s", want, body)
	}
	if strings.Contains(body, " of 25") {
		t.Errorf("completed job's page still says \"of 25\"")
	}
	failed := f.enqueue(flaky{}, flow.WithMaxAttempts(1))
	f.env.WaitState(failed, flow.StateArchived)
	_, body = f.get(c, jobPath(failed))
	if want := "<dt>Attempts</dt><dd>1 failed (limit 1), 0 crashes</dd>"; !strings.Contains(body, want) {
		t.Errorf("archived job's page lacks %q", want)
	}
	_, err := f.ops.Redrive(context.Background(), failed)
	testkit.Must(t, err)
	f.env.WaitState(failed, flow.StateArchived)
	_, body = f.get(c, jobPath(failed))
	body = html.UnescapeString(body)
	if want := "<dt>Attempts</dt><dd>2 failed (limit 1, +1 per redrive), 0 crashes</dd>"; !strings.Contains(body, want) {
		t.Errorf("redriven job's page lacks %q:\n%s", want, body)
	}
}

// TestOverviewWorkersAtMostTwoSecondsOld: with no stream open, the
// overview shows a worker that started since its last read once that read
// is pageWorkersAge old, however few pages were loaded meanwhile (the
// hub's clock is the test's).
func TestOverviewWorkersAtMostTwoSecondsOld(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.enqueue(work{})
	con, err := newConsole(Options{Admin: f.ops})
	testkit.Must(t, err)
	var (
		mu  sync.Mutex
		now = time.Now()
	)
	con.hub.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	srv := httptest.NewServer(con.routes())
	t.Cleanup(srv.Close)
	overview := func() string {
		t.Helper()
		resp, err := client().Get(srv.URL + "/")
		testkit.Must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		testkit.Must(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("overview: %d\n%s", resp.StatusCode, b)
		}
		return string(b)
	}
	if body := overview(); !strings.Contains(body, "No live worker.") {
		t.Fatalf("overview before any worker lists one:\n%s", body)
	}
	w := f.startWorker(runtime.Options{})
	// The worker registers itself from its own goroutine: poll for it.
	redistest.Within(t, testkit.Timeout, "the worker to register", func() (bool, string) {
		ws, err := f.ops.Workers(context.Background())
		return err == nil && len(ws) == 1 && ws[0].ID == w.ID(), fmt.Sprint(ws, err)
	})
	advance(time.Second)
	if body := overview(); strings.Contains(body, w.ID()) {
		t.Errorf("a page 1 s after the workers were read read them again (want them shared for %s)", pageWorkersAge)
	}
	advance(pageWorkersAge)
	if body := overview(); !strings.Contains(body, w.ID()) {
		t.Errorf("the overview %s after its last workers read does not list the new worker %s:\n%s", time.Second+pageWorkersAge, w.ID(), body)
	}
}

// TestJobPageListsChildren: a parent waiting for children that have not
// finished lists them all, each a link to its page with its state now,
// and counts them per step; once one finishes the count says so.
func TestJobPageListsChildren(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	id, kids := f.laterParent()
	c := client()
	code, body := f.get(c, jobPath(id))
	if code != http.StatusOK {
		t.Fatalf("parent's page: %d", code)
	}
	if !strings.Contains(body, "2 spawned, 0 finished") {
		t.Errorf("parent's page does not count 2 spawned children, none finished:\n%s", body)
	}
	for _, kid := range kids {
		link := `href="` + testPrefix + jobPath(kid) + `"`
		row, ok := rowWith(body, link)
		if !ok || !strings.Contains(row, "badge s-scheduled") || !strings.Contains(row, "not yet") {
			t.Errorf("parent's page: child %s's row %q, want a link, scheduled, not finished", kid, row)
		}
	}

	testkit.Must(t, f.ops.RunNow(context.Background(), kids[0]))
	f.env.WaitState(kids[0], flow.StateCompleted)
	// The child tells its parent from its partition's outbox when the
	// parent lives in another: poll the page.
	redistest.Within(t, testkit.Timeout, "the parent's page to count a finished child", func() (bool, string) {
		_, body = f.get(c, jobPath(id))
		return strings.Contains(body, "2 spawned, 1 finished"), "not counted yet"
	})
	row, _ := rowWith(body, `href="`+testPrefix+jobPath(kids[0])+`"`)
	if strings.Count(row, "badge s-completed") != 2 {
		t.Errorf("the finished child's row %q: want completed now and as the parent knows", row)
	}
}

// laterParent enqueues a parent that spawns two children due in an hour
// (later), waits until it waits for them, and returns its ID and theirs.
func (f *fixture) laterParent() (string, []string) {
	f.t.Helper()
	id := f.enqueue(later{})
	j := f.suspended(id, "the parent to wait for its children", func(j *flow.JobInfo) bool { return j.WaitingFor == "later" })
	var kids []string
	testkit.Must(f.t, j.DecodeStep("later", &kids))
	if len(kids) != 2 {
		f.t.Fatalf("children: %v", kids)
	}
	return id, kids
}

// rowWith is the table row of body that contains s.
func rowWith(body, s string) (string, bool) {
	i := strings.Index(body, s)
	if i < 0 {
		return "", false
	}
	start := strings.LastIndex(body[:i], "<tr>")
	end := strings.Index(body[i:], "</tr>")
	if start < 0 || end < 0 {
		return "", false
	}
	return body[start : i+end], true
}

// TestEffectsPageSaysWhenCut: a queue with more dead effects than the
// page lists (100) says how many it has: the page stopped at 100 and said
// nothing of the others.
func TestEffectsPageSaysWhenCut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.enqueue(work{})
	ctx := context.Background()
	p := keys.Partition{NS: f.env.NS, Queue: testQueue, Index: 1}
	for i := range 130 {
		testkit.Must(t, f.env.RDB.XAdd(ctx, &redis.XAddArgs{Stream: p.DeadOutbox(),
			Values: []any{"id", fmt.Sprint("e", i), "job", "", "error", "WRONGTYPE", "b", ""}}).Err())
	}
	for _, path := range []string{"/effects", "/effects?queue=" + testQueue} {
		code, body := f.get(client(), path)
		rows := strings.Count(body, "/confirm/redrive-effect?effect=")
		if code != http.StatusOK || rows != maxEffectsShown || !strings.Contains(body, "100 of 130 dead effects shown") {
			t.Errorf("%s: %d, %d rows, without saying 100 of 130 are shown", path, code, rows)
		}
	}
}
