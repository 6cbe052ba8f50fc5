package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/sticky"
)

// action is one thing an operator can do, behind a confirmation page.
type action struct {
	Title string // "Cancel job"
	What  string // what it does, for the confirmation page
	// Target names the form field that says what it acts on: id, queue,
	// schedule or effect.
	Target string
	Danger bool
	Bulk   bool // takes a selector and shows a dry-run count first
	// Once: its confirmation carries a key that runs it once however
	// often its form is posted (console.once), as a bulk action's does.
	Once bool
	// Fields are the form fields it reads besides Target (and the CSRF
	// token); any other is refused, not ignored: a misspelt filter
	// ("Kind") left out of a bulk delete selected every job of the state.
	Fields []string
	// run does it and returns the message to flash and the page to go to.
	run func(c *console, ctx context.Context, f url.Values) (msg, back string, err error)
}

var actions = map[string]action{
	"cancel": {Title: "Cancel job", Target: "id", Danger: true, Fields: []string{"created", "redrives"},
		What: "The job moves to cancelled. A running attempt's context is cancelled at once; any write it still makes is refused.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			id := f.Get("id")
			if err := c.unchanged(ctx, f); err != nil {
				return "", "", err
			}
			from, before, shown, err := formShown(f)
			if err != nil {
				return "", "", err
			}
			var res admin.Cancelled
			if from.IsZero() {
				res, err = c.ops.CancelJob(ctx, id)
			} else {
				res, err = c.ops.CancelJobOf(ctx, id, from, before, shown)
			}
			return "cancelled " + id + keptFor(res, queueOf(id)), jobPath(id), otherJob(id, err)
		}},
	"delete": {Title: "Delete job", Target: "id", Danger: true, Fields: []string{"created", "redrives"},
		What: "The job and everything kept of it (errors, steps, results) are deleted. This cannot be undone.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			id := f.Get("id")
			if err := c.unchanged(ctx, f); err != nil {
				return "", "", err
			}
			from, before, shown, err := formShown(f)
			if err != nil {
				return "", "", err
			}
			if from.IsZero() {
				err = c.ops.DeleteJob(ctx, id)
			} else {
				err = c.ops.DeleteJobOf(ctx, id, from, before, shown)
			}
			return "deleted " + id, "/queues/" + url.PathEscape(queueOf(id)), otherJob(id, err)
		}},
	"redrive": {Title: "Redrive job", Target: "id", Fields: []string{"created", "fence"},
		What: "The job goes back to available, at the back of its priority's list; its history and counters are kept.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			id := f.Get("id")
			if err := c.unchanged(ctx, f); err != nil {
				return "", "", err
			}
			from, before, shown, err := formShown(f)
			if err != nil {
				return "", "", err
			}
			if from.IsZero() {
				err = reportErr(c.ops.Redrive(ctx, id))
			} else {
				err = reportErr(c.ops.RedriveOf(ctx, id, from, before, shown))
			}
			return "redriven " + id, jobPath(id), otherJob(id, err)
		}},
	"release": {Title: "Release job", Target: "id", Fields: []string{"created", "fence"},
		What: "The quarantined job goes back to available with its crash count reset.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			id := f.Get("id")
			if err := c.unchanged(ctx, f); err != nil {
				return "", "", err
			}
			from, before, shown, err := formShown(f)
			if err != nil {
				return "", "", err
			}
			if from.IsZero() {
				err = reportErr(c.ops.Release(ctx, id))
			} else {
				err = reportErr(c.ops.ReleaseOf(ctx, id, from, before, shown))
			}
			return "released " + id, jobPath(id), otherJob(id, err)
		}},
	"runnow": {Title: "Run job now", Target: "id", Fields: []string{"created", "fence"},
		What: "The scheduled or retryable job becomes available at once.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			id := f.Get("id")
			if err := c.unchanged(ctx, f); err != nil {
				return "", "", err
			}
			from, before, shown, err := formShown(f)
			if err != nil {
				return "", "", err
			}
			if from.IsZero() {
				err = c.ops.RunNow(ctx, id)
			} else {
				err = c.ops.RunNowOf(ctx, id, from, before, shown)
			}
			return "made available " + id, jobPath(id), otherJob(id, err)
		}},
	"reroute": {Title: "Reroute job", Target: "id", Fields: []string{"worker", "policy", "delay", "unpin", "created"},
		What: "The job prefers another worker (sticky routing), or any worker when unpinned.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			id := f.Get("id")
			to, msg, err := rerouteOption(f)
			if err != nil {
				return "", "", err
			}
			// the job the confirmation showed, not a new one given its ID
			if err := c.unchanged(ctx, f); err != nil {
				return "", "", err
			}
			from, before, err := formCreated(f)
			if err != nil {
				return "", "", err
			}
			reroute := func() error {
				// checked again in the reroute's own call: a job given
				// the ID after the read above is refused there
				if from.IsZero() {
					return c.ops.Reroute(ctx, id, to)
				}
				return otherJob(id, c.ops.RerouteOf(ctx, id, to, from, before))
			}
			if to == nil {
				if j, err := c.ops.Job(ctx, id); err == nil && j.PreferredWorker == "" {
					// unpinned all the same (a pin set since is undone),
					// but nothing is said to have changed
					return "already unpinned " + id, jobPath(id), reroute()
				}
			}
			return msg + " " + id, jobPath(id), reroute()
		}},
	"pause": {Title: "Pause queue", Target: "queue",
		What: "No worker claims the queue's jobs until it is resumed; running jobs go on.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			q := f.Get("queue")
			was := c.queueWas(ctx, q, true)
			return "paused " + q + was, "/queues/" + url.PathEscape(q), c.ops.PauseQueue(ctx, q)
		}},
	"resume": {Title: "Resume queue", Target: "queue",
		What: "Workers claim the queue's jobs again.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			q := f.Get("queue")
			was := c.queueWas(ctx, q, false)
			return "resumed " + q + was, "/queues/" + url.PathEscape(q), c.ops.ResumeQueue(ctx, q)
		}},
	"bulk-redrive": {Title: "Redrive jobs", Target: "queue", Bulk: true, Fields: bulkFields,
		What: "Every job the selector chooses goes back to available (quarantined ones are released), in bounded batches.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			sel, err := selector(f)
			if err != nil {
				return "", "", err
			}
			pr, err := c.ops.RedriveSelected(ctx, sel, admin.RedriveOptions{})
			if err != nil && pr.Examined > 0 && !pr.Done {
				// it moved jobs in bounded batches before it failed: the
				// operator must know, or a retry looks like a first try
				// (Done: the scan ended, and the error is about its result)
				err = fmt.Errorf("redrove %d (examined %d%s) before: %w", pr.Matched, pr.Examined, leftOut(pr.Unreadable), err)
			}
			return fmt.Sprintf("redrove %d of %d examined %s jobs of %s%s", pr.Matched, pr.Examined, sel.State, sel.Queue, leftOut(pr.Unreadable)),
				"/queues/" + url.PathEscape(sel.Queue) + "?state=" + url.QueryEscape(sel.State), err
		}},
	"bulk-delete": {Title: "Delete jobs", Target: "queue", Bulk: true, Danger: true, Fields: bulkFields,
		What: "Every job the selector chooses is deleted, in bounded batches. This cannot be undone.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			sel, err := selector(f)
			if err != nil {
				return "", "", err
			}
			pr, err := c.ops.DeleteSelected(ctx, sel, false)
			if err != nil && pr.Examined > 0 && !pr.Done {
				err = fmt.Errorf("deleted %d (examined %d%s) before: %w", pr.Matched, pr.Examined, leftOut(pr.Unreadable), err)
			}
			return fmt.Sprintf("deleted %d %s jobs of %s%s", pr.Matched, sel.State, sel.Queue, leftOut(pr.Unreadable)),
				"/queues/" + url.PathEscape(sel.Queue) + "?state=" + url.QueryEscape(sel.State), err
		}},
	"pause-schedule": {Title: "Pause schedule", Target: "schedule",
		What: "The schedule enqueues no tick until it is resumed.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			return c.pauseSchedule(ctx, f.Get("schedule"), true)
		}},
	"resume-schedule": {Title: "Resume schedule", Target: "schedule",
		What: "The schedule runs again from its next tick; the ticks missed while paused are not run.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			return c.pauseSchedule(ctx, f.Get("schedule"), false)
		}},
	"trigger": {Title: "Trigger schedule", Target: "schedule", Fields: []string{"once"},
		What: "The schedule's job is enqueued once now, outside its ticks.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			n := f.Get("schedule")
			trigger := c.ops.TriggerSchedule
			if key := f.Get("once"); key != "" {
				// the confirmation's key: the form posted twice adds one job
				trigger = func(ctx context.Context, n string) (flow.Enqueued, error) {
					return c.ops.TriggerScheduleOnce(ctx, n, key)
				}
			}
			e, err := trigger(ctx, n)
			if err != nil && e.ID != "" {
				// Redis may have run the enqueue and lost its reply: a
				// second trigger would add a second job
				return "", "", fmt.Errorf("%w (the job may have been added as %s; look it up before triggering again)", err, e.ID)
			}
			switch {
			case err != nil:
				return "", "", err
			case e.Duplicate && e.Unique:
				return "not triggered " + n + ": job " + e.ID + " holds its unique key (it has not finished yet)", jobPath(e.ID), nil
			case e.Duplicate:
				return "triggered " + n + " already, by this confirmation: " + e.ID, jobPath(e.ID), nil
			}
			return "triggered " + n + ": " + e.ID, jobPath(e.ID), nil
		}},
	"delete-schedule": {Title: "Delete schedule", Target: "schedule", Danger: true, Once: true, Fields: []string{"force", "once"},
		What: "The schedule's record is deleted: its definition, its state (paused, last tick) and its ticks claimed by a scheduler " +
			"and not yet confirmed, so that the schedules page no longer lists it. The jobs its ticks and triggers enqueued are kept. " +
			"Remove it from every scheduler's code first: a scheduler still running it publishes it again at its next round. " +
			"A schedule a scheduler synced in the last 5 minutes (or that none of this release ever synced) is refused, unless forced.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			n := f.Get("schedule")
			var o admin.DeleteScheduleOptions
			switch f.Get("force") {
			case "":
			case "1": // the forced confirmation's
				o.Force = true
			default: // "0" or "false" from a script: not taken for yes
				return "", "", fmt.Errorf("%w: force %q: give 1 to force the delete, or leave the field out", flow.ErrInvalid, f.Get("force"))
			}
			if err := c.ops.DeleteSchedule(ctx, n, o); err != nil {
				return "", "", err
			}
			forced := ""
			if o.Force {
				forced = ", forced"
			}
			return "deleted schedule " + n + forced + " (the jobs it enqueued are kept)", "/schedules", nil
		}},
	"discard-signal": discardAction,
	"redrive-effect": {Title: "Redrive dead effect", Target: "effect",
		What: "The effect is relayed again; it applies at most once, and is dead-lettered again if it still cannot apply.",
		run: func(c *console, ctx context.Context, f url.Values) (string, string, error) {
			id := f.Get("effect")
			return "sent back " + id, "/effects", c.ops.RedriveEffects(ctx, id)
		}},
}

