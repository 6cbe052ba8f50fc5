package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
)

// post sends form to path with the given extra headers; it returns the
// status, the Location header and the body.
func (f *fixture) post(c *http.Client, path string, form url.Values, hdr ...string) (int, string, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(form.Encode()))
	testkit.Must(f.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	testkit.Must(f.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), b.String()
}

// TestCSRFRefused: a state-changing request without the session's CSRF
// token, with a wrong one, or from another origin is refused and changes
// nothing; the same request with the token cancels the job.
func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(flaky{N: 1})
	c := client()
	code, body := f.get(c, "/confirm/cancel?id="+url.QueryEscape(id))
	if code != http.StatusOK {
		t.Fatalf("confirm page: %d\n%s", code, body)
	}
	tok := csrfOf(body)
	if len(tok) < 32 {
		t.Fatalf("confirm page has no CSRF token: %q", tok)
	}
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  []string
		jar  bool
	}{
		{"no token", url.Values{"id": {id}}, nil, true},
		{"wrong token", url.Values{"id": {id}, "csrf": {strings.Repeat("x", 43)}}, nil, true},
		{"token without its cookie", url.Values{"id": {id}, "csrf": {tok}}, nil, false},
		{"cross-origin", url.Values{"id": {id}, "csrf": {tok}}, []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, true},
	} {
		cl := c
		if !tc.jar {
			cl = client()
		}
		code, _, body := f.post(cl, "/act/cancel", tc.form, tc.hdr...)
		if code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403\n%s", tc.name, code, body)
		}
		if st := f.env.Job(id).State; st != flow.StateAvailable {
			t.Fatalf("%s: the job is %s after a refused request", tc.name, st)
		}
	}
	code, loc, body := f.post(c, "/act/cancel", url.Values{"id": {id}, "csrf": {tok}})
	if code != http.StatusSeeOther || !strings.HasSuffix(loc, jobPath(id)) {
		t.Fatalf("with the token: status %d, location %q\n%s", code, loc, body)
	}
	if st := f.env.Job(id).State; st != flow.StateCancelled {
		t.Fatalf("the job is %s after a confirmed cancel", st)
	}
}

// TestTokenAuth: with a token, a request without it is sent to the login
// page (or refused, for a script), a bearer token or a session from the
// login form is let in, and a wrong token is refused 401 (a client that
// sends credentials is no browser to send to the login page).
func TestTokenAuth(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	f := newFixture(t, Options{Token: token}, false)
	c := client()
	if code, _ := f.get(c, "/"); code != http.StatusSeeOther {
		t.Fatalf("no credentials: %d, want a redirect to the login page", code)
	}
	if code, _ := f.get(c, "/events", "Accept", "text/event-stream"); code != http.StatusUnauthorized {
		t.Fatalf("stream without credentials: %d, want 401", code)
	}
	if code, body := f.get(c, "/", "Authorization", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, "Overview") {
		t.Fatalf("bearer token: %d", code)
	}
	if code, _ := f.get(c, "/", "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong bearer token: %d, want 401", code)
	}
	code, body := f.get(c, "/login")
	if code != http.StatusOK {
		t.Fatalf("login page: %d", code)
	}
	tok := csrfOf(body)
	if code, _, _ := f.post(c, "/login", url.Values{"token": {"wrong"}, "csrf": {tok}}); code != http.StatusUnauthorized {
		t.Fatalf("wrong token at login: %d", code)
	}
	if code, _ := f.get(c, "/"); code != http.StatusSeeOther {
		t.Fatalf("after a failed login: %d", code)
	}
	if code, loc, _ := f.post(c, "/login", url.Values{"token": {token}, "csrf": {tok}}); code != http.StatusSeeOther || loc != testPrefix+"/" {
		t.Fatalf("login: %d to %q", code, loc)
	}
	if code, body := f.get(c, "/"); code != http.StatusOK || !strings.Contains(body, "Overview") {
		t.Fatalf("with the session: %d", code)
	}
}

// TestBasicAuthAndMiddleware: basic auth credentials let a request in;
// an Auth middleware decides alone when no token or basic auth is set.
func TestBasicAuthAndMiddleware(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{User: "ops", Password: "pw"}, false)
	c := client()
	if code, _ := f.get(c, "/"); code != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, f.url+"/", nil)
	req.SetBasicAuth("ops", "pw")
	resp, err := c.Do(req)
	testkit.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("basic auth: %d", resp.StatusCode)
	}

	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-App-User") == "" {
				http.Error(w, "app says no", http.StatusTeapot)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	g := newFixture(t, Options{Auth: mw}, false)
	if code, _ := g.get(c, "/"); code != http.StatusTeapot {
		t.Fatalf("middleware refusing: %d", code)
	}
	if code, _ := g.get(c, "/", "X-App-User", "ada"); code != http.StatusOK {
		t.Fatalf("middleware letting through: %d", code)
	}
	if code, _ := g.get(c, "/static/app.css"); code != http.StatusOK {
		t.Fatalf("static files behind the middleware: %d", code)
	}
}

