package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// act opens action's confirmation page with form, as its link does, and
// posts the confirmation with the page's CSRF token. It returns the
// answer's status, Location and body.
func (f *fixture) act(c *http.Client, action string, form url.Values) (int, string, string) {
	f.t.Helper()
	code, body := f.get(c, "/confirm/"+action+"?"+form.Encode())
	if code != http.StatusOK {
		f.t.Fatalf("confirm %s: %d\n%s", action, code, body)
	}
	tok := csrfOf(body)
	if tok == "" {
		f.t.Fatalf("confirm %s: no CSRF token in the form", action)
	}
	form.Set("csrf", tok)
	return f.post(c, "/act/"+action, form)
}

// TestDeleteAction: deleting one job through its confirmation form
// deletes it and goes to its queue's page.
func TestDeleteAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	keep := f.enqueue(work{}, flow.WithDelay(time.Hour))
	code, loc, body := f.act(client(), "delete", url.Values{"id": {id}})
	if code != http.StatusSeeOther || loc != testPrefix+"/queues/"+testQueue {
		t.Fatalf("delete: %d to %q\n%s", code, loc, body)
	}
	if _, err := f.env.Client.Job(context.Background(), id); !errors.Is(err, flow.ErrNotFound) {
		t.Errorf("the deleted job: %v, want not found", err)
	}
	if st := f.env.Job(keep).State; st != flow.StateScheduled {
		t.Errorf("the other job is %s after the delete", st)
	}
}

// TestRerouteAction: rerouting an available job to a live worker through
// the form pins it there (another worker's claim does not get it);
// unpinning it through the form lets any worker claim it. A form naming
// no worker, an unknown policy, a wait with a delay (which the wait
// policy would drop), or a fallback with none shows the confirmation
// again with the error, 400; a wait for a worker that is not live (it
// would strand the job), 404. None of those touches the job.
func TestRerouteAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{})
	ref, ok := keys.ParseRef(f.env.NS, id)
	if !ok {
		t.Fatalf("job ID %q", id)
	}
	st := store.New(f.env.RDB, store.Config{NS: f.env.NS})
	claims := func(worker string) int {
		t.Helper()
		res, err := st.Claim(context.Background(), ref.Partition, store.ClaimRequest{N: 10, Lease: time.Minute, Worker: worker, Nonce: worker})
		testkit.Must(t, err)
		return len(res.Jobs)
	}
	c := client()
	for _, bad := range []struct {
		form url.Values
		code int
		says string
	}{
		{url.Values{}, http.StatusBadRequest, "name a worker, or unpin"},
		{url.Values{"worker": {"worker-b"}, "policy": {"bogus"}, "delay": {"5m"}}, http.StatusBadRequest, "no fallback policy"},
		{url.Values{"worker": {"worker-b"}, "policy": {"wait"}, "delay": {"30s"}}, http.StatusBadRequest, "takes no delay"},
		{url.Values{"worker": {"worker-b"}, "policy": {"after"}}, http.StatusBadRequest, "needs a delay"},
		{url.Values{"worker": {"worker-b"}, "unpin": {"1"}}, http.StatusBadRequest, "unpin takes no worker"},
		// a script's "0" is not yes (any value unpinned: an audit)
		{url.Values{"unpin": {"0"}}, http.StatusBadRequest, "give 1 to unpin"},
		{url.Values{"worker": {"ghost-worker"}, "policy": {"wait"}}, http.StatusNotFound, "is not live"},
	} {
		bad.form.Set("id", id)
		if code, _, body := f.act(c, "reroute", bad.form); code != bad.code || !strings.Contains(body, bad.says) {
			t.Errorf("reroute %v: %d, want %d saying %q\n%s", bad.form, code, bad.code, bad.says, body)
		}
		if sw, err := f.env.RDB.HGet(context.Background(), ref.Job(ref.Local), keys.FieldStickyWorker).Result(); err != redis.Nil {
			t.Fatalf("after reroute %v the job prefers %q (%v), want it untouched", bad.form, sw, err)
		}
	}
	// worker-b serves the queue as its layout has it (a worker on another
	// count stopped claiming from it: refused)
	lay, err := st.ReadLayout(context.Background(), ref.Partition.Queue)
	testkit.Must(t, err)
	testkit.Must(t, st.Heartbeat(context.Background(), sluicetype.WorkerInfo{ID: "worker-b", Queues: map[string]int{ref.Partition.Queue: lay.Partitions}}, time.Minute))
	code, loc, body := f.act(c, "reroute", url.Values{"id": {id}, "worker": {"worker-b"}, "policy": {"wait"}})
	if code != http.StatusSeeOther || loc != testPrefix+jobPath(id) {
		t.Fatalf("reroute: %d to %q\n%s", code, loc, body)
	}
	if n := claims("worker-a"); n != 0 {
		t.Fatalf("worker-a claimed %d job(s) pinned to worker-b", n)
	}
	if body := f.jobPage(id); !strings.Contains(body, "worker-b") {
		t.Errorf("the job's page does not name the worker it prefers:\n%s", body)
	}
	if code, _, body := f.act(c, "reroute", url.Values{"id": {id}, "unpin": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("unpin: %d\n%s", code, body)
	}
	if _, body := f.get(c, jobPath(id)); !strings.Contains(body, "unpinned "+id) {
		t.Errorf("after the unpin the page does not say it:\n%s", body)
	}
	// unpinned again: nothing changes, and nothing is said to
	if code, _, body := f.act(c, "reroute", url.Values{"id": {id}, "unpin": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("unpin again: %d\n%s", code, body)
	}
	if _, body := f.get(c, jobPath(id)); !strings.Contains(body, "already unpinned "+id) {
		t.Errorf("a second unpin does not say the job was not pinned:\n%s", body)
	}
	if n := claims("worker-a"); n != 1 {
		t.Errorf("worker-a claimed %d job(s) after the unpin, want 1", n)
	}
}

// TestReleaseAction: a quarantined job (it panicked, crash limit 1)
// offers Release; releasing it through the form runs it again, and with
// the panic gone it completes, its redrive counted.
func TestReleaseAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.quarantined()
	if body := f.jobPage(id); !strings.Contains(body, `data-action="release"`) {
		t.Fatalf("the quarantined job's page offers no release:\n%s", body)
	}
	f.panicking.Store(false)
	code, loc, body := f.act(client(), "release", url.Values{"id": {id}})
	if code != http.StatusSeeOther || loc != testPrefix+jobPath(id) {
		t.Fatalf("release: %d to %q\n%s", code, loc, body)
	}
	if j := f.env.WaitState(id, flow.StateCompleted); j.Redrives != 1 || j.CrashAttempt != 0 {
		t.Errorf("released job: %d redrives, %d crashes; want 1 and 0 (reset)", j.Redrives, j.CrashAttempt)
	}
}