// queueOf is the queue part of a job ID.
func queueOf(id string) string {
	q, _, _ := strings.Cut(id, ":")
	return q
}

// reportErr is the error of a one-job Redrive or Release.
// keptFor says how long a job the console cancelled is kept, and why: the
// console gives no retention of its own, so it takes the one the queue's
// workers recorded in Redis and says when none did (it then kept the
// default, which the workers may not have).
func keptFor(res admin.Cancelled, queue string) string {
	switch res.By {
	case admin.KeptByWorkers:
		return fmt.Sprintf("; kept %v, as the queue's workers keep cancelled jobs", res.Kept)
	case admin.KeptByDefault:
		return fmt.Sprintf("; kept %v, the default: no worker of queue %s has recorded how long it keeps cancelled jobs", res.Kept, queue)
	}
	return fmt.Sprintf("; kept %v", res.Kept)
}

func reportErr(rep admin.RedriveReport, err error) error {
	if err != nil {
		return err
	}
	for _, e := range rep.Failed {
		return e
	}
	return nil
}

// rerouteOption reads the reroute form: worker and policy (wait, after,
// fail; after and fail with their delay), or unpin. Anything else in the
// form is refused rather than read as the default: a route with no
// fallback strands the job if its worker never comes (admin.Client.Reroute
// refuses one to a worker that is not live).
func rerouteOption(f url.Values) (flow.EnqueueOption, string, error) {
	worker, policy, delay := strings.TrimSpace(f.Get("worker")), f.Get("policy"), strings.TrimSpace(f.Get("delay"))
	switch f.Get("unpin") {
	case "":
	case "1": // the checkbox's value
		if worker != "" || delay != "" {
			return nil, "", fmt.Errorf("%w: unpin takes no worker or delay", flow.ErrInvalid)
		}
		return nil, "unpinned", nil
	default: // "0" or "false" from a script: not taken for yes
		return nil, "", fmt.Errorf("%w: unpin %q: give 1 to unpin, or leave the field out", flow.ErrInvalid, f.Get("unpin"))
	}
	if worker == "" {
		return nil, "", fmt.Errorf("%w: name a worker, or unpin", flow.ErrInvalid)
	}
	var d time.Duration
	if delay != "" {
		var err error
		if d, err = time.ParseDuration(delay); err != nil || d <= 0 {
			return nil, "", fmt.Errorf("%w: delay %q is not a positive duration", flow.ErrInvalid, delay)
		}
	}
	var p sticky.Policy
	switch policy {
	case "", "wait":
		if d != 0 {
			return nil, "", fmt.Errorf("%w: the wait policy takes no delay (choose after or fail to give one)", flow.ErrInvalid)
		}
		p = sticky.Wait()
	case "after", "fail":
		if d == 0 {
			return nil, "", fmt.Errorf("%w: the %s policy needs a delay", flow.ErrInvalid, policy)
		}
		p = sticky.After(d)
		if policy == "fail" {
			p = sticky.FailAfter(d)
		}
	default:
		return nil, "", fmt.Errorf("%w: no fallback policy %q (wait, after or fail)", flow.ErrInvalid, policy)
	}
	return sticky.To(worker, p), "rerouted to " + worker, nil
}

