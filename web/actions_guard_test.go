package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// hiddenFields are the hidden inputs of a confirmation page's form: what
// its Confirm button posts (with the fields the operator fills in).
func hiddenFields(body string) url.Values {
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	return form
}

// cancelled enqueues n delayed jobs of args and cancels them.
func (f *fixture) cancelled(args flow.Args, n int) []string {
	var ids []string
	for range n {
		id := f.enqueue(args, flow.WithDelay(time.Hour))
		_, err := f.ops.CancelJob(context.Background(), id)
		testkit.Must(f.t, err)
		ids = append(ids, id)
	}
	return ids
}

// TestActionFieldsOnlyItsOwn: a bulk delete given a field it does not read
// ("Kind", misspelt) ignored it and deleted every job of the state; one
// given its filter in the URL of its POST dropped it alike (found by an
// audit). Both are refused (400), on the confirmation page and the
// action, and nothing is deleted.
func TestActionFieldsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	works := f.cancelled(work{}, 2)
	keep := f.cancelled(flaky{}, 1)
	c := client()
	code, body := f.get(c, "/confirm/bulk-delete?queue="+testQueue+"&state=cancelled&Kind=flaky")
	if code != http.StatusBadRequest || !strings.Contains(body, `reads no field &#34;Kind&#34;`) {
		t.Fatalf("confirm with Kind=flaky: %d; want 400 naming the field", code)
	}
	_, token := f.get(c, "/confirm/pause?"+url.Values{"queue": {testQueue}}.Encode())
	form := url.Values{"queue": {testQueue}, "state": {flow.StateCancelled}, "Kind": {"flaky"}, "csrf": {csrfOf(token)}}
	if code, _, _ := f.post(c, "/act/bulk-delete", form); code != http.StatusBadRequest {
		t.Fatalf("bulk delete with Kind=flaky: %d, want 400", code)
	}
	form.Del("Kind")
	if code, _, _ := f.post(c, "/act/bulk-delete?kind=flaky", form); code != http.StatusBadRequest {
		t.Fatalf("bulk delete with kind=flaky in its URL: %d, want 400", code)
	}
	for _, id := range append(works, keep...) {
		if _, err := f.ops.Job(context.Background(), id); err != nil {
			t.Fatalf("job %s after the refused deletes: %v", id, err)
		}
	}
}

// TestBulkDeleteBoundToItsDryRun: a bulk delete confirmed with a dry run
// of 2 deleted 5 when 3 more jobs were cancelled before the form was
// posted, none of which the operator was shown (found by an audit). The
// confirmation now bounds the selection to the jobs that finished by its
// count, and says so.
func TestBulkDeleteBoundToItsDryRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.cancelled(work{}, 2)
	c := client()
	code, body := f.get(c, "/confirm/bulk-delete?"+url.Values{"queue": {testQueue}, "state": {flow.StateCancelled}, "kind": {"work"}}.Encode())
	form := hiddenFields(body)
	if code != http.StatusOK || !strings.Contains(body, `id="dry-run-count">2<`) || form.Get("before") == "" || !strings.Contains(body, "finished before") {
		t.Fatalf("confirmation: %d, form %v; want a count of 2 and its bound shown", code, form)
	}
	time.Sleep(2 * time.Millisecond) // finish times are whole milliseconds: past the bound's
	later := f.cancelled(work{}, 3)
	code, loc, _ := f.post(c, "/act/bulk-delete", form)
	if code != http.StatusSeeOther {
		t.Fatalf("bulk delete: %d", code)
	}
	if _, page := f.get(c, strings.TrimPrefix(loc, testPrefix)); !strings.Contains(page, "deleted 2 cancelled jobs") {
		t.Errorf("the page after the delete does not say it deleted the 2 counted")
	}
	for _, id := range later {
		if _, err := f.ops.Job(context.Background(), id); err != nil {
			t.Fatalf("job %s, cancelled after the count, was deleted: %v", id, err)
		}
	}
}

// TestBulkDeleteOfUnfinishedJobs: the bound of a bulk action's count is a
// finish time, which scheduled and retryable jobs have not: their delete
// is confirmed without one (a review found the bound added, and every
// such delete refused on Confirm).
func TestBulkDeleteOfUnfinishedJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	ids := []string{f.enqueue(work{}, flow.WithDelay(time.Hour)), f.enqueue(work{}, flow.WithDelay(time.Hour))}
	c := client()
	code, body := f.get(c, "/confirm/bulk-delete?"+url.Values{"queue": {testQueue}, "state": {flow.StateScheduled}}.Encode())
	form := hiddenFields(body)
	if code != http.StatusOK || form.Get("before") != "" {
		t.Fatalf("confirmation: %d, form %v; want no finish-time bound", code, form)
	}
	if code, _, _ := f.post(c, "/act/bulk-delete", form); code != http.StatusSeeOther {
		t.Fatalf("bulk delete of scheduled jobs: %d", code)
	}
	for _, id := range ids {
		if _, err := f.ops.Job(context.Background(), id); err == nil {
			t.Fatalf("job %s was not deleted", id)
		}
	}
}

