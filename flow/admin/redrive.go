package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// MaxRedriveIDs bounds the job IDs of one Redrive or Release call; use
// RedriveSelected for more.
const MaxRedriveIDs = 1000

// RedriveReport says what a Redrive or Release by ID did.
type RedriveReport struct {
	Moved []string // IDs of the jobs now available, in the order asked
	// Failed holds the others: ErrInvalid (not a job ID), ErrNotFound, or
	// a *StateError (ErrWrongState) naming the state that refused it; or,
	// for each job of a partition whose call failed (Redis unreachable),
	// that call's error (the call may have run if only its reply was
	// lost). One partition's failure does not stop the others.
	Failed map[string]error
}

// Redrive returns archived and cancelled jobs to execution: each goes to
// the back of its priority's available list. History is kept: attempt
// and crash_attempt are not reset (a job whose attempts are spent gets one
// more attempt per redrive), its errors, steps and orphan provenance stay,
// and JobInfo.Redrives counts the redrives. At least one ID (else
// ErrInvalid) and at most MaxRedriveIDs distinct IDs (else ErrTooMany); one round
// trip per partition. The error is also set when a partition's call
// failed: it joins those calls' errors, and the report is complete all
// the same (their jobs are in Failed). A job's unique key, if it had
// one, is held by it again until it finishes, unless another job holds
// it by then (that job keeps it); a spawned job's parent, told of its
// failure when it was archived, is not told again.
func (c *Client) Redrive(ctx context.Context, ids ...string) (RedriveReport, error) {
	return c.redriveIDs(ctx, store.ActionRedrive, ids, store.Created{})
}

// Release returns quarantined jobs to execution like Redrive, and resets
// their crash_attempt to 0 (their orphan provenance is kept).
func (c *Client) Release(ctx context.Context, ids ...string) (RedriveReport, error) {
	return c.redriveIDs(ctx, store.ActionRelease, ids, store.Created{})
}

// RedriveOf redrives job id as Redrive does only if it is the one created
// at or after from and before before, checked in the same script call: a
// job given the ID since a tool showed the job is not redriven. Another
// job is an *OtherJobError (ErrWrongState) in the report's Failed,
// nothing written for it; from not before before is flow.ErrInvalid.
// Given a Shown, a job that ran again or was redriven since the tool
// showed it is a *MovedOnError (ErrWrongState) in Failed, nothing written
// for it.
func (c *Client) RedriveOf(ctx context.Context, id string, from, before time.Time, shown ...Shown) (RedriveReport, error) {
	cr, err := created(from, before, shown)
	if err != nil {
		return RedriveReport{}, err
	}
	return c.redriveIDs(ctx, store.ActionRedrive, []string{id}, cr)
}

// ReleaseOf releases job id as Release does only if it is the one
// created at or after from and before before, as RedriveOf redrives.
func (c *Client) ReleaseOf(ctx context.Context, id string, from, before time.Time, shown ...Shown) (RedriveReport, error) {
	cr, err := created(from, before, shown)
	if err != nil {
		return RedriveReport{}, err
	}
	return c.redriveIDs(ctx, store.ActionRelease, []string{id}, cr)
}

// redriveIDs moves the jobs ids; a cr that is not zero names the job of
// each (RedriveOf names one).
func (c *Client) redriveIDs(ctx context.Context, action store.RedriveAction, ids []string, cr store.Created) (RedriveReport, error) {
	if len(ids) == 0 { // a call that names no job moves none: say so, not "ok"
		return RedriveReport{}, fmt.Errorf("%w: no job IDs given", flow.ErrInvalid)
	}
	ids = distinct(ids)           // one ID given twice is one job: moved, or failed, once
	if len(ids) > MaxRedriveIDs { // jobs, however often an ID was listed
		return RedriveReport{}, fmt.Errorf("%w: %d IDs, at most %d (redrive by selector instead)", ErrTooMany, len(ids), MaxRedriveIDs)
	}
	rep := RedriveReport{Failed: map[string]error{}}
	byPart := map[keys.Partition][]int{}
	var order []keys.Partition
	refs := make([]keys.Ref, len(ids))
	for i, id := range ids {
		ref, err := c.ref(id)
		if err != nil {
			rep.Failed[id] = err
			continue
		}
		refs[i] = ref
		if byPart[ref.Partition] == nil {
			order = append(order, ref.Partition)
		}
		byPart[ref.Partition] = append(byPart[ref.Partition], i)
	}
	moved := make([]bool, len(ids))
	var callErrs []error
	for _, p := range order {
		idx := byPart[p]
		locals := make([]string, len(idx))
		for k, i := range idx {
			locals[k] = refs[i].Local
		}
		var crs []store.Created
		if !cr.From.IsZero() {
			crs = make([]store.Created, len(locals))
			for k := range crs {
				crs[k] = cr
			}
		}
		errs, err := c.b.Store.RedriveIDsOf(ctx, p, action, locals, crs)
		if err != nil { // this partition's jobs only
			for _, i := range idx {
				rep.Failed[ids[i]] = err
			}
			if !slices.ContainsFunc(callErrs, func(e error) bool { return e.Error() == err.Error() }) {
				callErrs = append(callErrs, err) // once, when every partition fails alike
			}
			continue
		}
		for k, i := range idx {
			if errs[k] == nil {
				moved[i] = true
			} else {
				rep.Failed[ids[i]] = stateError(ids[i], errs[k])
			}
		}
	}
	for i, id := range ids {
		if moved[i] {
			rep.Moved = append(rep.Moved, id)
		}
	}
	return rep, errors.Join(callErrs...)
}