// TestSafeByDefault: without authentication the console answers only
// loopback clients that no proxy forwarded, addressed to a loopback name,
// and ListenAndServe will not listen beyond loopback.
func TestSafeByDefault(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	h, err := Handler(Options{Admin: f.ops})
	testkit.Must(t, err)
	for _, tc := range []struct {
		addr, forwarded string
		want            int
	}{
		{"127.0.0.1:5000", "", http.StatusOK},
		{"[::1]:5000", "", http.StatusOK},
		{"192.0.2.7:5000", "", http.StatusForbidden},
		{"127.0.0.1:5000", "198.51.100.4", http.StatusForbidden}, // a local reverse proxy
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = "127.0.0.1:8080"
		req.RemoteAddr = tc.addr
		if tc.forwarded != "" {
			req.Header.Set("X-Forwarded-For", tc.forwarded)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("request from %s (forwarded for %q): %d, want %d", tc.addr, tc.forwarded, rec.Code, tc.want)
		}
	}
	// The Host a loopback request is addressed to: a loopback name, or
	// (DNS rebinding: another site's name pointed at 127.0.0.1) refused.
	for _, tc := range []struct {
		host string
		want int
	}{
		{"localhost:8080", http.StatusOK},
		{"LOCALHOST", http.StatusOK},
		{"127.0.0.1", http.StatusOK},
		{"127.0.0.1:8080", http.StatusOK},
		{"[::1]:8080", http.StatusOK},
		{"[::1]", http.StatusOK},
		{"rebind.attacker.example:8080", http.StatusMisdirectedRequest},
		{"rebind.attacker.example", http.StatusMisdirectedRequest},
		{"localhost.attacker.example", http.StatusMisdirectedRequest},
		{"192.0.2.7:8080", http.StatusMisdirectedRequest},
		{"", http.StatusMisdirectedRequest},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = tc.host
		req.RemoteAddr = "127.0.0.1:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("loopback request to Host %q: %d, want %d", tc.host, rec.Code, tc.want)
		}
		if tc.want != http.StatusOK && !strings.Contains(rec.Body.String(), EnvToken) {
			t.Errorf("refusal of Host %q does not say how to set authentication: %s", tc.host, rec.Body)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.7:0"} {
		err := ListenAndServe(context.Background(), addr, Options{Admin: f.ops})
		if !errors.Is(err, ErrOptions) {
			t.Errorf("ListenAndServe(%s) without auth: %v, want ErrOptions", addr, err)
		}
	}
	if _, err := Handler(Options{}); !errors.Is(err, ErrOptions) {
		t.Errorf("Handler without Admin: %v", err)
	}
	if _, err := Handler(Options{Admin: f.ops, Prefix: "ops/"}); !errors.Is(err, ErrOptions) {
		t.Errorf("Handler with a bad prefix: %v", err)
	}
}

// TestReadOnlyAndHideArgs: a read-only console shows no action and
// refuses one even with a valid CSRF token; hide-args shows no argument,
// and every page escapes what it shows.
func TestReadOnlyAndHideArgs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ReadOnly: true, HideArgs: true}, false)
	id := f.enqueue(flaky{Secret: "hunter2"}, flow.WithHeaders(map[string]string{"tenant": "acme"}))
	c := client()
	code, body := f.get(c, jobPath(id))
	if code != http.StatusOK {
		t.Fatalf("job page: %d", code)
	}
	for _, no := range []string{"hunter2", "acme", "/confirm/"} {
		if strings.Contains(body, no) {
			t.Errorf("read-only hide-args job page shows %q", no)
		}
	}
	if code, _ := f.get(c, "/confirm/cancel?id="+url.QueryEscape(id)); code != http.StatusNotFound {
		t.Errorf("confirm page on a read-only console: %d", code)
	}
	code, _, _ = f.post(c, "/act/cancel", url.Values{"id": {id}, "csrf": {csrfOf(body)}})
	if code != http.StatusForbidden {
		t.Errorf("action on a read-only console: %d", code)
	}

	g := newFixture(t, Options{}, false)
	evil := `<script>alert("x")</script>`
	id = g.enqueue(flaky{Secret: evil}, flow.WithHeaders(map[string]string{"h": evil}))
	_, body = g.get(c, jobPath(id))
	if strings.Contains(body, evil) || !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("job page does not escape the arguments:\n%s", body)
	}
	if !strings.Contains(body, "/confirm/cancel?id=") {
		t.Errorf("job page of a writable console offers no cancel")
	}
}

