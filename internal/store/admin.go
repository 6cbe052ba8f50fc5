package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// Cancel moves one job to cancelled (reason 'operator'), to be deleted
// keep after (the retention of the workers that serve its queue, which
// the caller reads with ReadRetention or is told; the store's own
// RetainCancelled is that of the cancellations its worker makes); a
// running job's holder loses its lease (lua/cancel.lua). It returns the
// job's previous state, ErrNotFound, or a *sluicetype.StateError for a
// finished job.
func (s *Store) Cancel(ctx context.Context, ref keys.Ref, keep time.Duration) (string, error) {
	return s.CancelOf(ctx, ref, keep, Created{})
}

// CancelOf is Cancel of the job of ref only if it is the one c names:
// another is a *sluicetype.OtherJobError, one that ran again or was
// redriven since (c.Fence, c.Redrives) a *sluicetype.MovedOnError,
// nothing written.
func (s *Store) CancelOf(ctx context.Context, ref keys.Ref, keep time.Duration, c Created) (string, error) {
	lo, hi, idAt := c.args(ref.Local)
	fence, redrives := c.seen()
	args := append(s.callArgs(ref.Partition, 7), ref.Local, keys.CancelChannel(ref.NS), lo, hi, idAt, fence, redrives)
	args[s.partKeys(ref.Partition).nowAt+argRetainCancelled] = retention(keep)
	return adminReply("cancel", ref, s.send(ctx, lua.Cancel, newCallID(), args))
}

// Delete deletes one job that is not running, with all its keys
// (lua/delete.lua). It returns the job's previous state, ErrNotFound, or a
// *sluicetype.StateError for a running job.
func (s *Store) Delete(ctx context.Context, ref keys.Ref) (string, error) {
	return s.DeleteOf(ctx, ref, Created{})
}

// DeleteOf is Delete of the job of ref only if it is the one c names:
// another is a *sluicetype.OtherJobError, one that ran again or was
// redriven since (c.Fence, c.Redrives) a *sluicetype.MovedOnError,
// nothing deleted.
func (s *Store) DeleteOf(ctx context.Context, ref keys.Ref, c Created) (string, error) {
	lo, hi, idAt := c.args(ref.Local)
	fence, redrives := c.seen()
	return adminReply("delete", ref, s.run(ctx, lua.Delete, ref.Partition, ref.Local, lo, hi, idAt, fence, redrives))
}

// adminReply decodes the {status, state} answer of an operator script
// about one job.
func adminReply(op string, ref keys.Ref, cmd *redis.Cmd) (string, error) {
	v, err := cmd.Result()
	if err != nil {
		return "", err
	}
	r, err := strs(v)
	if err != nil || len(r) != 2 {
		return "", fmt.Errorf("%w: %s reply %v", ErrMalformed, op, v)
	}
	if r[0] == statusConflict {
		return "", otherJob(ref, r[1])
	}
	if field, ok := strings.CutPrefix(r[0], statusChanged); ok {
		return "", movedOn(ref, field, r[1])
	}
	return adminStatus(op, ref.Local, r[0], r[1])
}

// SetPaused pauses (claims nothing) or resumes one partition and reports
// whether it was paused. A partition a shrink retired (Retire) is left as
// it is, and answered ErrRetired.
func (s *Store) SetPaused(ctx context.Context, p keys.Partition, paused bool) (was bool, err error) {
	flag := "0"
	if paused {
		flag = "1"
	}
	n, err := s.run(ctx, lua.Pause, p, flag).Int()
	if err == nil && n == 2 {
		return true, ErrRetired
	}
	return n == 1, err
}

// Retire marks partition p as gone in a shrink of its queue: it claims
// nothing (as if paused) and refuses enqueues with ErrRetired, so that a
// producer still using the old partition count learns of the resize
// instead of adding jobs that no worker would ever claim. Pausing and
// resuming leave it so; TakeBack undoes it.
func (s *Store) Retire(ctx context.Context, p keys.Partition) error {
	return s.run(ctx, lua.Pause, p, "r").Err()
}

// TakeBack makes partition p paused, retired or not: a refused shrink
// brings back what it retired, a growth of the queue takes the partition
// again. Only the holder of the queue's resize lock (LockResize) calls it.
func (s *Store) TakeBack(ctx context.Context, p keys.Partition) error {
	return s.run(ctx, lua.Pause, p, "u").Err()
}

// BringBack undoes a shrink's Retire of partition p: p is paused if it
// is still retired, and left as it is otherwise (a resume or another
// resize changed it since), which brought reports.
func (s *Store) BringBack(ctx context.Context, p keys.Partition) (brought bool, err error) {
	n, err := s.run(ctx, lua.Pause, p, "b").Int()
	return n == 1, err
}