// TestDeadEffectPageAndRedrive: an effect Redis refused (INCRBY on a key
// holding a list) is listed on the dead-effects page with its job, write
// and error; once the key is mended, redriving it through the form
// applies it and the page lists it no more. A dead entry that holds no
// effect is refused as such (409; a 500 before).
func TestDeadEffectPageAndRedrive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	ctx := context.Background()
	bad := f.elsewhereList()
	id, eff := f.deadEffect(bad)
	c := client()
	for _, path := range []string{"/effects", "/effects?queue=" + testQueue} {
		code, body := f.get(c, path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		for _, want := range []string{`data-copy="` + eff.ID + `"`, `href="` + testPrefix + jobPath(id) + `"`, "INCRBY " + bad, "holds a list"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", path, want, body)
			}
		}
		// The template escapes the query with lower-case hex digits.
		if redrive := `href="` + testPrefix + "/confirm/redrive-effect?effect=" + url.QueryEscape(eff.ID) + `"`; !strings.Contains(strings.ToLower(body), strings.ToLower(redrive)) {
			t.Errorf("%s lacks the effect's redrive link %s", path, redrive)
		}
	}

	testkit.Must(t, f.env.RDB.Del(ctx, bad).Err())
	code, loc, body := f.act(c, "redrive-effect", url.Values{"effect": {eff.ID}})
	if code != http.StatusSeeOther || loc != testPrefix+"/effects" {
		t.Fatalf("redrive-effect: %d to %q\n%s", code, loc, body)
	}
	// The relay applies it on its own loop: poll.
	redistest.Within(t, testkit.Timeout, "the redriven effect to apply", func() (bool, string) {
		v, err := f.env.RDB.Get(ctx, bad).Result()
		return v == "5", fmt.Sprint(v, err)
	})
	if _, body := f.get(c, "/effects"); strings.Contains(body, `data-copy="`+eff.ID+`"`) || !strings.Contains(body, "No dead-lettered effect") {
		t.Errorf("the effects page still lists %s after its redrive:\n%s", eff.ID, body)
	}

	// a dead entry that holds no effect (a parent's notification) is
	// refused as such (409), not as not found
	dead := keys.Partition{NS: f.env.NS, Queue: testQueue, Index: 0}.DeadOutbox()
	sid, err := f.env.RDB.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: []any{"id", "1-1", "o", "1-1", "job", "", "error", "parent notice failed"}}).Result()
	testkit.Must(t, err)
	note := testQueue + ":0:" + sid
	if code, _, body := f.act(c, "redrive-effect", url.Values{"effect": {note}}); code != http.StatusConflict || !strings.Contains(body, "holds no effect to relay") {
		t.Errorf("redrive of a dead notification: %d\n%s", code, body)
	}
}