// TestRunNowAndBulkDelete: run now makes a delayed job available, and a
// bulk delete counts the jobs it will delete first, then deletes them,
// each through its confirmation form.
func TestRunNowAndBulkDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	c := client()
	act := func(action string, form url.Values) string {
		t.Helper()
		code, body := f.get(c, "/confirm/"+action+"?"+form.Encode())
		if code != http.StatusOK {
			t.Fatalf("confirm %s: %d\n%s", action, code, body)
		}
		form.Set("csrf", csrfOf(body))
		code, _, body = f.post(c, "/act/"+action, form)
		if code != http.StatusSeeOther {
			t.Fatalf("%s: %d\n%s", action, code, body)
		}
		return body
	}
	now := f.enqueue(flaky{}, flow.WithDelay(time.Hour))
	act("runnow", url.Values{"id": {now}})
	if st := f.env.Job(now).State; st != flow.StateAvailable {
		t.Fatalf("after run now the job is %s", st)
	}

	gone := []string{f.enqueue(flaky{}, flow.WithDelay(time.Hour)), f.enqueue(flaky{}, flow.WithDelay(time.Hour))}
	sel := url.Values{"queue": {testQueue}, "state": {flow.StateScheduled}}
	_, body := f.get(c, "/confirm/bulk-delete?"+sel.Encode())
	if !strings.Contains(body, `<b id="dry-run-count">2</b>`) {
		t.Fatalf("bulk delete's dry run does not count 2 jobs:\n%s", body)
	}
	act("bulk-delete", sel)
	for _, id := range gone {
		if _, err := f.env.Client.Job(context.Background(), id); !errors.Is(err, flow.ErrNotFound) {
			t.Errorf("job %s after the bulk delete: %v", id, err)
		}
	}
	if st := f.env.Job(now).State; st != flow.StateAvailable {
		t.Errorf("the available job is %s after deleting the scheduled ones", st)
	}
}

// TestQueueAndScheduleActions: pausing and resuming a queue and a
// schedule, triggering a schedule and redriving a queue's archived jobs
// by selector, each through its confirmation form, do what the operator
// API says; the bulk page counts the jobs first.
func TestQueueAndScheduleActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	ctx := context.Background()
	f.startScheduler("nightly")

	c := client()
	act := func(action string, form url.Values) string {
		t.Helper()
		code, body := f.get(c, "/confirm/"+action+"?"+form.Encode())
		if code != http.StatusOK {
			t.Fatalf("confirm %s: %d\n%s", action, code, body)
		}
		form.Set("csrf", csrfOf(body))
		code, loc, body := f.post(c, "/act/"+action, form)
		if code != http.StatusSeeOther {
			t.Fatalf("%s: %d\n%s", action, code, body)
		}
		return loc
	}
	paused := func() int {
		live, err := f.ops.QueuesLive(ctx, map[string]int{testQueue: 0})
		testkit.Must(t, err)
		return live[0].Paused
	}
	act("pause", url.Values{"queue": {testQueue}})
	if n := paused(); n != testPartitions {
		t.Fatalf("after pause: %d partitions paused", n)
	}
	act("resume", url.Values{"queue": {testQueue}})
	if n := paused(); n != 0 {
		t.Fatalf("after resume: %d partitions paused", n)
	}

	if _, body := f.get(c, "/schedules"); !strings.Contains(body, "nightly") {
		t.Fatalf("schedules page does not list the schedule:\n%s", body)
	}
	act("pause-schedule", url.Values{"schedule": {"nightly"}})
	if s, _ := f.ops.Schedule(ctx, "nightly"); !s.Paused {
		t.Fatal("schedule not paused")
	}
	// a second pause changes nothing, and says so
	if _, page := f.get(c, strings.TrimPrefix(act("pause-schedule", url.Values{"schedule": {"nightly"}}), testPrefix)); !strings.Contains(page,
		"paused schedule nightly (it was paused already)") {
		t.Fatalf("a second pause does not say it changed nothing:\n%s", page)
	}
	act("resume-schedule", url.Values{"schedule": {"nightly"}})
	if s, _ := f.ops.Schedule(ctx, "nightly"); s.Paused {
		t.Fatal("schedule still paused")
	}
	loc := act("trigger", url.Values{"schedule": {"nightly"}})
	id, err := url.PathUnescape(strings.TrimPrefix(loc, testPrefix+"/jobs/"))
	testkit.Must(t, err)
	if j := f.env.WaitState(id, flow.StateCompleted); j.Kind != "work" {
		t.Fatalf("triggered job %s is a %s", id, j.Kind)
	}

	var ids []string
	for i := range 3 {
		id := f.enqueue(flaky{N: i}, flow.WithMaxAttempts(1))
		f.env.WaitState(id, flow.StateArchived)
		ids = append(ids, id)
	}
	_, body := f.get(c, "/confirm/bulk-redrive?queue="+testQueue+"&state=archived&kind=flaky")
	if !strings.Contains(body, `<b id="dry-run-count">3</b>`) {
		t.Fatalf("bulk confirmation does not count 3 jobs:\n%s", body)
	}
	for _, id := range ids {
		if j := f.env.Job(id); j.Redrives != 0 {
			t.Fatalf("the dry run redrove %s", id)
		}
	}
	act("bulk-redrive", url.Values{"queue": {testQueue}, "state": {"archived"}, "kind": {"flaky"}})
	for _, id := range ids {
		if j := f.env.Job(id); j.Redrives != 1 {
			t.Errorf("%s: %d redrives after the bulk redrive", id, j.Redrives)
		}
	}
}