// Selector chooses jobs of one state for RedriveSelected and
// DeleteSelected.
type Selector struct {
	Queue string // required
	// State, for RedriveSelected, is StateArchived (the default),
	// StateCancelled, or StateQuarantined (the jobs are released:
	// crash_attempt reset); for DeleteSelected see there.
	State string
	Kind  string // "" for any kind
	// Reason is "" for any reason, else one that Sluice records on jobs
	// of State (Reasons): another is ErrInvalid, as it would match none.
	Reason string
	// Jobs that finished in [FinishedAfter, FinishedBefore); zero: no bound.
	FinishedAfter, FinishedBefore time.Time
}

// RedriveOptions tune RedriveSelected.
type RedriveOptions struct {
	// DryRun counts the jobs that would move, and moves none.
	DryRun bool
	// BatchSize is how many entries one script call examines. Default
	// 500, at most 5000.
	BatchSize int
	// Progress, when set, is called after every batch and once at the end
	// (Done set).
	Progress func(RedriveProgress)
}

// RedriveProgress is how far RedriveSelected got.
type RedriveProgress struct {
	Examined int   // finished jobs examined
	Total    int64 // jobs in the scanned state when the scan began
	Matched  int   // jobs moved (or, in a dry run, that would be)
	Batches  int   // script calls made
	// Unreadable are the IDs of entries of the scanned state whose data
	// in Redis is not a job: left as they are, the scan goes on past them.
	Unreadable []string
	Done       bool
}

// RedriveSelected redrives (Redrive, or Release for quarantined jobs) the
// jobs of a queue that Selector chooses, in batches: each script call
// examines at most BatchSize jobs of one partition, oldest first, so Redis
// is never blocked for long. The scan only takes jobs that finished
// before it began, so a job that fails again during the scan is not taken
// twice. A dry run with the same selector counts what a real run would
// move, unless jobs change meanwhile. It returns the final progress; on an
// error (or ctx cancelled) the jobs moved so far stay moved.
func (c *Client) RedriveSelected(ctx context.Context, sel Selector, o RedriveOptions) (RedriveProgress, error) {
	var pr RedriveProgress
	if !runtime.ValidQueue(sel.Queue) {
		return pr, fmt.Errorf("%w: queue %q", flow.ErrInvalid, sel.Queue)
	}
	if err := sel.matchable(); err != nil {
		return pr, err
	}
	if sel.State == "" {
		sel.State = flow.StateArchived
	}
	if sel.State != flow.StateArchived && sel.State != flow.StateCancelled && sel.State != flow.StateQuarantined {
		return pr, fmt.Errorf("%w: cannot redrive %s jobs", flow.ErrInvalid, sel.State)
	}
	var progress func(scanProgress)
	if o.Progress != nil {
		progress = func(p scanProgress) { o.Progress(RedriveProgress(p)) }
	}
	got, err := c.runSelected(ctx, sel, o.BatchSize, c.b.Store.RedriveStep, o.DryRun, progress)
	return RedriveProgress(got), err
}

// distinct is ids without repeats, in the order first given.
func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// matchable refuses a selector that no job can match by its form, for
// which a run would report 0 for what is a mistake in it: a kind no job
// can have (flow.ValidKind: "email " from a variable with a trailing
// space), or a finish-time window with nothing in it (a FinishedAfter
// not before FinishedBefore).
func (sel Selector) matchable() error {
	if err := kindOK(sel.Kind); err != nil {
		return err
	}
	for _, b := range []time.Time{sel.FinishedAfter, sel.FinishedBefore} {
		if !b.IsZero() && !store.TimeInRange(b) {
			return fmt.Errorf("%w: finish-time bound %v is not within %v..%v", flow.ErrInvalid, b, store.MinTime, store.MaxTime)
		}
	}
	if b := sel.FinishedBefore; !b.IsZero() && !b.After(time.UnixMilli(1)) {
		// finish times are store time, whole milliseconds after the epoch
		return fmt.Errorf("%w: finished before %s: no job has", flow.ErrInvalid, b.UTC().Format(time.RFC3339Nano))
	}
	if !sel.FinishedAfter.IsZero() && !sel.FinishedBefore.IsZero() && !sel.FinishedAfter.Before(sel.FinishedBefore) {
		return fmt.Errorf("%w: finished after %s and before %s: no time is both", flow.ErrInvalid,
			sel.FinishedAfter.UTC().Format(time.RFC3339), sel.FinishedBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// kindOK refuses a kind filter that names no kind a job can have ("" is
// any kind).
func kindOK(kind string) error {
	if kind != "" && !flow.ValidKind(kind) {
		return fmt.Errorf("%w: kind %q: no job can have it", flow.ErrInvalid, kind)
	}
	return nil
}
