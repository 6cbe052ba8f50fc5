package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// Attribute keys of the worker's records about jobs (Options.Logger), the
// same in every record that has them; docs/operations.md lists the
// records. Every record also has "worker", the worker's ID.
const (
	keyJob         = "job"          // the job ID (queue:partition:local)
	keyKind        = "kind"         // the job kind
	keyQueue       = "queue"        // the queue
	keyAttempt     = "attempt"      // this attempt's number, 1 on the first try
	keyMaxAttempts = "max_attempts" // the job's attempt limit
	keyCrash       = "crash"        // this crash's number, 1 on the first
	keyCrashLimit  = "crash_limit"  // Options.CrashLimit
	keyReason      = "reason"       // why: error class, archive reason, crash reason
	keyErr         = "err"          // what failed the attempt
	keyPanic       = "panic"        // a panic's value, formatted with %v
	keyStack       = "stack"        // the top frames of a panic's stack
	keyNextRun     = "next_run"     // when the job is due again (worker clock)
	keyDuration    = "duration"     // how long the attempt ran
	keyState       = "state"        // the job's state
	keyHolder      = "holder"       // the worker now holding the job's lease
	keyLostBy      = "lost_by"      // the worker whose lease on the job expired
	keyCode        = "code"         // the outcome whose write was rejected
)

// stackFrames is how many frames of a panic's stack a record shows; the
// whole stack is recorded on the job (flow.JobInfo.Errors).
const stackFrames = 5

// holderRead bounds the read of a job whose lease was lost, which its
// record shows the new holder of.
const holderRead = time.Second

// settled is an attempt's outcome as its record and its event tell it.
type settled struct {
	event    EventType
	state    string // the job's new state; "" when none was written
	reason   string
	err      error
	panic    *PanicError
	duration time.Duration
	next     time.Time // zero: not due again, or not known
	at       time.Time
}

// observe logs an attempt's outcome o (describe) if it failed and sends
// its event; ack is the outcome written, if any.
func (w *Worker) observe(a *Attempt, o *settled, ack store.Ack) {
	w.logOutcome(a, o, ack)
	if w.ev != nil {
		w.endEvent(a, o)
	}
}

// describe tells an attempt's outcome, as its record, its event and its
// span tell it. acked says whether an outcome ack was written (with
// result res).
func (w *Worker) describe(a *Attempt, r result, cause error, acked bool, ack store.Ack, res store.AckResult) settled {
	now := w.clk.Now()
	o := settled{state: res.State, at: now, duration: max(now.Sub(a.tel.start), 0)}
	if r.panic != nil {
		o.panic = &PanicError{Value: r.panic, Stack: r.stack}
	}
	switch {
	case !acked && errors.Is(cause, ErrCancelled):
		o.event, o.reason, o.err = EventCancelled, "cancelled", cause
		return o
	case !acked:
		o.event, o.reason, o.err = EventCrashed, "lease_lost", cause
		return o
	case res.Err != nil:
		o.event, o.reason, o.err = EventCrashed, "lease_lost", res.Err
		if !errors.Is(res.Err, ErrStale) {
			o.reason = "ack_failed" // the lease will expire: a crash, as far as the store knows
		}
		return o
	}
	failure := attemptErr(r, cause)
	switch ack.Code {
	case store.CodeOK:
		o.event = EventCompleted
		if res.State != "completed" { // the completion's effects could not apply
			o.event, o.reason, o.err = EventRetried, "effect", ErrEffectsFailed
		}
	case store.CodeRetry:
		o.event, o.reason, o.err = EventRetried, ack.Reason, failure
	case store.CodeCrash:
		o.event, o.reason, o.err = EventCrashed, ack.Reason, failure
	case store.CodeSnooze, store.CodeFree:
		o.event = EventSnoozed
	case store.CodeSkip:
		o.event, o.reason, o.err = EventFailed, "skipped", failure
	case store.CodePark:
		o.event, o.reason, o.err = EventFailed, ack.Reason, failure
	case store.CodeDeadline:
		o.event, o.reason, o.err = EventFailed, "deadline_exceeded", failure
		if res.State != "archived" { // Redis's clock: not yet; a claim archives it then
			o.event = EventSnoozed
		}
	case store.CodeRevoke:
		o.event, o.reason = EventCancelled, "revoked"
	case store.CodeRelease:
		o.event = EventReleased
	case store.CodeWait, store.CodeSuspend:
		o.event = EventSuspended
	}
	switch res.State {
	case "archived":
		switch {
		case res.Reason != "": // what the store archived it for ('malformed': a counter it could not count)
			o.event, o.reason = EventFailed, res.Reason
		case o.event == EventRetried:
			o.event, o.reason = EventFailed, "attempts_exhausted"
		case o.event == EventCrashed: // a crash counter that cannot be counted (lib_lifecycle.lua crash)
			o.event, o.reason = EventFailed, "malformed"
		}
	case "quarantined":
		o.reason = "crash_limit"
	case "available":
		o.next = now
	case "retryable", "scheduled":
		switch o.event {
		case EventCrashed:
			o.next = now.Add(crashDelay(w.opts.CrashDelay, a.CrashAttempt+1))
		case EventRetried, EventSnoozed:
			if ack.Code != store.CodeDeadline { // else due at its deadline, to be archived then: not again
				o.next = now.Add(ack.Delay)
			}
		}
		// a delay past its deadline ends at it (lib_ready.lua schedule_at),
		// when the job is archived rather than run
		if !a.Deadline.IsZero() && o.next.After(a.Deadline) {
			o.next = a.Deadline
		}
	}
	return o
}