// TestJobPageShowsWorkflow: a parent that checkpointed a step, joined two
// children and waits for a signal shows the step and its result, its
// children as links to their pages, finished, and what it waits for.
func TestJobPageShowsWorkflow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	id := f.enqueue(parent{})
	j := f.suspended(id, "the parent to wait for its signal", awaitsOneSignal)
	code, body := f.get(client(), jobPath(id))
	if code != http.StatusOK {
		t.Fatalf("job page: %d", code)
	}
	for _, want := range []string{"charge", "R-77", "waiting for signal", "approve", "2 spawned, 2 finished", "kids"} {
		if !strings.Contains(body, want) {
			t.Errorf("parent's page lacks %q", want)
		}
	}
	// the current step: the checkpointed step furthest along
	furthest := flow.StepInfo{Index: -1}
	for _, s := range j.Steps {
		if !s.Cursor && s.Index > furthest.Index {
			furthest = s
		}
	}
	if furthest.Name == "" || j.CurrentStep != furthest.Name || !strings.Contains(body, "<dt>Current step</dt><dd>"+furthest.Name+" ") {
		t.Errorf("current step %q (furthest checkpointed: %q), or the page does not show it", j.CurrentStep, furthest.Name)
	}
	x, err := f.ops.JobExtras(context.Background(), id)
	testkit.Must(t, err)
	if len(x.Children) != 2 || x.Children[0].State != flow.StateCompleted || x.MoreChildren {
		t.Errorf("children: %+v", x)
	}
	var kids []string
	testkit.Must(t, j.DecodeStep("kids", &kids))
	for _, kid := range kids {
		if !strings.Contains(body, `href="`+testPrefix+jobPath(kid)+`"`) {
			t.Errorf("parent's page does not link to child %s", kid)
		}
	}
}

// TestBulkDeleteSaysWhatItLeaves: a bulk delete whose state holds an
// entry whose data is not a job says so, with its ID, in its dry run and
// in the message after it (it had reported only the jobs it deleted); a
// dry run that fails answers with the error's status and offers no
// confirmation (it answered 200 with a Confirm button).
func TestBulkDeleteSaysWhatItLeaves(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	c := client()
	ctx := context.Background()
	f.enqueue(flaky{}, flow.WithDelay(time.Hour)) // registers the queue
	p := keys.Partition{NS: f.env.NS, Queue: testQueue, Index: 1}
	testkit.Must(t, f.env.RDB.ZAdd(ctx, p.Terminal(flow.StateArchived), redis.Z{Score: 1, Member: "ghost"}).Err())
	testkit.Must(t, f.env.RDB.Set(ctx, p.Job("ghost"), "not a job", 0).Err())
	ghost := keys.Ref{Partition: p, Local: "ghost"}.String()

	sel := url.Values{"queue": {testQueue}, "state": {flow.StateArchived}}
	code, body := f.get(c, "/confirm/bulk-delete?"+sel.Encode())
	if code != http.StatusOK || !strings.Contains(body, `<b id="dry-run-count">0</b>`) || !strings.Contains(body, "1 entry whose data is not a job: "+ghost) {
		t.Fatalf("dry run: %d, want 0 jobs and the entry it would leave named\n%s", code, body)
	}
	sel.Set("csrf", csrfOf(body))
	code, loc, body := f.post(c, "/act/bulk-delete", sel)
	if code != http.StatusSeeOther {
		t.Fatalf("bulk delete: %d\n%s", code, body)
	}
	if _, body := f.get(c, strings.TrimPrefix(loc, testPrefix)); !strings.Contains(body, "deleted 0 archived jobs of "+testQueue+"; left 1 entry whose data is not a job: "+ghost) {
		t.Errorf("the message after the delete does not name the entry it left:\n%s", body)
	}

	code, body = f.get(c, "/confirm/bulk-delete?queue=nosuchqueue&state=archived")
	if code != http.StatusNotFound || !strings.Contains(body, "dry run failed") || strings.Contains(body, `id="confirm"`) {
		t.Errorf("a failed dry run: %d, want 404 with the error and no Confirm button\n%s", code, body)
	}
}

