package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// statusOf maps an operator error to an HTTP status: every not-found
// sentinel of the operator API (a job, queue, schedule, dead effect) is
// 404, a refusal about the data (its state, corrupt data: ErrMalformed)
// 409; 500 is left to what broke (Redis unreachable, a lost reply).
func statusOf(err error) int {
	switch {
	case errors.Is(err, flow.ErrInvalid), errors.Is(err, admin.ErrTooMany), errors.As(err, new(*admin.UnmatchedReasonError)):
		// the last: a selection by a reason Sluice does not record (most
		// likely misspelt) that matched no job
		return http.StatusBadRequest
	case sluicetype.IsNotFound(err):
		return http.StatusNotFound
	case errors.Is(err, admin.ErrWrongState), errors.Is(err, admin.ErrNoEffectToRelay), errors.Is(err, admin.ErrScheduleRunning),
		errors.Is(err, admin.ErrScheduleOutdated), errors.Is(err, flow.ErrMalformed), errors.Is(err, sluicetype.ErrLayoutMismatch):
		// a schedule's delete refused while a scheduler runs it, a trigger
		// refused for a template an older release published, a dead
		// effect of a partition a shrink retired (the console's layouts
		// are Redis's own, so a mismatch is Redis's queue layout, not the
		// console's configuration): refusals about the data, as is what
		// Redis holds that is not what Sluice writes (a record of another
		// type, a field that does not decode), which the request cannot
		// change: not the console breaking
		return http.StatusConflict
	default:
		return http.StatusInternalServerError
	}
}

// overviewView is the overview page.
type overviewView struct {
	At         time.Time
	Queues     []queueView
	Workers    []sluicetype.WorkerInfo
	BadWorkers []fault
	Running    int
	// Registered is the number of queues in the registry: more than
	// Queues when the listing stopped at admin.MaxQueuesListed.
	Registered int
	Uncounted  bool // the listing reached its bound, the registry was not counted
}

func (c *console) overview(w http.ResponseWriter, r *http.Request) {
	snap, err := c.hub.current(r.Context(), pageWorkersAge)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v := overviewView{At: snap.At, Queues: snap.Queues, Workers: snap.Workers, BadWorkers: snap.BadWorkers,
		Registered: snap.Registered, Uncounted: snap.Uncounted}
	for _, wk := range snap.Workers {
		v.Running += len(wk.Jobs)
	}
	c.render(w, r, http.StatusOK, "overview", "Overview", v)
}

// queuePage is the queue page.
type queuePage struct {
	Queue      admin.QueueLive
	State      string
	Kind       string
	Jobs       []flow.JobInfo
	Cursor     string // this page's cursor ("" for the first)
	Next       string
	Redrivable bool
}

// pageSize is the number of jobs a queue page lists.
const pageSize = 25

func (c *console) queue(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if !runtime.ValidQueue(q) {
		c.fail(w, r, fmt.Errorf("%w: queue %q", flow.ErrInvalid, q))
		return
	}
	qs := r.URL.Query()
	v := queuePage{State: qs.Get("state"), Kind: strings.TrimSpace(qs.Get("kind")), Cursor: qs.Get("cursor")}
	if v.State == "" {
		v.State = flow.StateAvailable
	}
	// this queue's layout as Redis records it now, and its counters: a
	// queue resized since the overview's snapshot shows its new count, and
	// other queues' registry entries are not read (a corrupt one took
	// this page down); its own corrupt counters are shown as an error
	// above its jobs
	live, err := c.ops.QueuesLive(r.Context(), map[string]int{q: 0})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Queue = live[0]
	page, err := c.ops.ListJobs(r.Context(), admin.ListOptions{Queue: q, State: v.State, Kind: v.Kind, Limit: pageSize, Cursor: v.Cursor})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Jobs, v.Next = page.Jobs, page.Next
	v.Redrivable = v.State == flow.StateArchived || v.State == flow.StateCancelled || v.State == flow.StateQuarantined
	c.render(w, r, http.StatusOK, "queue", "Queue "+q, v)
}

// find answers the ID search box.
func (c *console) find(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(r.URL.Query().Get("id"))
	if _, err := c.ops.Job(r.Context(), id); err != nil && !errors.Is(err, flow.ErrMalformed) {
		// (a job whose data cannot be read is there: its page says
		// what is wrong with it, and offers its remedy)
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, c.path(jobPath(id)), http.StatusSeeOther)
}

// jobView is the job page.
type jobView struct {
	Job      *flow.JobInfo
	Extras   admin.JobExtras
	ExtraErr string
	Timeline []moment
	Actions  []string
	// Discard are the kept signals the page offers to discard, by
	// sequence number (discardable).
	Discard map[int64]bool
	Running bool
	Spawns  []spawnGroup      // the children of each spawning step
	Others  []admin.ChildInfo // finished children no spawning step names
}