// selector reads a bulk action's selector from its form.
func selector(f url.Values) (admin.Selector, error) {
	sel := admin.Selector{Queue: f.Get("queue"), State: f.Get("state"), Kind: strings.TrimSpace(f.Get("kind")),
		Reason: strings.TrimSpace(f.Get("reason"))}
	for _, b := range []struct {
		field string
		into  *time.Time
	}{{"after", &sel.FinishedAfter}, {"before", &sel.FinishedBefore}} {
		if s := f.Get(b.field); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			switch {
			case err != nil:
				return sel, fmt.Errorf("%w: %s %q is not an RFC 3339 time", flow.ErrInvalid, b.field, s)
			case t.IsZero() && b.field == "before":
				// the zero time is no bound to the selector: it selected
				// every job (Selector.window refuses the epoch and before)
				return sel, fmt.Errorf("%w: finished before %s: no job has", flow.ErrInvalid, s)
			}
			*b.into = t // an after at the zero time: every job, as no bound
		}
	}
	if sel.State == "" {
		sel.State = flow.StateArchived
	}
	return sel, nil
}

// confirmView is the confirmation page of an action.
type confirmView struct {
	Name   string
	Action action
	Form   url.Values
	Target string // the value of the action's target field
	// Count is the dry run's count of a bulk action, -1 when it failed.
	Count int
	// Left says what a bulk delete's dry run would leave: entries whose
	// data is not a job.
	Left  string
	Error string
	Back  string // the page the Back link goes to
	// Once is a fresh key that makes the confirmed action happen once,
	// however often its form is posted (a trigger's job ID, a bulk
	// action's run: console.once).
	Once string
	// Signal is the signal a discard-signal confirmation discards.
	Signal *flow.SignalInfo
	// Running: a schedule's delete was refused because a scheduler may
	// still run it (admin.ErrScheduleRunning); the page offers the forced
	// delete as a confirmation of its own.
	Running bool
}