// TestDNSRebindingRefused: a page of another site whose name an attacker
// points at 127.0.0.1 reaches a console without authentication from the
// browser, over loopback, with its own name in Host and Origin (which the
// cross-origin check compares with Host, so they agree). The console
// must neither show it a payload nor carry out its action; a console with
// a token answers any name (the token is the check).
func TestDNSRebindingRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(flaky{N: 1, Secret: "card-4242"}, flow.WithDelay(time.Hour))
	u, err := url.Parse(f.url)
	testkit.Must(t, err)
	evil := "rebind.attacker.example:" + u.Port()
	c := client()
	do := func(method, path string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, f.url+path, body)
		testkit.Must(t, err)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "http://"+evil)
		}
		req.Host = evil
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := c.Do(req)
		testkit.Must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		testkit.Must(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := do(http.MethodGet, jobPath(id), nil)
	if code != http.StatusMisdirectedRequest || strings.Contains(body, "card-4242") {
		t.Errorf("GET of the job page with Host %s: %d, want %d and no payload", evil, code, http.StatusMisdirectedRequest)
	}
	// the attacker's page cannot get a CSRF token under its name; it
	// would post with one got anyhow (here, from the console's own name)
	_, cbody := f.get(c, "/confirm/cancel?id="+url.QueryEscape(id))
	code, _ = do(http.MethodPost, "/act/cancel", url.Values{"id": {id}, "csrf": {csrfOf(cbody)}})
	if st := f.env.Job(id).State; code != http.StatusMisdirectedRequest || st == flow.StateCancelled {
		t.Errorf("POST cancel with Host and Origin %s: %d, the job is %s", evil, code, st)
	}

	g := newFixture(t, Options{Token: "s3cret-token-value"}, false)
	req, err := http.NewRequest(http.MethodGet, g.url+"/", nil)
	testkit.Must(t, err)
	req.Host = "sluice.example.com"
	req.Header.Set("Authorization", "Bearer s3cret-token-value")
	resp, err := client().Do(req)
	testkit.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a console with a token, under another name: %d", resp.StatusCode)
	}
}

// TestPrefixRedirectsStayUnderIt: a console served at the root under a
// prefix (sluice web --prefix /sluice) sends its address without the
// trailing slash to the console, and the redirects its mux makes (a path
// with a doubled slash, a subtree without its slash) stay under the
// prefix: they went to / and /workers, outside the console.
func TestPrefixRedirectsStayUnderIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	h, err := Handler(Options{Admin: f.ops, Prefix: "/sluice"})
	testkit.Must(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := client()
	for _, tc := range []struct{ path, want string }{
		{"/sluice", "/sluice/"},
		{"/sluice?x=1", "/sluice/?x=1"},
		{"/sluice//workers", "/sluice/workers"},
		{"/sluice/static", "/sluice/static/"},
	} {
		resp, err := c.Get(srv.URL + tc.path)
		testkit.Must(t, err)
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || loc != tc.want {
			t.Errorf("GET %s: %d to %q, want a redirect to %q", tc.path, resp.StatusCode, loc, tc.want)
		}
	}
	// followed, the console's address lands on the overview; its own
	// redirects keep the prefix once
	resp, err := http.Get(srv.URL + "/sluice")
	testkit.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/sluice/" {
		t.Errorf("GET /sluice followed: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
	resp, err = c.Get(srv.URL + "/sluice/find?id=" + url.QueryEscape(f.enqueue(work{})))
	testkit.Must(t, err)
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/sluice/jobs/") {
		t.Errorf("the ID search: %d to %q, want /sluice/jobs/...", resp.StatusCode, loc)
	}
}