// moment is one line of a job's timeline.
type moment struct {
	At     time.Time
	What   string
	Detail string
	Bad    bool
}

func (c *console) job(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := c.ops.Job(r.Context(), id)
	if errors.Is(err, flow.ErrMalformed) {
		// its data cannot be read: the page says so, and links to what
		// the console offers such a job (its delete, its cancel: the
		// confirmations record nothing of it), which no other page does
		code := statusOf(err)
		c.o.Logger.Error("sluice web", "path", r.URL.Path, "err", err)
		data := map[string]any{"Error": err.Error(), "Code": code, "ID": id}
		if !c.o.ReadOnly {
			data["Remedy"] = []string{"delete", "cancel"}
		}
		c.render(w, r, code, "error", http.StatusText(code), data)
		return
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v := &jobView{Job: j, Timeline: timeline(j), Actions: jobActions(j), Discard: discardable(j),
		Running: j.State == flow.StateRunning}
	if v.Extras, err = c.ops.JobExtras(r.Context(), id); err != nil {
		v.ExtraErr = err.Error()
	}
	if v.Spawns, v.Others, err = c.children(r.Context(), j, v.Extras); err != nil && v.ExtraErr == "" {
		v.ExtraErr = "children: " + err.Error()
	}
	c.render(w, r, http.StatusOK, "job", "Job "+id, v)
}

// jobActions are the actions job j's state allows. Run now is not
// offered to a suspended workflow (its wake times are part of its history)
// nor to a job held behind a quarantined twin: admin.Client.RunNow
// refuses both.
func jobActions(j *flow.JobInfo) []string {
	switch j.State {
	case flow.StateScheduled, flow.StateRetryable:
		if j.Suspended || j.HeldBy != "" {
			return []string{"reroute", "cancel", "delete"}
		}
		return []string{"runnow", "reroute", "cancel", "delete"}
	case flow.StateAvailable:
		return []string{"reroute", "cancel", "delete"}
	case flow.StateRunning:
		return []string{"reroute", "cancel"}
	case flow.StateArchived, flow.StateCancelled:
		return []string{"redrive", "delete"}
	case flow.StateQuarantined:
		return []string{"release", "delete"}
	default:
		return []string{"delete"}
	}
}

// timeline orders what the job's record says happened to it.
func timeline(j *flow.JobInfo) []moment {
	var ms []moment
	add := func(at time.Time, what, detail string, bad bool) {
		if !at.IsZero() {
			ms = append(ms, moment{At: at, What: what, Detail: detail, Bad: bad})
		}
	}
	add(j.Created, "enqueued", "priority "+fmt.Sprint(j.Priority), false)
	for _, e := range j.Errors {
		add(e.At, e.Class, fmt.Sprintf("attempt %d, crash %d: %s", e.Attempt, e.CrashAttempt, e.Message), true)
	}
	if j.Orphan.Count > 0 {
		add(j.Orphan.ExpiredAt, "lease expired", fmt.Sprintf("held by %s; reclaimed %d time(s)", j.Orphan.Holder, j.Orphan.Count), true)
	}
	for _, s := range j.Steps {
		if !s.Cursor {
			add(s.At, "step", s.Name, false)
		}
	}
	add(j.RedrivenAt, "redriven", fmt.Sprintf("from %s (%d redrive(s))", j.RedrivenFrom, j.Redrives), false)
	if j.State == flow.StateRunning {
		add(j.LeaseExpiry, "lease expires", "held by "+j.LeaseHolder, false)
	}
	if j.State == flow.StateScheduled || j.State == flow.StateRetryable {
		add(j.RunAt, "due", j.State, false)
	}
	if j.Finished.IsZero() {
		sort.SliceStable(ms, func(a, b int) bool { return ms[a].At.Before(ms[b].At) })
		return ms
	}
	detail := j.State
	if j.Reason != "" {
		detail += " (" + j.Reason + ")"
	}
	add(j.Finished, "finished", detail, j.State != flow.StateCompleted)
	sort.SliceStable(ms, func(a, b int) bool { return ms[a].At.Before(ms[b].At) })
	return ms
}

// workers lists the live workers, and the worker records that could not
// be read, each as a row with its error.
func (c *console) workers(w http.ResponseWriter, r *http.Request) {
	ws, err := c.ops.Workers(r.Context())
	bad, only := store.EntryErrors(err)
	if !only {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "workers", "Workers", map[string]any{"Workers": ws, "Bad": faultsOf(bad)})
}

// schedules lists the schedules, and those whose record could not be
// read, each as a row with its error.
func (c *console) schedules(w http.ResponseWriter, r *http.Request) {
	ss, err := c.ops.Schedules(r.Context())
	bad, only := store.EntryErrors(err)
	if !only {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "schedules", "Schedules", map[string]any{"Schedules": ss, "Bad": faultsOf(bad)})
}

// effectsView is the dead-lettered effects page.
type effectsView struct {
	Queue   string
	Queues  []string
	Effects []sluicetype.DeadEffect
	// Cut are the queues with more dead effects than the page lists.
	Cut []effectsCut
	// Bad are the queues whose dead effects could not be read.
	Bad []fault
}

// effectsCut says a queue has more dead effects than the page lists.
type effectsCut struct {
	Queue        string
	Shown, Total int64
}

// maxEffectsShown bounds the dead effects a page lists per queue.
const maxEffectsShown = 100

func (c *console) effects(w http.ResponseWriter, r *http.Request) {
	v := effectsView{Queue: r.URL.Query().Get("queue")}
	// the queue names of the overview's snapshot: no other read of the
	// registry, and a corrupt entry of it is a queue with an error
	snap, err := c.hub.current(r.Context(), streamWorkersAge)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, q := range snap.Queues {
		v.Queues = append(v.Queues, q.Name)
	}
	show := v.Queues
	if v.Queue != "" {
		show = []string{v.Queue}
	}
	for _, q := range show {
		ds, err := c.ops.DeadEffects(r.Context(), q, maxEffectsShown)
		if err == nil && len(ds) == maxEffectsShown {
			// the page lists the first maxEffectsShown: say how many there are
			var n int64
			if n, err = c.ops.DeadEffectCount(r.Context(), q); err == nil && n > int64(len(ds)) {
				v.Cut = append(v.Cut, effectsCut{Queue: q, Shown: int64(len(ds)), Total: n})
			}
		}
		if err != nil {
			if v.Queue != "" || r.Context().Err() != nil {
				c.fail(w, r, err) // the one queue asked for: its error is the page
				return
			}
			v.Bad = append(v.Bad, fault{Name: q, Err: err.Error()})
			continue
		}
		v.Effects = append(v.Effects, ds...)
	}
	c.render(w, r, http.StatusOK, "effects", "Dead effects", v)
}

// events is the live stream: an overview event every poll, and a job
// event when the followed job (?job=ID) changes.
func (c *console) events(w http.ResponseWriter, r *http.Request) {
	if !canFlush(w) {
		http.Error(w, "sluice web: streaming unsupported", http.StatusInternalServerError)
		return
	}
	fl := http.NewResponseController(w) // through an Auth middleware's wrapper
	job := r.URL.Query().Get("job")
	if job != "" {
		briefs, err := c.ops.JobBriefs(r.Context(), []string{job})
		if err == nil {
			err = briefs[job].Err // this job unreadable: the others' reads went on
		}
		if err == nil && briefs[job].State == "" {
			// nothing to follow: it would hold one of the follow slots for
			// as long as the page stays open
			err = fmt.Errorf("job %s: %w", job, flow.ErrNotFound)
		}
		if err != nil {
			http.Error(w, err.Error(), statusOf(err))
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 3000\n\n")
	_ = fl.Flush()
	// a stream opened with a session lasts no longer than it: checked
	// once as the stream opened, it would stream on past the session's
	// logout (a copy of its cookie, another's) and its expiry
	session := ""
	if ck, err := r.Cookie(sessionCookie); err == nil && c.session(r) {
		session = ck.Value
	}
	s := c.hub.subscribe(job)
	defer c.hub.unsubscribe(s)
	if job != "" && s.job == "" {
		// the hub follows maxWatchedJobs jobs at most: the page says it
		// is not live rather than show a job that may have moved on
		fmt.Fprintf(w, "event: unfollowed\ndata: %d\n\n", maxWatchedJobs)
		_ = fl.Flush()
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	closing, _ := r.Context().Value(shutdownKey{}).(chan struct{}) // nil: never
	for {
		// a browser that stops reading, its connection still open, holds
		// the stream no longer than this
		_ = fl.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		var msg string
		select {
		case <-r.Context().Done():
			return
		case <-closing: // the server shuts down: the browser reconnects to the next
			return
		case ev := <-s.ch:
			msg = fmt.Sprintf("event: %s\ndata: %s\n\n", ev.name, ev.data)
		case <-keep.C:
			msg = ": keep-alive\n\n"
		}
		if session != "" && !c.validSession(session) {
			return // logged out, or expired: the browser's reconnection is asked for credentials
		}
		if _, err := io.WriteString(w, msg); err != nil || fl.Flush() != nil {
			return
		}
	}
}

// streamWriteTimeout bounds one write of the live stream.
const streamWriteTimeout = 30 * time.Second

// canFlush reports whether w, or a writer it wraps (Unwrap, as
// http.ResponseController reads it), can flush.
func canFlush(w http.ResponseWriter) bool {
	for {
		if _, ok := w.(http.Flusher); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// bounded returns a context for an operator call made while a page waits.
func bounded(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}