// TestBulkFailureSaysWhatItDid: a bulk redrive or delete that went
// through partition 0 and then failed on partition 1 (here: at a newer
// data model, as after a newer release upgraded it) says how many jobs it
// moved or deleted before the error: the page that showed the error
// alone told the operator nothing had happened.
func TestBulkFailureSaysWhatItDid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action, did string
	}{{"bulk-redrive", "redrove 2 (examined 2) before: "}, {"bulk-delete", "deleted 2 (examined 2) before: "}} {
		t.Run(tc.action, func(t *testing.T) {
			f := newFixture(t, Options{}, false)
			w := f.startWorker(runtime.Options{})
			var p0 []string
			for i := 0; len(p0) < 2; i++ {
				id := f.enqueue(flaky{N: i}, flow.WithMaxAttempts(1), flow.WithPartitionKey(fmt.Sprint("k", i)))
				f.env.WaitState(id, flow.StateArchived)
				if strings.HasPrefix(id, testQueue+":0:") {
					p0 = append(p0, id)
				} else {
					testkit.Must(t, f.ops.DeleteJob(context.Background(), id))
				}
			}
			testkit.Must(t, w.Stop())
			c := client()
			form := url.Values{"queue": {testQueue}, "state": {flow.StateArchived}}
			code, body := f.get(c, "/confirm/"+tc.action+"?"+form.Encode())
			if code != http.StatusOK {
				t.Fatalf("confirm: %d", code)
			}
			form.Set("csrf", csrfOf(body))
			p1 := keys.Partition{NS: f.env.NS, Queue: testQueue, Index: 1}
			testkit.Must(t, f.env.RDB.Set(context.Background(), p1.Prefix()+"dm", "2", 0).Err())
			code, _, body = f.post(c, "/act/"+tc.action, form)
			for _, id := range p0 { // redriven, or deleted
				if j, err := f.ops.Job(context.Background(), id); err == nil && j.State == flow.StateArchived {
					t.Fatalf("job %s of partition 0 is still archived: the action failed before it", id)
				}
			}
			if code < 400 || !strings.Contains(body, tc.did) {
				i := strings.Index(body, `role="alert">`)
				t.Errorf("%s failed on partition 1 after 2 jobs of partition 0: %d, the page says %.300s", tc.action, code, body[max(i, 0):])
			}
		})
	}
}

