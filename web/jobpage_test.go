package web

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// jobPage fetches job id's page, failing the test unless it is 200; it
// returns the page with its HTML entities decoded.
func (f *fixture) jobPage(id string) string {
	f.t.Helper()
	code, body := f.get(client(), jobPath(id))
	if code != http.StatusOK {
		f.t.Fatalf("job page of %s: %d\n%s", id, code, body)
	}
	return html.UnescapeString(body)
}

// TestJobPageShowsPanicStack: a handler that panicked is quarantined (a
// crash limit of 1); its page shows the panic's message, and its stack,
// which names the handler's file.
func TestJobPageShowsPanicStack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.quarantined()
	body := f.jobPage(id)
	if !strings.Contains(body, "ledger out of balance") {
		t.Errorf("the page does not show the panic's message:\n%s", body)
	}
	_, stack, ok := strings.Cut(body, "<summary>stack</summary><pre>")
	stack, _, _ = strings.Cut(stack, "</pre>")
	if !ok || !strings.Contains(stack, "main_test.go:") || !strings.Contains(stack, "panic") {
		t.Errorf("the page's stack does not show where the handler panicked: %q", stack)
	}
}

// TestJobPageShowsOrphan: a job whose worker stalled past its lease and
// was reclaimed by another worker (its clock past the lease) shows where
// it came from: reclaimed once, last held by the stalled worker.
func TestJobPageShowsOrphan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	const lease = 30 * time.Second
	start := time.UnixMilli(time.Now().UnixMilli())
	// A runs one job at a time and never reaps: it cannot take the job back.
	a := f.startWorker(runtime.Options{Clock: runtime.NewFakeClock(start), Lease: lease, Concurrency: 1,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour, CrashDelay: -1})
	t.Cleanup(func() { close(f.unstall) }) // before A stops
	id := f.enqueue(stall{})
	if got := testkit.Recv(t, f.started, "A to start the job"); got != id {
		t.Fatalf("started %s, want %s", got, id)
	}
	f.startWorker(runtime.Options{Clock: runtime.NewFakeClock(start.Add(lease + time.Second)), Lease: lease,
		IdlePoll: time.Hour, CrashDelay: -1})
	j := f.env.WaitState(id, flow.StateCompleted)
	if j.Orphan.Count != 1 || j.Orphan.Holder != a.ID() {
		t.Fatalf("orphan record %+v, want reclaimed once from %s", j.Orphan, a.ID())
	}
	body := f.jobPage(id)
	if !strings.Contains(body, "<dt>Orphaned</dt><dd>1 time(s); last held by") || !strings.Contains(body, `data-copy="`+a.ID()+`"`) {
		t.Errorf("the page does not say the job was reclaimed from %s:\n%s", a.ID(), body)
	}
	if !strings.Contains(body, `<span class="what">lease expired</span><span class="mono">held by `+a.ID()+`; reclaimed 1 time(s)</span>`) {
		t.Errorf("the timeline does not show the lease that expired:\n%s", body)
	}
}

// TestJobPageShowsLeaseHolder: a running job's page names the worker
// holding its lease and when the lease expires.
func TestJobPageShowsLeaseHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	w := f.startWorker(runtime.Options{})
	id := f.enqueue(block{})
	if got := testkit.Recv(t, f.started, "the job to start"); got != id {
		t.Fatalf("started %s, want %s", got, id)
	}
	body := f.jobPage(id)
	if !strings.Contains(body, `<dt>Lease</dt><dd><code class="copy" data-copy="`+w.ID()+`"`) {
		t.Errorf("the running job's page does not name %s as its lease holder:\n%s", w.ID(), body)
	}
	if !strings.Contains(body, `<span class="what">lease expires</span><span class="mono">held by `+w.ID()+`</span>`) {
		t.Errorf("the timeline does not show when the lease expires")
	}
	_, err := f.ops.CancelJob(context.Background(), id)
	testkit.Must(t, err)
	testkit.Recv(t, f.canceled, "the job's context to be cancelled")
}