// RedriveAction is what a redrive by ID does.
type RedriveAction string

// Redrive actions.
const (
	ActionRedrive RedriveAction = "redrive" // archived or cancelled -> available
	ActionRelease RedriveAction = "release" // quarantined -> available, crash_attempt 0
)

// RedriveIDs moves the jobs locals of one partition back to available, one
// round trip. It returns one error per job: nil (moved), ErrNotFound, or a
// *sluicetype.StateError.
func (s *Store) RedriveIDs(ctx context.Context, p keys.Partition, action RedriveAction, locals []string) ([]error, error) {
	return s.RedriveIDsOf(ctx, p, action, locals, nil)
}

// RedriveIDsOf is RedriveIDs of each job only if it is the one
// created[i] names (nil: any job of each ID): another is a
// *sluicetype.OtherJobError for that job alone, one that ran again or
// was redriven since (Fence, Redrives) a *sluicetype.MovedOnError,
// nothing written for it.
func (s *Store) RedriveIDsOf(ctx context.Context, p keys.Partition, action RedriveAction, locals []string, created []Created) ([]error, error) {
	if created != nil && len(created) != len(locals) {
		return nil, fmt.Errorf("sluice: redrive: %d creation times for %d jobs", len(created), len(locals))
	}
	args := make([]any, 0, 3+6*len(locals))
	args = append(args, "ids", string(action), len(locals))
	for _, l := range locals {
		args = append(args, l)
	}
	for i, c := range created { // none: any job of each ID
		lo, hi, idAt := c.args(locals[i])
		args = append(args, lo, hi, idAt)
	}
	for _, c := range created { // after every range (lua/redrive.lua)
		fence, redrives := c.seen()
		args = append(args, fence, redrives)
	}
	v, err := s.run(ctx, lua.Redrive, p, args...).Result()
	if err != nil {
		return nil, err
	}
	r, err := strs(v)
	if err != nil || len(r) != len(locals) {
		return nil, fmt.Errorf("%w: redrive reply %v", ErrMalformed, v)
	}
	out := make([]error, len(r))
	for i, st := range r {
		if ms, ok := strings.CutPrefix(st, statusConflict+" "); ok {
			out[i] = otherJob(keys.Ref{Partition: p, Local: locals[i]}, ms)
			continue
		}
		if ch, ok := strings.CutPrefix(st, statusChanged); ok {
			field, state, _ := strings.Cut(ch, " ")
			out[i] = movedOn(keys.Ref{Partition: p, Local: locals[i]}, field, state)
			continue
		}
		out[i] = redriveStatus(string(action), locals[i], st)
	}
	return out, nil
}

// Selector chooses finished jobs of one state for a redrive by selector.
type Selector struct {
	State  string // archived, cancelled or quarantined
	Kind   string // "" any
	Reason string // "" any
	// Finished in [After, Before); zero: unbounded.
	After, Before time.Time
}

// ScanCursor is where a redrive scan of one partition stands: the last
// zset entry examined and the store time the scan began (zero: not begun).
type ScanCursor struct {
	Score, Member string
	AsOf          int64
}

// ScanStep is what one step of a scan by selector (a redrive, a delete)
// did.
type ScanStep struct {
	Cursor   ScanCursor
	Examined int
	Matched  int // moved, or in a dry run would be
	Done     bool
	Size     int64 // entries in the scanned zset after the step
	// Unreadable are the IDs of entries whose key is not a job hash: left
	// as they are, the others of the step acted on.
	Unreadable []string
}

// scanStep reads a scan script's reply: { as-of, examined, matched,
// cursor score, cursor member, done, size, { IDs left unreadable } }.
func scanStep(what string, v any) (ScanStep, error) {
	l, ok := v.([]any)
	if !ok || len(l) != 8 {
		return ScanStep{}, fmt.Errorf("%w: %s step reply %v", ErrMalformed, what, v)
	}
	r, err := strs(l[:7])
	if err != nil {
		return ScanStep{}, fmt.Errorf("%w: %s step reply %v", ErrMalformed, what, v)
	}
	bad, err := strs(l[7])
	if err != nil {
		return ScanStep{}, fmt.Errorf("%w: %s step reply %v", ErrMalformed, what, v)
	}
	n := func(s string) int64 { x, _ := strconv.ParseInt(s, 10, 64); return x }
	return ScanStep{
		Cursor:   ScanCursor{Score: r[3], Member: r[4], AsOf: n(r[0])},
		Examined: int(n(r[1])), Matched: int(n(r[2])), Done: r[5] == "1", Size: n(r[6]),
		Unreadable: bad,
	}, nil
}

