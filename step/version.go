package step

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/store"
)

// DefaultVersion is the version Version gives a job that went past a
// change point's place under code that did not have it yet: such a job
// keeps the code it started with.
const DefaultVersion = 0

// VersionPrefix starts the checkpoint field of a change point: a job's
// version of the change "fraud-check" is kept as "version:fraud-check"
// (sluice jobs show lists it among the steps, at position -1, with the
// version as its result).
const VersionPrefix = "version:"

// ErrInvalidVersion: Version was given a bad range (min < 0 or max < min).
// The job is archived (reason invalid_version).
var ErrInvalidVersion = errors.New("sluice: invalid version range")

// Version marks a change point of a workflow and returns this job's
// version of the change, which every later run of the job gets back: code
// deployed while jobs sleep or wait in a workflow branches on it, so that
// jobs started before the change keep the old branch and jobs that reach
// it afterwards take the new one:
//
//	v, err := step.Version(ctx, "fraud-check", step.DefaultVersion, 1)
//	if err != nil {
//		return err
//	}
//	if v >= 1 {
//		if err := step.Do(ctx, "fraud-check", checkFraud); err != nil {
//			return err
//		}
//	}
//	if err := step.Sleep(ctx, "cool-off", 72*time.Hour); err != nil { ...
//
// The first time a job reaches the change point, Version decides and
// records (one fenced checkpoint, as a step's) either max, the newest
// version this code knows, or DefaultVersion for a job that had already
// gone past this place under older code. A job is judged to have gone
// past it when its checkpoints show it (in this order):
//
//   - it has the checkpoint of a step at this position or a later one, or
//     the progress of a cursor this run has not reached: old;
//   - otherwise, this attempt itself completed a step before the change
//     point (the job had not got that far before): new;
//   - otherwise, it holds a timer or a kept signal that none of the waits
//     before the change point accounts for (their own names, a WaitSignal's
//     "NAME.timeout" timer (timeoutTimer), the timer or signal that
//     decided them): the job was suspended at a wait past this place, and
//     the timer or the signal woke it. Old;
//   - otherwise: new.
//
// Afterwards the recorded value is returned, whatever the code's range: a
// job's version never changes. A recorded version outside [min, max] (a
// job on a branch this code no longer has: raise min to retire one) stops
// the job with ErrStaleCheckpoint, parked with reason stale_checkpoint,
// as for a changed step sequence.
//
// A change point takes no position in the step sequence: inserting one in
// existing code moves no step, so the checkpoints of old jobs still line
// up. change names it, as steps are named (a name used twice in a run is
// the same change point, with the same version). See docs/workflows.md
// for what needs a change point and how to retire one.
func Version(ctx context.Context, change string, min, max int) (int, error) {
	st, ok := attempt.From(ctx)
	if !ok {
		return 0, ErrNoAttempt
	}
	if !names.Valid(change, 100, "_./-") {
		return 0, park("invalid_step", fmt.Errorf("%w: change %s", ErrInvalidName, names.Quote(change)))
	}
	if min < 0 || max < min {
		return 0, park("invalid_version", fmt.Errorf("%w: change %q supports %d to %d", ErrInvalidVersion, change, min, max))
	}
	field := VersionPrefix + change
	if b, ok := st.Checkpoint(field); ok {
		return recorded(change, b, min, max)
	}
	old, err := wentPast(st, next(st))
	if err != nil {
		return 0, err
	}
	v := max
	if old {
		v = DefaultVersion
	}
	// Index -1: a change point has no position (no step has it).
	b, err := encodeRecord(-1, v, nil)
	if err != nil {
		return 0, err
	}
	if err := st.Commit(field, b, store.ModeOnce, "", nil); err != nil {
		return 0, err
	}
	return inRange(change, v, min, max)
}

// recorded is the version kept in a change point's checkpoint b.
func recorded(change string, b []byte, min, max int) (int, error) {
	r, err := checkpoint.Decode(b)
	var v int
	if err == nil {
		err = decode(r.Result, &v)
	}
	if err != nil {
		return 0, park("stale_checkpoint", fmt.Errorf("%w: change %q: %v", ErrStaleCheckpoint, change, err))
	}
	return inRange(change, v, min, max)
}

func inRange(change string, v, min, max int) (int, error) {
	if v < min || v > max {
		return 0, park("stale_checkpoint", fmt.Errorf("%w: this job is at version %d of change %q; this code supports %d to %d", ErrStaleCheckpoint, v, change, min, max))
	}
	return v, nil
}

// next is the position the run's next step takes: the number of steps
// begun so far.
func next(st *attempt.State) int {
	name := st.Current()
	if name == "" {
		return 0
	}
	i, _ := st.Position(name)
	return i + 1
}

// wentPast reports whether the job went past the change point at position
// n (steps 0 to n-1 come before it) under code without it: the evidence
// Version lists, read from its checkpoints, timers and kept signals.
//
// Why it holds. A job gets past a step only by completing it, which
// checkpoints it; so a checkpoint at position n or later, or a cursor
// not reached yet, is progress past the point, and a step before the
// point that this attempt completed was not completed before it, so the
// job never got past the point. What else a job leaves past the point is
// a suspension: the timers of the wait it suspended at (written by the
// suspension) or the signal that woke it (kept until the wait takes it).
// A new job has neither, unless a signal was sent ahead of its wait, or a
// Select before the point with timers of its own names was decided by an
// earlier attempt that ended before the point: then it keeps the old
// branch, which the code still has. A job suspended past the point on
// signals only and woken otherwise (by an operator) leaves no trace and
// takes the new branch. Whatever is decided is recorded, once.
func wentPast(st *attempt.State, n int) (bool, error) {
	// positions is built at the attempt's first step, before its first
	// commit: the checkpoints the attempt started with.
	start, err := positions(st)
	if err != nil {
		return false, err
	}
	all := st.Checkpoints()
	now := map[int]string{} // positions checkpointed now
	accounts := map[string]bool{}
	for field, b := range all {
		if name, ok := strings.CutPrefix(field, checkpoint.CursorPrefix); ok {
			if _, reached := st.Position(name); !reached {
				return true, nil // a loop past the point made progress
			}
			continue
		}
		if !checkpoint.IsStep(field) || strings.HasPrefix(field, VersionPrefix) {
			continue
		}
		r, err := checkpoint.Decode(b)
		if err != nil {
			return false, park("stale_checkpoint", fmt.Errorf("%w: step %q: %v", ErrStaleCheckpoint, field, err))
		}
		if r.Index >= n {
			return true, nil
		}
		now[r.Index] = field
		accounts[field], accounts[timeoutTimer(field)] = true, true
		var d decided
		if decode(r.Result, &d) == nil && len(d.Case) > 2 && (d.Case[:2] == "t:" || d.Case[:2] == "s:") {
			accounts[d.Case[2:]] = true
		}
	}
	for i := range now {
		if _, before := start[i]; !before {
			return false, nil // completed by this attempt
		}
	}
	for field, b := range all {
		if name, _, ok := checkpoint.Timer(field, b); ok && !accounts[name] {
			return true, nil
		}
		if _, name, ok := checkpoint.Signal(field); ok && !accounts[name] {
			return true, nil
		}
	}
	return false, nil
}