// backPage is the page to return to from action a's confirmation page.
func backPage(a action, target string) string {
	switch a.Target {
	case "id":
		return jobPath(target)
	case "queue":
		return "/queues/" + url.PathEscape(target)
	case "schedule":
		return "/schedules"
	default:
		return "/effects"
	}
}

// confirm shows what an action will do, with its form; a bulk action's
// page first counts what it would touch (a dry run).
func (c *console) confirm(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("action")
	a, ok := actions[name]
	if c.o.ReadOnly {
		c.notFound(w, r, "this console is read-only: it has no actions")
		return
	}
	if !ok {
		c.notFound(w, r, fmt.Sprintf("no such action: %q", name))
		return
	}
	f := r.URL.Query()
	if err := formFields(a, f, false); err != nil {
		c.fail(w, r, err)
		return
	}
	v := confirmView{Name: name, Action: a, Form: f, Target: f.Get(a.Target), Back: backPage(a, f.Get(a.Target))}
	if err := c.targetExists(r.Context(), a, v.Target); err != nil {
		c.fail(w, r, err) // a queue or schedule that does not exist is offered no button
		return
	}
	if name == "trigger" || a.Bulk || a.Once {
		v.Once = keys.NewLocal()
	}
	if slices.ContainsFunc(a.Fields, func(k string) bool { return jobFields[k] != nil && f.Get(k) != "" }) {
		// the job page's link records the job it showed (confirmQuery):
		// one that moved on since is refused here, before a confirmation
		// that does not show it is offered
		if err := c.unchanged(r.Context(), f); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	if seen := slices.DeleteFunc(slices.Clone(a.Fields), func(k string) bool { return jobFields[k] == nil || f.Get(k) != "" }); len(seen) > 0 {
		// the job the operator sees: the form posted again once the job
		// ran since (fence), was redriven (redrives) or its ID given to a
		// new job (created) is refused (unchanged), not acted on twice; a
		// page that cannot name it offers no confirmation
		j, err := c.ops.Job(r.Context(), v.Target)
		switch {
		case errors.Is(err, flow.ErrMalformed) && !slices.Contains(a.Fields, "fence"):
			// a job whose data cannot be read (corrupt) is still offered
			// its cancel or delete, the operator's remedy for it, and the
			// form records nothing of it
		case err != nil:
			c.fail(w, r, err)
			return
		default:
			for _, k := range seen {
				f.Set(k, jobFields[k](j))
			}
		}
	}
	if name == "discard-signal" {
		// the signal it would discard, shown (its payload too, to send it
		// again corrected) and recorded: none kept, or a state that
		// refuses, is said here rather than offered
		sg, err := c.keptSignal(r.Context(), v.Target, f.Get("signal"), f.Get("seq"))
		if err != nil {
			c.fail(w, r, err)
			return
		}
		f.Set("seq", strconv.FormatInt(sg.Seq, 10))
		v.Signal = &sg
	}
	code := http.StatusOK
	if a.Bulk {
		ctx, cancel := bounded(r)
		defer cancel()
		var err error
		var unread []string
		if f.Get("before") == "" && finished(f.Get("state")) {
			// the jobs finished by now, counted and acted on alike: one
			// that finishes after is not the action's (never shown)
			var now time.Time
			after, bad := time.Parse(time.RFC3339, f.Get("after"))
			// (an after not before now: the dry run refuses the window)
			if now, err = c.ops.StoreTime(ctx); err == nil && (bad != nil || after.Before(now)) {
				f.Set("before", now.UTC().Format(time.RFC3339Nano))
			}
		}
		if err == nil {
			v.Count, unread, err = c.dryRun(ctx, name, f)
		}
		v.Left = strings.TrimPrefix(leftOut(unread), "; left ")
		if err != nil {
			// the page says why, with the status of the error, and offers
			// no confirmation of what could not be counted
			v.Count, v.Error, code = -1, "dry run failed: "+err.Error(), statusOf(err)
		}
	}
	c.render(w, r, code, "confirm", a.Title, v)
}

// targetExists is ErrQueueNotFound or ErrScheduleNotFound when the queue
// or schedule action a names by target is not there (a bulk action's dry
// run says so itself); other errors leave the action to say what is
// wrong (a corrupt schedule record can still be paused).
func (c *console) targetExists(ctx context.Context, a action, target string) error {
	var err error
	switch {
	case a.Bulk:
	case a.Target == "queue":
		_, err = c.ops.QueuesLive(ctx, map[string]int{target: 0})
	case a.Target == "schedule":
		_, err = c.ops.Schedule(ctx, target)
	}
	if sluicetype.IsNotFound(err) {
		return err
	}
	return nil
}

// dryRun counts what bulk action name would touch, and for a delete the
// entries it would leave.
func (c *console) dryRun(ctx context.Context, name string, f url.Values) (int, []string, error) {
	sel, err := selector(f)
	if err != nil {
		return 0, nil, err
	}
	if name == "bulk-delete" {
		pr, err := c.ops.DeleteSelected(ctx, sel, true)
		return pr.Matched, pr.Unreadable, err
	}
	pr, err := c.ops.RedriveSelected(ctx, sel, admin.RedriveOptions{DryRun: true})
	return pr.Matched, pr.Unreadable, err
}

// leftOut says which entries a bulk delete left because their data is not
// a job ("" for none), the first few by ID.
func leftOut(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	shown := ids[:min(len(ids), 5)]
	more := ""
	if len(ids) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(ids)-len(shown))
	}
	return fmt.Sprintf("; left %d entr%s whose data is not a job: %s%s", len(ids), map[bool]string{true: "y", false: "ies"}[len(ids) == 1],
		strings.Join(shown, ", "), more)
}