// RedriveStep runs one bounded step (at most limit entries examined) of a
// redrive scan of partition p from cur (lua/redrive.lua 'select'). An
// entry whose key is not a job hash is left as it is and named in
// Unreadable.
func (s *Store) RedriveStep(ctx context.Context, p keys.Partition, sel Selector, cur ScanCursor, limit int, dry bool) (ScanStep, error) {
	asof, d := "", "0"
	if cur.AsOf > 0 {
		asof = strconv.FormatInt(cur.AsOf, 10)
	}
	if dry {
		d = "1"
	}
	v, err := s.run(ctx, lua.Redrive, p, "select", sel.State, cur.Score, cur.Member, asof, limit, d,
		sel.Kind, sel.Reason, boundMS(sel.After), boundMS(sel.Before)).Result()
	if err != nil {
		return ScanStep{}, err
	}
	return scanStep("redrive", v)
}

// Reroute sets the worker a job prefers (sticky routing), or unpins it
// when s.Worker is "". It returns the job's state; ErrNotFound when there
// is no such job, ErrMalformed (nothing written) when its state field
// names no state, and a *sluicetype.StateError for a completed job.
func (s *Store) Reroute(ctx context.Context, ref keys.Ref, st Sticky) (string, error) {
	return s.RerouteOf(ctx, ref, st, Created{})
}

// RerouteOf is Reroute of the job of ref only if it is the one c names:
// another is a *sluicetype.OtherJobError, nothing written.
func (s *Store) RerouteOf(ctx context.Context, ref keys.Ref, st Sticky, c Created) (string, error) {
	lo, hi, idAt := c.args(ref.Local)
	state, err := s.run(ctx, lua.Reroute, ref.Partition, ref.Local, st.Worker, st.Mode, ms(st.After), lo, hi, idAt).Text()
	if err != nil {
		return "", err
	}
	if created, ok := strings.CutPrefix(state, statusConflict+" "); ok {
		return "", otherJob(ref, created)
	}
	return rerouteState(state)
}

// Created names the job an operator's tool showed by its creation time:
// an operator's call about one job acts only if the job under the ID was
// created at or after From and before Before, checked in the script
// call that acts (lib_admin.lua other_job), so that a job given the ID
// since the tool looked (deleted and enqueued again) is refused, a
// *sluicetype.OtherJobError, nothing written. The zero Created names any
// job of the ID, as before.
type Created struct {
	From, Before time.Time
	// Fence and Redrives, when not nil, name the job as the tool showed
	// it too (cancel, delete, run now and redrive by ID check them; a
	// reroute does not): its fence (the attempts it began) and its count
	// of redrives, checked in the same call (lib_admin.lua moved_on), so
	// that a job that ran again or was redriven since the tool looked,
	// keeping its creation time, is refused, a *sluicetype.MovedOnError,
	// nothing written.
	Fence, Redrives *int64
}

// seen are c's script arguments naming the job's fence and count of
// redrives (lib_admin.lua moved_on): "" for one c does not name.
func (c Created) seen() (fence, redrives string) {
	if c.Fence != nil {
		fence = strconv.FormatInt(*c.Fence, 10)
	}
	if c.Redrives != nil {
		redrives = strconv.FormatInt(*c.Redrives, 10)
	}
	return fence, redrives
}

// args are c's script arguments for the job local: the bounds in whole
// ms, as creation times are kept (a time within a ms is not before the
// next one), and the time local carries when it is a generated ID (the
// creation time of a job that has no created-time field); three empty strings for
// the zero Created.
func (c Created) args(local string) (lo, hi, idAt string) {
	if c.From.IsZero() {
		return "", "", ""
	}
	ceil := func(t time.Time) int64 {
		ms := t.UnixMilli()
		if time.UnixMilli(ms).Before(t) {
			ms++
		}
		return ms
	}
	lo, hi = strconv.FormatInt(ceil(c.From), 10), strconv.FormatInt(ceil(c.Before), 10)
	if t, ok := keys.LocalTime(local); ok {
		idAt = strconv.FormatInt(t.UnixMilli(), 10)
	}
	return lo, hi, idAt
}

// otherJob is the error of a call about the job ref that found another
// job under its ID, created at ms (a script's 'conflict' answer).
func otherJob(ref keys.Ref, ms string) error {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: job %s: conflict answer %q", ErrMalformed, ref.Local, ms)
	}
	return &sluicetype.OtherJobError{ID: ref.String(), Created: time.UnixMilli(n)}
}

// movedOn is the error of a call about the job ref that found it moved
// on since a tool showed it: field ("fence" or "redrives", a script's
// 'changed ' answer) is not as shown; the job is in state now.
func movedOn(ref keys.Ref, field, state string) error {
	if field != "fence" && field != "redrives" {
		return fmt.Errorf("%w: job %s: changed answer %q", ErrMalformed, ref.Local, field)
	}
	return &sluicetype.MovedOnError{ID: ref.String(), Field: field, State: state}
}