// attemptErr is what failed an attempt: its panic, its error, the cause
// that stopped it, or both of those.
func attemptErr(r result, cause error) error {
	switch {
	case r.panic != nil:
		return &PanicError{Value: r.panic, Stack: r.stack}
	case cause == nil:
		return r.err
	case r.err == nil || errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded):
		return cause
	}
	return fmt.Errorf("%w: %w", cause, r.err)
}

// crashDelay is how long a job waits after its crash-th crash
// (lib_lifecycle.lua crash): d doubled with each crash after the first,
// up to a minute or d if longer.
func crashDelay(d time.Duration, crash int) time.Duration {
	ceiling := max(d, time.Minute)
	for i := 1; i < crash && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// logOutcome writes the record of a failed attempt: warn for one whose
// job will run again after an error, error for a crash, a lost lease, an
// archive or a quarantine. A job whose outcome Redis did not take
// (ack_failed) has the record of its batch (flushAcks).
func (w *Worker) logOutcome(a *Attempt, o *settled, ack store.Ack) {
	var (
		level slog.Level
		msg   string
	)
	switch {
	case o.event == EventRetried:
		level, msg = slog.LevelWarn, "job attempt failed; will retry"
	case o.event == EventFailed:
		level, msg = slog.LevelError, "job archived"
	case o.event != EventCrashed || o.reason == "ack_failed":
		return
	case o.reason == "lease_lost":
		level, msg = slog.LevelError, "job attempt lost its lease"
	case o.state == "quarantined":
		level, msg = slog.LevelError, "job quarantined"
	default:
		level, msg = slog.LevelError, "job attempt crashed; will retry"
	}
	ctx := context.Background()
	if !w.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String(keyJob, a.ID), slog.String(keyKind, a.Kind), slog.String(keyQueue, a.Queue),
		slog.Int(keyAttempt, a.Attempt+1), slog.Int(keyMaxAttempts, a.MaxAttempts))
	if o.reason == "lease_lost" {
		attrs = append(attrs, slog.Any(keyErr, o.err))
		if ack.Code != "" {
			attrs = append(attrs, slog.String(keyCode, string(ack.Code)))
		}
		if state, holder := w.holder(a); state != "" {
			attrs = append(attrs, slog.String(keyState, state))
			if holder != "" {
				attrs = append(attrs, slog.String(keyHolder, holder))
			}
		}
		attrs = append(attrs, slog.Duration(keyDuration, o.duration))
		w.log.LogAttrs(ctx, level, msg, attrs...)
		return
	}
	if o.event == EventCrashed {
		attrs = append(attrs, slog.Int(keyCrash, a.CrashAttempt+1), slog.Int(keyCrashLimit, w.opts.CrashLimit))
	}
	attrs = append(attrs, slog.String(keyReason, o.reason))
	if p := o.panic; p != nil {
		attrs = append(attrs, slog.String(keyPanic, fmt.Sprint(p.Value)), slog.String(keyStack, stackTop(p.Stack, stackFrames)))
	} else if o.err != nil {
		attrs = append(attrs, slog.Any(keyErr, o.err))
	}
	attrs = append(attrs, slog.Duration(keyDuration, o.duration))
	if !o.next.IsZero() {
		attrs = append(attrs, slog.Time(keyNextRun, o.next))
	}
	w.log.LogAttrs(ctx, level, msg, attrs...)
}

// holder reads the state of a's job, and the worker that holds its lease
// if it runs, after a lost its lease ("" when it cannot be read).
func (w *Worker) holder(a *Attempt) (state, holder string) {
	ctx, cancel := context.WithTimeout(context.Background(), holderRead)
	defer cancel()
	j, _, err := w.st.Get(ctx, a.ref)
	if err != nil {
		return "", ""
	}
	if j.State == "running" {
		holder = j.Worker
	}
	return j.State, holder
}

// stackTop is the top frames of a stack from debug.Stack, from the frame
// that panicked: the frames of the runtime's panic and of the recovery
// above it are left out.
func stackTop(stack []byte, frames int) string {
	lines := strings.Split(strings.TrimRight(string(stack), "\n"), "\n")
	from := 1 // past "goroutine N [running]:"
	for i := len(lines) - 1; i > 0; i-- {
		if strings.HasPrefix(lines[i], "panic(") {
			from = i + 2 // past the call and its file:line
			break
		}
	}
	end := min(from+2*frames, len(lines))
	if from >= end {
		return string(stack)
	}
	return strings.Join(lines[from:end], "\n")
}

// logReaped writes the record of a job whose lease expired in another
// worker (or this one) and that this worker's maintenance reclaimed: a
// crash, or a quarantine at the limit. Its kind and counters are not
// read.
func (w *Worker) logReaped(id, queue string, r store.Reaped) {
	msg, reason := "job attempt crashed; will retry", "lease_expired"
	switch r.State {
	case "quarantined":
		msg, reason = "job quarantined", "crash_limit"
	case "archived": // its data corrupt: a counter, its hash or its state
		msg, reason = "job archived", "malformed"
	}
	w.log.LogAttrs(context.Background(), slog.LevelError, msg,
		slog.String(keyJob, id), slog.String(keyQueue, queue), slog.String(keyReason, reason),
		slog.String(keyLostBy, r.Holder), slog.String(keyState, r.State))
}

// logArchivedAtClaim writes the record of a job a claim archived instead
// of leasing it (its deadline passed while it waited, or it is
// malformed).
func (w *Worker) logArchivedAtClaim(id, queue, reason string) {
	w.log.LogAttrs(context.Background(), slog.LevelError, "job archived",
		slog.String(keyJob, id), slog.String(keyQueue, queue), slog.String(keyReason, reason))
}