// act carries out a confirmed action; on an error it shows the
// confirmation page again with the error.
func (c *console) act(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("action")
	a, ok := actions[name]
	if c.o.ReadOnly {
		http.Error(w, "sluice web: this console is read-only", http.StatusForbidden)
		return
	}
	if !ok {
		c.notFound(w, r, fmt.Sprintf("no such action: %q", name))
		return
	}
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, fmt.Errorf("%w: %v", flow.ErrInvalid, err))
		return
	}
	f := r.PostForm
	if r.URL.RawQuery != "" {
		// read from the form only: a field in the URL was dropped
		c.fail(w, r, fmt.Errorf("%w: an action takes its fields in its form, not in the URL (%q)", flow.ErrInvalid, r.URL.RawQuery))
		return
	}
	if err := formFields(a, f, true); err != nil {
		c.fail(w, r, err)
		return
	}
	if f.Get(a.Target) == "" {
		c.fail(w, r, fmt.Errorf("%w: %s names no %s", flow.ErrInvalid, name, a.Target))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Minute)
	defer cancel()
	var msg, back string
	var err error
	if key := f.Get("once"); (a.Bulk || a.Once) && key != "" {
		if len(key) > 64 {
			c.fail(w, r, fmt.Errorf("%w: the confirmation's key is %d bytes, at most 64", flow.ErrInvalid, len(key)))
			return
		}
		// run past this request: the browser that posts the form again
		// (a double click) drops the first post, whose run must finish
		// for the second to say what it did
		bctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Minute)
		defer cancel()
		// the key runs this form once: the same key posted with another
		// form (another selector, target or signal) is not the run it
		// names, and runs as its own (the form hashed: kept in memory)
		what := maps.Clone(f)
		delete(what, csrfField)
		sum := sha256.Sum256([]byte(what.Encode()))
		var again bool
		msg, back, again, err = c.once.do(name+" "+key+" "+hex.EncodeToString(sum[:]), func() (string, string, error) { return a.run(c, bctx, f) })
		if again {
			msg = "done already, by this confirmation posted before: " + msg
		}
	} else {
		msg, back, err = a.run(c, ctx, f)
	}
	if err != nil {
		code := statusOf(err)
		if code == http.StatusInternalServerError && !errors.Is(err, context.Canceled) {
			c.o.Logger.Error("sluice web: action", "action", name, "err", err)
		}
		// the form again, as it was posted: a trigger's key too, so that a
		// retry after an unknown outcome adds no second job
		v := confirmView{Name: name, Action: a, Form: f, Target: f.Get(a.Target),
			Count: -1, Error: err.Error(), Back: backPage(a, f.Get(a.Target)), Once: f.Get("once"),
			Running: errors.Is(err, admin.ErrScheduleRunning) && f.Get("force") == ""}
		if v.Running && v.Once == "" {
			// the forced delete it offers runs once however often posted
			v.Once = keys.NewLocal()
		}
		c.render(w, r, code, "confirm", a.Title, v)
		return
	}
	c.flash(w, r, msg)
	http.Redirect(w, r, c.path(back), http.StatusSeeOther)
}

