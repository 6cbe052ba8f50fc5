package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// browser starts a headless Chromium for the test (found as "chromium",
// or at $SLUICE_CHROMIUM) and returns a tab's context. Without one the
// test fails under CI=true and is skipped, loudly, elsewhere.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("SLUICE_CHROMIUM")
	if path == "" {
		path, _ = exec.LookPath("chromium")
	}
	if path == "" {
		msg := "NO CHROMIUM: the browser tests of package web did not run (apt-get install chromium, or set SLUICE_CHROMIUM)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	return ctx
}

// artifacts is where screenshots go: $SLUICE_ARTIFACTS, or a temporary
// directory of the test.
func artifacts(t *testing.T) string {
	if d := os.Getenv("SLUICE_ARTIFACTS"); d != "" {
		testkit.Must(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// do runs browser steps, failing the test with what it was doing.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// click clicks sel and waits for the page it loads.
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("browser: click %s: %v", sel, err)
	}
}

// until waits for the JavaScript expression to be true.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(testkit.Timeout))); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		t.Fatalf("browser: waiting for %s (%s): %v\npage: %s", what, expr, err, page)
	}
}

// shot saves a screenshot of the whole page as dir/name.png.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	testkit.Must(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// TestBrowserOperatorJourney drives the console in a real headless
// Chromium against a real Redis and worker: log in with the token, see a
// POST without the CSRF token refused from the page's own script, see the
// overview count completions live, follow a queue to a failed job,
// redrive it and watch it complete without reloading, see a running
// job's progress and cancel it. It saves screenshots of every page.
func TestBrowserOperatorJourney(t *testing.T) {
	const token = "journey-token"
	f := newFixture(t, Options{Token: token}, true)
	ctx := browser(t)
	dir := artifacts(t)

	for i := range 12 {
		f.enqueue(work{Order: fmt.Sprint("o-", i)})
	}
	failed := f.enqueue(flaky{N: 7, Secret: "card ending 4242"}, flow.WithMaxAttempts(1), flow.WithHeaders(map[string]string{"tenant": "acme"}))
	f.env.WaitState(failed, flow.StateArchived)

	// Log in with the token.
	do(t, ctx, "open the console", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#login")))
	shot(t, ctx, dir, "login")
	do(t, ctx, "type the token", chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), token))
	click(t, ctx, "#login")
	do(t, ctx, "overview", chromedp.WaitVisible(chromedp.CSS("#queues")))
	until(t, ctx, "the live stream to connect", `document.querySelector(".live-dot.on") !== null`)

	// A script of the page itself, logged in, cannot POST an action without
	// the CSRF token; with the token the page's forms carry, it can.
	victim := f.enqueue(work{Order: "victim"}, flow.WithDelay(time.Hour))
	post := func(withToken bool) int {
		t.Helper()
		status, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`(() => {
			const headers = {"Content-Type": "application/x-www-form-urlencoded"};
			if (%t) headers["X-CSRF-Token"] = document.querySelector('input[name="csrf"]').value;
			return fetch(document.body.dataset.prefix + "/act/delete", {method: "POST", credentials: "same-origin",
				headers, body: "id=" + encodeURIComponent(%q)}).then(r => r.status);
		})()`, withToken, victim), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("browser: POST from the page: %v", err)
		}
		return status
	}
	if code := post(false); code != http.StatusForbidden {
		t.Errorf("a POST without the CSRF token from the page: %d, want 403", code)
	}
	if st := f.env.Job(victim).State; st != flow.StateScheduled {
		t.Fatalf("the refused POST changed the job: it is %s", st)
	}
	if code := post(true); code != http.StatusOK { // the delete's redirect, followed
		t.Errorf("the same POST with the CSRF token: %d, want 200 after the redirect", code)
	}
	if _, err := f.env.Client.Job(context.Background(), victim); !errors.Is(err, flow.ErrNotFound) {
		t.Errorf("the job after the POST with the token: %v, want deleted", err)
	}
	until(t, ctx, "the overview to count the archived job", `document.querySelector('[data-count="web/archived"]').textContent === "1"`)
	// The heading's subtitle is smaller than the heading: its size comes
	// from the stylesheet, as the CSP wants.
	sizes, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[document.querySelector("h1"), document.querySelector("h1 .sub")].map(e => parseFloat(getComputedStyle(e).fontSize))`))
	if err != nil || len(sizes) != 2 || sizes[1] >= sizes[0] {
		t.Errorf("heading and subtitle font sizes %v (%v): want the subtitle smaller", sizes, err)
	}

	// The overview counts a completion live, without a reload.
	do(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`))
	before := textOf(t, ctx, `[data-count="web/completed"]`)
	id := f.enqueue(work{Order: "live"})
	f.env.WaitState(id, flow.StateCompleted)
	until(t, ctx, "the completed count to grow live",
		fmt.Sprintf(`window.sameDocument === true && Number(document.querySelector('[data-count="web/completed"]').textContent) > %s`, before))
	shot(t, ctx, dir, "overview")

	// Follow the queue to the failed job.
	click(t, ctx, `a[data-count="web/archived"]`)
	do(t, ctx, "queue page", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-job=%q]`, failed))))
	shot(t, ctx, dir, "queue")

	// A bulk redrive counts what it would move first, and moves nothing
	// until confirmed.
	click(t, ctx, `a[href*="/confirm/bulk-redrive"]`)
	until(t, ctx, "the dry-run count", `document.querySelector("#dry-run-count")?.textContent === "1"`)
	shot(t, ctx, dir, "bulk-confirm")
	if st := f.env.Job(failed).State; st != flow.StateArchived {
		t.Fatalf("the dry run moved the job: it is %s", st)
	}
	do(t, ctx, "back to the queue", chromedp.Navigate(f.url+"/queues/"+testQueue+"?state=archived"))
	click(t, ctx, fmt.Sprintf(`tr[data-job=%q] a`, failed))
	until(t, ctx, "the failed job's page", `document.querySelector("#live")?.dataset.state === "archived"`)
	until(t, ctx, "the error to show", `document.body.textContent.includes("payment gateway said no")`)
	shot(t, ctx, dir, "job-failed")

	// Redrive it: it runs, blocks on the gate, then completes live.
	gate := make(chan struct{})
	f.gate.Store(&gate)
	f.failing.Store(false)
	click(t, ctx, `[data-action="redrive"]`)
	do(t, ctx, "confirmation page", chromedp.WaitVisible(chromedp.CSS("#confirm")))
	shot(t, ctx, dir, "confirm")
	click(t, ctx, "#confirm")
	until(t, ctx, "the redriven job to run", `document.querySelector("#live")?.dataset.state === "running"`)
	do(t, ctx, "mark the job page", chromedp.Evaluate[chromedp.Void](`window.sameDocument = "job"`))
	close(gate)
	f.env.WaitState(failed, flow.StateCompleted)
	until(t, ctx, "the job page to show completed live, without a reload",
		`window.sameDocument === "job" && document.querySelector("#live")?.dataset.state === "completed"`)
	shot(t, ctx, dir, "job-completed")

	// Cancel a running job.
	running := f.enqueue(block{Percent: 40})
	if got := testkit.Recv(t, f.started, "the blocking job to start"); got != running {
		t.Fatalf("started %s, want %s", got, running)
	}
	do(t, ctx, "running job page", chromedp.Navigate(f.url+jobPath(running)))
	until(t, ctx, "the running job's page", `document.querySelector("#live")?.dataset.state === "running"`)
	// Its progress bar is 40% of its track: the width is an SVG attribute,
	// which the CSP allows (a style attribute it drops).
	ratio, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
		const bar = document.querySelector("svg.bar");
		return bar.querySelector(".fill").getBoundingClientRect().width / bar.getBoundingClientRect().width;
	})()`))
	if err != nil || ratio < 0.38 || ratio > 0.42 {
		t.Errorf("a 40%% job's progress bar fills %.2f of its track (%v)", ratio, err)
	}
	shot(t, ctx, dir, "job-running")
	click(t, ctx, `[data-action="cancel"]`)
	click(t, ctx, "#confirm")
	until(t, ctx, "the job page to show cancelled", `document.querySelector("#live")?.dataset.state === "cancelled"`)
	if got := testkit.Recv(t, f.canceled, "the handler's context to be cancelled"); got != running {
		t.Fatalf("cancelled %s, want %s", got, running)
	}
	if st := f.env.Job(running).State; st != flow.StateCancelled {
		t.Fatalf("the cancelled job is %s", st)
	}

	// A parent with its children, the other pages, a phone, and the dark
	// scheme.
	parentID := f.enqueue(parent{})
	f.startScheduler("nightly")
	f.deadEffect(f.elsewhereList())
	f.suspended(parentID, "the parent to wait for its signal", awaitsOneSignal)
	do(t, ctx, "parent's page", chromedp.Navigate(f.url+jobPath(parentID)), chromedp.WaitVisible(chromedp.CSS(`[data-spawn="kids"]`)))
	shot(t, ctx, dir, "job-children")
	do(t, ctx, "workers page", chromedp.Navigate(f.url+"/workers"), chromedp.WaitVisible(chromedp.CSS("main table")))
	shot(t, ctx, dir, "workers")
	do(t, ctx, "schedules page", chromedp.Navigate(f.url+"/schedules"), chromedp.WaitVisible(chromedp.CSS("main table")))
	until(t, ctx, "the schedule to be listed", `document.querySelector("main table").textContent.includes("nightly")`)
	shot(t, ctx, dir, "schedules")
	do(t, ctx, "dead effects page", chromedp.Navigate(f.url+"/effects"), chromedp.WaitVisible(chromedp.CSS("main table")))
	until(t, ctx, "the dead effect to be listed", `document.querySelector("main table").textContent.includes("INCRBY")`)
	shot(t, ctx, dir, "effects")
	do(t, ctx, "phone overview", chromedp.EmulateViewport(390, 844), chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	shot(t, ctx, dir, "overview-phone")
	do(t, ctx, "dark overview", chromedp.EmulateViewport(1280, 860), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}), chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	shot(t, ctx, dir, "overview-dark")
	t.Logf("screenshots in %s", dir)
}

// textOf is the text of the first element sel matches.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("browser: text of %s: %v", sel, err)
	}
	if _, err := strconv.Atoi(s); err != nil {
		t.Fatalf("browser: %s shows %q, not a count", sel, s)
	}
	return s
}
