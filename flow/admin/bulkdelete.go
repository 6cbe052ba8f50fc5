package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// DeleteOptions tune DeleteSelected.
type DeleteOptions struct {
	// DryRun counts the jobs that would be deleted, and deletes none.
	DryRun bool
	// BatchSize is how many entries one script call examines. Default
	// 500, at most 5000.
	BatchSize int
	// Progress, when set, is called after every batch and once at the end
	// (Done set).
	Progress func(DeleteProgress)
}

// DeleteProgress is how far DeleteSelected got.
type DeleteProgress struct {
	Examined int   // jobs examined
	Total    int64 // jobs in the selected state when the scan began
	Matched  int   // jobs deleted (or, in a dry run, that would be)
	Batches  int   // script calls made
	// Unreadable are the IDs of entries of the scanned state whose data
	// in Redis is not a job: left as they are, the scan goes on past them.
	Unreadable []string
	Done       bool
}

// DeleteSelected deletes the jobs of a queue that sel chooses, each with
// every key it owns, as DeleteJob does (a job that had not finished tells
// its parent it ended as cancelled and frees its unique key). sel.State
// is required: StateCompleted, StateArchived, StateQuarantined,
// StateCancelled, StateScheduled or StateRetryable. Available jobs are
// not deleted by selector (claims pop their lists as a scan would walk
// them: cancel them, or delete them by ID), and running jobs never are.
// For scheduled and retryable jobs only sel.Kind may narrow the choice;
// Reason and the finish times apply to finished jobs.
//
// It works in batches: each script call examines at most BatchSize jobs
// of one partition, in the order of the state's index (finished jobs
// oldest first, scheduled ones soonest due first), so Redis is never
// blocked for long. The scan takes only finished jobs that finished
// before it began. A dry run with the same selector counts what a real
// run would delete, unless jobs change meanwhile, or the run changes them
// itself: a scheduled child whose delete ends its parent's wait wakes the
// parent (available, no longer scheduled) before the scan reaches it, so a
// parent the selector chose too is counted by the dry run and left by the
// run. A dry run of scheduled jobs while jobs are scheduled or put off
// may also count a job twice: one a debounced duplicate puts off past
// the scan's place is read again there, and one read in a bucket of jobs
// due later may be read again as others join the bucket, or where
// workers move the bucket as its time nears. The run
// deletes each once; jobs that workers move into the near index as their
// time nears, or that a debounce puts off, are not missed (one a
// debounce brings forward past the scan's place is). An entry whose data is
// not a job is skipped and named in DeleteProgress.Unreadable; the other
// jobs of its batch are deleted. A bucket of scheduled jobs due later
// whose data is not a list holds no IDs to read: it is passed over. It
// returns the final progress; on an error (or ctx cancelled) the jobs
// deleted so far stay deleted, and a second run with the same selector
// goes on where it left off.
func (c *Client) DeleteSelected(ctx context.Context, sel Selector, o DeleteOptions) (DeleteProgress, error) {
	var pr DeleteProgress
	if !runtime.ValidQueue(sel.Queue) {
		return pr, fmt.Errorf("%w: queue %q", flow.ErrInvalid, sel.Queue)
	}
	if err := sel.matchable(); err != nil {
		return pr, err
	}
	switch sel.State {
	case flow.StateCompleted, flow.StateArchived, flow.StateQuarantined, flow.StateCancelled:
	case flow.StateScheduled, flow.StateRetryable:
		if sel.Reason != "" || !sel.FinishedAfter.IsZero() || !sel.FinishedBefore.IsZero() {
			return pr, fmt.Errorf("%w: %s jobs have not finished: select them by kind only", flow.ErrInvalid, sel.State)
		}
	case "":
		return pr, fmt.Errorf("%w: a delete by selector needs a state", flow.ErrInvalid)
	default:
		return pr, fmt.Errorf("%w: cannot delete %s jobs by selector", flow.ErrInvalid, sel.State)
	}
	var progress func(scanProgress)
	if o.Progress != nil {
		progress = func(p scanProgress) { o.Progress(DeleteProgress(p)) }
	}
	got, err := c.runSelected(ctx, sel, o.BatchSize, c.b.Store.DeleteStep, o.DryRun, progress)
	return DeleteProgress(got), err
}