// TestJobPageShowsSleeping: a workflow in step.Sleep shows as sleeping,
// with its timer and when it wakes.
func TestJobPageShowsSleeping(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, true)
	id := f.enqueue(napper{})
	j := f.suspended(id, "the job to sleep", func(j *flow.JobInfo) bool { return j.Suspended })
	body := f.jobPage(id)
	for _, want := range []string{
		`<span class="badge">sleeping</span>`,
		`<span class="badge s-scheduled">scheduled</span>`,
		`<dt>timer nap</dt><dd><time datetime="` + j.RunAt.UTC().Format(time.RFC3339Nano) + `"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the sleeping job's page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "waiting for signal") {
		t.Errorf("a sleeping job's page says it waits for a signal")
	}
}

// stuckOps answers every job as its job, stuck in a cursor step.
type stuckOps struct {
	ops
	job flow.JobInfo
}

func (s stuckOps) Job(context.Context, string) (*flow.JobInfo, error) {
	j := s.job
	return &j, nil
}

// TestHideArgsHidesStuckCursor: the stuck-attempt panel shows the step's
// last cursor checkpoint, a value of the job's data, only when arguments
// are shown: with HideArgs the Steps table hid it and this panel did not.
func TestHideArgsHidesStuckCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{})
	j, err := f.ops.Job(context.Background(), id)
	testkit.Must(t, err)
	j.State = flow.StateRunning
	j.Stuck = &sluicetype.StuckInfo{Case: "no_progress", Why: "no progress for 5m", Since: time.Now(), Step: "scan",
		Cursor: "customer-SECRET-991"}
	for _, hide := range []bool{true, false} {
		h, err := Handler(Options{Admin: f.ops, HideArgs: hide, ops: stuckOps{ops: adminOps{Client: f.ops}, job: *j}})
		testkit.Must(t, err)
		req := httptest.NewRequest(http.MethodGet, jobPath(id), nil)
		req.Host, req.RemoteAddr = "127.0.0.1:8080", "127.0.0.1:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.Contains(body, "Stuck attempt") {
			t.Fatalf("hide-args %v: job page %d without the stuck panel", hide, rec.Code)
		}
		if shown := strings.Contains(body, "customer-SECRET-991"); shown == hide {
			t.Errorf("hide-args %v: the cursor's value shown: %v", hide, shown)
		}
	}
}

// TestRunNowOfferedOnlyWhenAllowed: the job page offers Run now to a
// scheduled or retryable job, not to a sleeping (suspended) workflow nor
// to a job held behind a quarantined twin: admin.Client.RunNow refuses
// both, so the offer always ended in an error.
func TestRunNowOfferedOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		job  flow.JobInfo
		want bool
	}{
		{flow.JobInfo{State: flow.StateScheduled}, true},
		{flow.JobInfo{State: flow.StateRetryable}, true},
		{flow.JobInfo{State: flow.StateScheduled, Suspended: true}, false},
		{flow.JobInfo{State: flow.StateScheduled, HeldBy: "web:0:twin"}, false},
		{flow.JobInfo{State: flow.StateAvailable}, false},
	} {
		got := slices.Contains(jobActions(&tc.job), "runnow")
		if got != tc.want {
			t.Errorf("state %s, suspended %v, held by %q: run now offered %v, want %v", tc.job.State, tc.job.Suspended, tc.job.HeldBy, got, tc.want)
		}
	}

	f := newFixture(t, Options{}, true)
	id := f.enqueue(napper{})
	f.suspended(id, "the job to sleep", func(j *flow.JobInfo) bool { return j.Suspended })
	body := f.jobPage(id)
	if strings.Contains(body, `data-action="runnow"`) || strings.Contains(body, "/confirm/runnow") {
		t.Error("the page of a sleeping workflow offers Run now")
	}
	if !strings.Contains(body, "/confirm/cancel") {
		t.Error("the page of a sleeping workflow offers no cancel")
	}
}