// queueWas says, for a pause (pause) or a resume of queue q, when it
// changes nothing: q was paused already (every partition), or was not
// paused, as the CLI and a schedule's pause say. Both are idempotent, and
// said the same twice. A queue that cannot be read says nothing (the
// action says what is wrong with it).
func (c *console) queueWas(ctx context.Context, q string, pause bool) string {
	qs, err := c.ops.QueuesLive(ctx, map[string]int{q: 0})
	if err != nil {
		return ""
	}
	for _, info := range qs {
		switch {
		case info.Queue != q || info.Err != nil:
		case pause && info.Paused > 0 && info.Paused == info.Partitions:
			return " (it was paused already)"
		case !pause && info.Paused == 0:
			return " (it was not paused)"
		}
	}
	return ""
}

// terminal reports whether state is a finished job's.
func terminal(state string) bool {
	return state == flow.StateCompleted || state == flow.StateArchived || state == flow.StateQuarantined || state == flow.StateCancelled
}

// finished reports whether a bulk action's state (its form's; archived
// when empty) is one of finished jobs, which a finish time selects.
func finished(state string) bool { return state == "" || terminal(state) }

// selectorFields are a bulk action's selector fields (selector).
var selectorFields = []string{"state", "kind", "reason", "after", "before"}

// bulkFields are a bulk action's: its selector, and the key of its
// confirmation that runs it once however often its form is posted
// (console.once).
var bulkFields = append(slices.Clone(selectorFields), "once")