// scanProgress is the progress of a scan by selector: DeleteProgress and
// RedriveProgress are the same fields.
type scanProgress struct {
	Examined   int
	Total      int64
	Matched    int
	Batches    int
	Unreadable []string
	Done       bool
}

// stepFunc is one bounded script call of a scan by selector on a
// partition (store's DeleteStep, RedriveStep).
type stepFunc func(ctx context.Context, p keys.Partition, sel store.Selector, cur store.ScanCursor, batch int, dryRun bool) (store.ScanStep, error)

// runSelected runs a scan by selector, its state already checked, to the
// end: the reason and batch size checked, each call's counts added up and
// reported to progress (when not nil), then the final counts with Done.
// Its error is the first call's that failed, or the selector's reasons
// that matched nothing.
func (c *Client) runSelected(ctx context.Context, sel Selector, size int, step stepFunc, dryRun bool,
	progress func(scanProgress)) (scanProgress, error) {
	var pr scanProgress
	if err := sel.checkReason(); err != nil {
		return pr, err
	}
	batch, err := batchSize(size)
	if err != nil {
		return pr, err
	}
	ss := store.Selector{State: sel.State, Kind: sel.Kind, Reason: sel.Reason, After: sel.FinishedAfter, Before: sel.FinishedBefore}
	err = c.scanSelected(ctx, sel, &pr.Total,
		func(p keys.Partition, cur store.ScanCursor) (store.ScanStep, error) {
			return step(ctx, p, ss, cur, batch, dryRun)
		},
		func(p keys.Partition, st store.ScanStep) {
			pr.Examined += st.Examined
			pr.Matched += st.Matched
			pr.Batches++
			pr.Unreadable = appendRefs(pr.Unreadable, p, st.Unreadable)
			if progress != nil {
				progress(pr)
			}
		})
	if err != nil {
		return pr, err
	}
	pr.Done = true
	if progress != nil {
		progress(pr)
	}
	return pr, sel.unmatched(pr.Matched)
}

// appendRefs appends the IDs of partition p's jobs locals to ids.
func appendRefs(ids []string, p keys.Partition, locals []string) []string {
	for _, l := range locals {
		ids = append(ids, keys.Ref{Partition: p, Local: l}.String())
	}
	return ids
}

// scanSelected runs a scan by selector over the partitions of sel's
// queue, one bounded script call (step) at a time from each partition's
// start, handing each call's result to seen; total gets the size of the
// selected state first, for progress. It stops at ctx's end or the first
// error.
func (c *Client) scanSelected(ctx context.Context, sel Selector, total *int64,
	step func(keys.Partition, store.ScanCursor) (store.ScanStep, error), seen func(keys.Partition, store.ScanStep)) error {
	if err := c.windowOpen(ctx, sel); err != nil {
		return err
	}
	parts, err := c.b.Partitions(ctx, sel.Queue)
	if err != nil {
		return err
	}
	sizes, err := c.b.Store.StateSizes(ctx, parts, sel.State)
	if err != nil {
		return err
	}
	for _, n := range sizes {
		*total += n
	}
	for _, p := range parts {
		var cur store.ScanCursor
		for done := false; !done; {
			if err := ctx.Err(); err != nil {
				return err
			}
			st, err := step(p, cur)
			if err != nil {
				return err
			}
			cur, done = st.Cursor, st.Done
			seen(p, st)
		}
	}
	return nil
}

// windowOpen refuses a FinishedAfter that is not before the store's time
// now: a scan takes only jobs that finished before it began, so it would
// match none, and report 0 for what is a mistake in its bound. It costs
// a round trip only when FinishedAfter is set.
func (c *Client) windowOpen(ctx context.Context, sel Selector) error {
	if sel.FinishedAfter.IsZero() {
		return nil
	}
	now, err := c.StoreTime(ctx)
	if err != nil {
		return err
	}
	if !sel.FinishedAfter.Before(now) {
		return fmt.Errorf("%w: finished after %s, which is not before the store's time now (%s): no job has finished since",
			flow.ErrInvalid, sel.FinishedAfter.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// batchSize checks a scan's batch size option: 0 is the default, 500.
func batchSize(n int) (int, error) {
	if n < 0 || n > 5000 {
		return 0, fmt.Errorf("%w: batch size %d not in 1..5000", flow.ErrInvalid, n)
	}
	if n == 0 {
		return 500, nil
	}
	return n, nil
}
