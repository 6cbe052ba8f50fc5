package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// Cancel moves one job to cancelled (reason 'operator'), to be deleted
// keep after (the retention of the workers that serve its queue, which
// the caller reads with ReadRetention or is told; the store's own
// RetainCancelled is that of the cancellations its worker makes); a
// running job's holder loses its lease (lua/cancel.lua). It returns the
// job's previous state, ErrNotFound, or a *sluicetype.StateError for a
// finished job.
func (s *Store) Cancel(ctx context.Context, ref keys.Ref, keep time.Duration) (string, error) {
	args := append(s.callArgs(ref.Partition, 2), ref.Local, keys.CancelChannel(ref.NS))
	args[s.partKeys(ref.Partition).nowAt+argRetainCancelled] = retention(keep)
	return adminReply("cancel", ref, s.send(ctx, lua.Cancel, newCallID(), args))
}

// Delete deletes one job that is not running, with all its keys
// (lua/delete.lua). It returns the job's previous state, ErrNotFound, or a
// *sluicetype.StateError for a running job.
func (s *Store) Delete(ctx context.Context, ref keys.Ref) (string, error) {
	return adminReply("delete", ref, s.run(ctx, lua.Delete, ref.Partition, ref.Local))
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
	args := make([]any, 0, 3+len(locals))
	args = append(args, "ids", string(action), len(locals))
	for _, l := range locals {
		args = append(args, l)
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
	state, err := s.run(ctx, lua.Reroute, ref.Partition, ref.Local, st.Worker, st.Mode, ms(st.After)).Text()
	if err != nil {
		return "", err
	}
	return rerouteState(state)
}