// formFields refuses a form that gives a field more than once (every
// action reads one value of each field, url.Values.Get, the first, so
// id=A&id=B acted on A alone and reported success, as if it were both),
// or a field action a does not read (a misspelt filter, ignored, widened
// a bulk delete to every job of the state); posted says the form is a
// POST's, which carries the CSRF token.
func formFields(a action, f url.Values, posted bool) error {
	for k, vs := range f {
		switch {
		case len(vs) > 1:
			return fmt.Errorf("%w: the field %q is given %d times: an action takes one of each", flow.ErrInvalid, k, len(vs))
		case k == a.Target || slices.Contains(a.Fields, k) || posted && k == "csrf":
		default:
			return fmt.Errorf("%w: %s reads no field %q (it reads %s)", flow.ErrInvalid, a.Title, k, strings.Join(append([]string{a.Target}, a.Fields...), ", "))
		}
	}
	return nil
}

// jobFields are what a one-job action's confirmation may record of the
// job it shows, for unchanged to check.
var jobFields = map[string]func(*flow.JobInfo) string{
	"fence":    func(j *flow.JobInfo) string { return strconv.FormatInt(j.Fence, 10) },
	"created":  func(j *flow.JobInfo) string { return strconv.FormatInt(j.Created.UnixNano(), 10) },
	"redrives": func(j *flow.JobInfo) string { return strconv.Itoa(j.Redrives) },
}

// unchanged refuses a one-job action whose form records the job the
// confirmation showed (jobFields) when the job has moved on since: the
// form posted twice (a double click, a re-sent request) would otherwise
// act again on a job that ran again, was redriven, or whose ID a new job
// took in between, and say so twice. A job gone since is named.
func (c *console) unchanged(ctx context.Context, f url.Values) error {
	var seen []string
	for _, k := range []string{"created", "redrives", "fence"} { // the first difference says why
		if f.Get(k) != "" {
			seen = append(seen, k)
		}
	}
	if len(seen) == 0 {
		return nil
	}
	id := f.Get("id")
	j, err := c.ops.Job(ctx, id)
	if errors.Is(err, flow.ErrNotFound) {
		return fmt.Errorf("job %s: %w (it was there when this page was shown: deleted since, or by this form posted before)", id, err)
	}
	if err != nil {
		return err
	}
	for _, k := range seen {
		if jobFields[k](j) == f.Get(k) {
			continue
		}
		why := map[string]string{"fence": "ran again", "created": "is another job (its ID was given to a new one)", "redrives": "was redriven"}[k]
		return fmt.Errorf("%w: job %s %s since this page was shown (it is %s now): look at it first", admin.ErrWrongState, j.ID, why, j.State)
	}
	return nil
}

// formCreated reads the creation time a one-job action's form records
// (jobFields, in ns) as the range of the ms it falls in, creation times
// being kept in ms; the zero times when the form records none. The
// action passes it to its call (CancelJobOf and the others of its kind),
// which checks it in its own script call: unchanged checks the job
// before, and a job deleted and its ID given to a new one between that
// read and the call would be acted on, which the operator never saw.
func formCreated(f url.Values) (from, before time.Time, err error) {
	created := f.Get("created")
	if created == "" {
		return time.Time{}, time.Time{}, nil
	}
	ns, err := strconv.ParseInt(created, 10, 64)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: the job's creation time %q is no time", flow.ErrInvalid, created)
	}
	at := time.Unix(0, ns)
	return at, at.Add(time.Millisecond), nil
}