// TestBulkSelectionMatchingNothingRefused: a bulk redrive or delete whose
// selection can match no job is refused with 400, on its confirmation
// page (the dry run) and when posted, and moves nothing: a reason Sluice
// does not record that no job has (misspelt), or a finish-time window
// that starts after the store's now. Both were reported as done, with 0
// jobs. A window that ends at or before the epoch (the zero time
// included) selected every job, and is refused too.
func TestBulkSelectionMatchingNothingRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	w := f.startWorker(runtime.Options{})
	var ids []string
	for i := range 2 {
		id := f.enqueue(flaky{N: i}, flow.WithMaxAttempts(1))
		f.env.WaitState(id, flow.StateArchived)
		ids = append(ids, id)
	}
	testkit.Must(t, w.Stop())
	c := client()
	for _, action := range []string{"bulk-redrive", "bulk-delete"} {
		for _, tc := range []struct {
			field, value, says string
		}{
			{"reason", "attempts_exhuasted", "does not record itself"},
			{"after", "2999-01-01T00:00:00Z", "no job has finished since"},
			// the zero time, in any zone, and the epoch: it selected
			// every job, and a bulk delete deleted them
			{"before", "0001-01-01T00:00:00Z", "no job has"},
			{"before", "0001-01-01T05:00:00+05:00", "no job has"},
			{"before", "1970-01-01T00:00:00Z", "no job has"},
		} {
			form := url.Values{"queue": {testQueue}, "state": {flow.StateArchived}, tc.field: {tc.value}}
			code, body := f.get(c, "/confirm/"+action+"?"+form.Encode())
			if code != http.StatusBadRequest || !strings.Contains(body, tc.says) {
				t.Errorf("confirm %s %s=%s: %d, want 400 saying %q", action, tc.field, tc.value, code, tc.says)
			}
			// the form posted anyway (a stale page, a script)
			_, token := f.get(c, "/confirm/pause?"+url.Values{"queue": {testQueue}}.Encode())
			form.Set("csrf", csrfOf(token))
			code, _, body = f.post(c, "/act/"+action, form)
			if code != http.StatusBadRequest || !strings.Contains(body, tc.says) {
				i := strings.Index(body, `role="alert">`)
				t.Errorf("%s %s=%s: %d, the page says %.300s; want 400 saying %q", action, tc.field, tc.value, code, body[max(i, 0):], tc.says)
			}
		}
	}
	for _, id := range ids {
		if j, err := f.ops.Job(context.Background(), id); err != nil || j.State != flow.StateArchived {
			t.Fatalf("job %s after the refused actions: %+v, %v; want it archived", id, j, err)
		}
	}
}

// TestRepeatedFieldRefused: an action, or its confirmation page, given a
// field more than once is refused with 400 and does nothing: actions read
// the first value only, so id=A&id=B cancelled A and reported success.
func TestRepeatedFieldRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{}, flow.WithDelay(time.Hour))
	c := client()
	_, body := f.get(c, "/confirm/cancel?id="+url.QueryEscape(id))
	tok := csrfOf(body)
	for _, tc := range []struct {
		action string
		form   url.Values
	}{
		{"cancel", url.Values{"id": {id, testQueue + ":0:other"}}},
		{"pause", url.Values{"queue": {testQueue, "nosuchqueue"}}},
		{"bulk-delete", url.Values{"queue": {testQueue}, "state": {flow.StateArchived, flow.StateCompleted}}},
	} {
		if code, _ := f.get(c, "/confirm/"+tc.action+"?"+tc.form.Encode()); code != http.StatusBadRequest {
			t.Errorf("confirm %s %v: %d, want 400", tc.action, tc.form, code)
		}
		tc.form.Set("csrf", tok)
		code, loc, _ := f.post(c, "/act/"+tc.action, tc.form)
		if code != http.StatusBadRequest {
			t.Errorf("%s %v: %d (to %q), want 400", tc.action, tc.form, code, loc)
		}
	}
	if st := f.env.Job(id).State; st != flow.StateScheduled {
		t.Errorf("the job is %s, want scheduled still", st)
	}
	if live, err := f.ops.QueuesLive(context.Background(), map[string]int{testQueue: 0}); err != nil || live[0].Paused != 0 {
		t.Errorf("the queue: %+v, %v; want it not paused", live, err)
	}
}

// TestUnknownActionNotFound: an action that does not exist is a plain
// 404 saying so, on its confirmation page and when posted: it said "job
// not found", as if a job were missing.
func TestUnknownActionNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	c := client()
	code, body := f.get(c, "/confirm/nosuch")
	if code != http.StatusNotFound || !strings.Contains(body, "no such action") || strings.Contains(body, "job not found") {
		t.Errorf("/confirm/nosuch: %d\n%s", code, mainOf(body))
	}
	f.enqueue(work{})                                      // registers the test queue, whose pause page has a form
	_, page := f.get(c, "/confirm/pause?queue="+testQueue) // a page with a form, for the CSRF token
	code, _, body = f.post(c, "/act/nosuch", url.Values{"csrf": {csrfOf(page)}, "id": {"x"}})
	if code != http.StatusNotFound || !strings.Contains(body, "no such action") || strings.Contains(body, "job not found") {
		t.Errorf("POST /act/nosuch: %d\n%s", code, mainOf(body))
	}
}