// TestRedriveConfirmationNamesTheJob: a redrive's confirmation that
// cannot read its job (here: none has the ID) offers no confirmation,
// rather than one without the guard of the attempt shown.
func TestRedriveConfirmationNamesTheJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	c := client()
	if code, body := f.get(c, "/confirm/redrive?id="+url.QueryEscape(testQueue+":0:nosuch")); code != http.StatusNotFound || strings.Contains(body, `id="confirm"`) {
		t.Fatalf("confirmation of a redrive of no job: %d; want 404 and no Confirm", code)
	}
}

// TestRedriveConfirmedTwiceActsOnce: the confirmation of a redrive posted
// twice (a double click, a re-sent request) after the job had run and
// failed again in between redrove it twice, and both said "redriven"
// (found by an audit). The form names the attempt it showed (the fence),
// and the second post is refused (409) once the job ran again.
func TestRedriveConfirmedTwiceActsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	w := f.startWorker(runtime.Options{})
	id := f.enqueue(flaky{}, flow.WithMaxAttempts(1))
	j := f.env.WaitState(id, flow.StateArchived)
	c := client()
	_, body := f.get(c, "/confirm/redrive?id="+url.QueryEscape(id))
	form := hiddenFields(body)
	if form.Get("fence") != strconv.FormatInt(j.Fence, 10) {
		t.Fatalf("the confirmation's form %v does not name the attempt shown (fence %d)", form, j.Fence)
	}
	if code, _, _ := f.post(c, "/act/redrive", form); code != http.StatusSeeOther {
		t.Fatalf("first post: %d", code)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if j, err := f.ops.Job(context.Background(), id); err == nil && j.State == flow.StateArchived && j.Redrives == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the redriven job did not fail again: %+v %v", j, err)
		}
	}
	code, _, page := f.post(c, "/act/redrive", form)
	testkit.Must(t, w.Stop())
	if j, _ := f.ops.Job(context.Background(), id); code != http.StatusConflict || !strings.Contains(page, "ran again since") || j.Redrives != 1 {
		t.Fatalf("the same form posted again: %d, redrives %d; want 409 and one redrive", code, j.Redrives)
	}
}

// TestTriggerErrorPageKeepsItsKey: a trigger whose reply was lost shows
// its confirmation again with the error; that form had lost the
// confirmation's key, so confirming from it added a second job (found by
// an audit). It keeps the key, and the retry finds the first job.
func TestTriggerErrorPageKeepsItsKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.startScheduler("nightly")
	f.enqueue(work{Order: "first"}) // registers the queue
	c := client()
	_, body := f.get(c, "/confirm/trigger?schedule=nightly")
	form := hiddenFields(body)
	f.env.RDB.AddHook(&testkit.LoseFirstReply{Script: lua.Enqueue})
	code, _, body := f.post(c, "/act/trigger", form)
	again := hiddenFields(body)
	if code != http.StatusInternalServerError || again.Get("once") != form.Get("once") {
		t.Fatalf("a trigger whose reply was lost: %d, its form again %v; want 500 and the key %s", code, again, form.Get("once"))
	}
	if code, _, _ := f.post(c, "/act/trigger", again); code != http.StatusSeeOther {
		t.Fatalf("confirming from the error page: %d", code)
	}
	page, err := f.ops.ListJobs(context.Background(), admin.ListOptions{Queue: testQueue, State: flow.StateAvailable, Limit: 50})
	testkit.Must(t, err)
	n := 0
	for _, j := range page.Jobs {
		if strings.Contains(j.ID, "trigger") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d trigger jobs, want 1", n)
	}
}

// TestPauseTwiceSaysSo: a queue paused (resumed) again said "paused web"
// both times, as if the second changed something (an audit); it now says
// it was so already, as a schedule's pause does.
func TestPauseTwiceSaysSo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	f.enqueue(work{}) // registers the queue
	c := client()
	for i, tc := range []struct{ action, says string }{
		{"pause", "paused " + testQueue + "<"}, {"pause", "paused " + testQueue + " (it was paused already)"},
		{"resume", "resumed " + testQueue + "<"}, {"resume", "resumed " + testQueue + " (it was not paused)"},
	} {
		_, body := f.get(c, "/confirm/"+tc.action+"?queue="+testQueue)
		code, loc, _ := f.post(c, "/act/"+tc.action, hiddenFields(body))
		if code != http.StatusSeeOther {
			t.Fatalf("%d: %s: %d", i, tc.action, code)
		}
		if _, page := f.get(c, strings.TrimPrefix(loc, testPrefix)); !strings.Contains(page, tc.says) {
			t.Errorf("%d: %s: the page does not say %q", i, tc.action, tc.says)
		}
	}
}