// formShown reads, besides the creation time (formCreated), the fence
// and the count of redrives a one-job action's form records (jobFields),
// for its call to check in its own script call as it checks the creation
// time: unchanged checks them before, and a job that ran again or was
// redriven between that read and the call (keeping its creation time)
// would be acted on again, which the operator never saw.
func formShown(f url.Values) (from, before time.Time, shown admin.Shown, err error) {
	if from, before, err = formCreated(f); err != nil {
		return time.Time{}, time.Time{}, admin.Shown{}, err
	}
	if v := f.Get("fence"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, time.Time{}, admin.Shown{}, fmt.Errorf("%w: the job's fence %q is no count", flow.ErrInvalid, v)
		}
		shown.Fence = &n
	}
	if v := f.Get("redrives"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return time.Time{}, time.Time{}, admin.Shown{}, fmt.Errorf("%w: the job's count of redrives %q is no count", flow.ErrInvalid, v)
		}
		shown.Redrives = &n
	}
	return from, before, shown, nil
}

// otherJob says an *admin.OtherJobError of one-job action's call on job
// id as unchanged says a job given the ID since the page was shown, and
// an *admin.MovedOnError as it says a job that ran again or was redriven
// since: the call itself refused it (after unchanged looked), nothing
// done.
func otherJob(id string, err error) error {
	var moved *admin.MovedOnError
	if errors.As(err, &moved) {
		// said as unchanged says it: the call refused it (moved on
		// after unchanged looked), nothing done
		why := map[string]string{"fence": "ran again", "redrives": "was redriven"}[moved.Field]
		return fmt.Errorf("%w: job %s %s since this page was shown (it is %s now): nothing done; look at it first", admin.ErrWrongState, id, why, moved.State)
	}
	var other *admin.OtherJobError
	if !errors.As(err, &other) {
		return err
	}
	return fmt.Errorf("%w: job %s is another job (its ID was given to a new one, created %s) since this page was shown: nothing done; look at it first",
		admin.ErrWrongState, id, other.Created.UTC().Format(time.RFC3339Nano))
}

// confirmQuery is the query of the job page's link to one-job action
// name's confirmation for job j: its ID, what the page shows of j that
// the action's form records (jobFields), and extra pairs (a signal's name
// and number). The confirmation checks them against the job as it is
// then (unchanged), and records them: a job that moved on between the job
// page and the confirmation (redriven, its ID given to a new job) is
// refused, not recorded as it is by then, which the confirmation page
// does not show.
func confirmQuery(name string, j *flow.JobInfo, extra ...string) template.URL {
	q := "id=" + url.QueryEscape(j.ID)
	for i := 0; i+1 < len(extra); i += 2 {
		q += "&" + url.QueryEscape(extra[i]) + "=" + url.QueryEscape(extra[i+1])
	}
	for _, k := range actions[name].Fields {
		if get := jobFields[k]; get != nil {
			q += "&" + k + "=" + url.QueryEscape(get(j))
		}
	}
	return template.URL(q)
}

// jobPath is the path of job id's page.
func jobPath(id string) string { return "/jobs/" + url.PathEscape(id) }

// pauseSchedule pauses schedule n (resumes it, for !pause), and says so,
// or that it was so already: the call answers the same either way, so
// the schedule is read first. A record that does not read (corrupt data)
// is still paused or resumed, saying nothing of before: pausing is what
// a misbehaving schedule needs first.
func (c *console) pauseSchedule(ctx context.Context, n string, pause bool) (string, string, error) {
	before, err := c.ops.Schedule(ctx, n)
	known := err == nil
	if err != nil && !errors.Is(err, flow.ErrMalformed) {
		return "", "", err
	}
	op, msg, was := c.ops.ResumeSchedule, "resumed schedule "+n, " (it was not paused)"
	if pause {
		op, msg, was = c.ops.PauseSchedule, "paused schedule "+n, " (it was paused already)"
	}
	if err := op(ctx, n); err != nil {
		return "", "", err
	}
	if known && before.Paused == pause {
		msg += was
	}
	return msg, "/schedules", nil
}
