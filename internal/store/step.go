package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// ErrStepDone: the step already has a checkpoint; nothing was written.
var ErrStepDone = errors.New("sluice: step already checkpointed")

// Checkpoint modes.
const (
	ModeOnce   = "once"   // a step: the first checkpoint stays
	ModeCursor = "cursor" // a cursor: each checkpoint replaces the last
	// ModeOnceMarked is ModeOnce from an attempt that knows its job is
	// marked as having checkpoints (its claim answered some,
	// Job.Checkpointed, or it committed one): the script then reads one
	// field less of the job (lua/step.lua). The mark is never taken off a
	// job, so what the attempt knew stays true.
	ModeOnceMarked = "once+"
)

// Checkpoint is one step commit of a running attempt.
type Checkpoint struct {
	Lease
	Field   string // step name, or cursor field
	Record  []byte
	Mode    string
	Commit  string // unique name of this commit, for relayed effects: required with effects
	Effects []sluicetype.Effect
	// GiveUp, when set, is when the checkpoint's tries stop (runtime's
	// flushCheckpoints), by the caller's clock: when its attempt's lease
	// could have run out, reckoned as the step was sent, not from when
	// its call started, which may be long after (behind the partition's
	// earlier call, retried). Not sent.
	GiveUp time.Time
}

// CheckpointResult is what one checkpoint did: Outboxed entries written,
// or Err (ErrStale, ErrStepDone, an *sluicetype.EffectError, or the call's error) when
// nothing was.
type CheckpointResult struct {
	Outboxed int
	Err      error
}

// Checkpoints records steps of running attempts of one partition, each
// with its effects, in one round trip (in consecutive calls for more than
// maxCallBytes of records). It also returns the error of a call that
// failed (the first, when several did), which each checkpoint of every
// failed call carries as its Err, the very value: a caller sends those
// again (runtime's flushCheckpoints). A checkpoint sent again is answered
// as its first commit was, whether or not that call ran (lua/step.lua).
func (s *Store) Checkpoints(ctx context.Context, p keys.Partition, cs []Checkpoint) ([]CheckpointResult, error) {
	n, room := callCut(len(cs), len(cs), func(i int) int { return cs[i].size() })
	out, err := s.checkpoints(ctx, p, cs[:n], room)
	if n == len(cs) {
		return out, err
	}
	rest, err2 := s.Checkpoints(ctx, p, cs[n:])
	switch {
	case err == nil:
		err = err2
	case err2 != nil: // a later call failed too: its checkpoints carry the first error
		for i := range rest {
			if rest[i].Err == err2 {
				rest[i].Err = err
			}
		}
	}
	return append(out, rest...), err
}

// size is about how many bytes c's fields take in a step call.
func (c *Checkpoint) size() int {
	return len(c.Local) + len(c.LeaseID) + len(c.Field) + len(c.Record) + len(c.Mode) + 64
}

// pack adds c's fields to a step call's packed argument (lua/step.lua).
func (c *Checkpoint) pack(l *argList) {
	l.str(c.Local)
	l.str(c.LeaseID)
	l.int(c.Fence)
	l.str(c.Field)
	l.bytes(c.Record)
	l.str(c.Mode)
}

// checkpoints sends cs in one call, its packed argument started with room
// bytes (callCut).
func (s *Store) checkpoints(ctx context.Context, p keys.Partition, cs []Checkpoint, room int) ([]CheckpointResult, error) {
	out := make([]CheckpointResult, len(cs))
	// A checkpoint whose effects are invalid fails alone: the others go.
	fields := newArgList(room)
	var effects []any
	// marks: nil (sent as '') until a checkpoint has effects, then one
	// per checkpoint sent, '1' where its effects follow in ARGV
	// (lua/step.lua)
	var marks []byte
	sent := make([]int, 0, len(cs)) // index in cs of each checkpoint sent
	id := newContentID()
	for i, c := range cs {
		if len(c.Effects) > 0 {
			fx, err := s.appendEffects(effects, p, c.Local, c.Commit, c.Effects)
			if err != nil {
				out[i].Err = err
				continue
			}
			if marks == nil {
				marks = bytes.Repeat([]byte{'0'}, len(sent))
			}
			effects, marks = fx, append(marks, '1')
		} else if marks != nil {
			marks = append(marks, '0')
		}
		sent = append(sent, i)
		id.add(c.Local)
		id.add(c.LeaseID)
		id.addInt(c.Fence)
		id.add(c.Field)
		id.add(c.Mode)
		id.add(c.Commit)
		id.addBytes(c.Record)
		// the effects too: a commit of the same checkpoint with other
		// effects (a cursor saved again after its effects failed, with
		// others or none) is another call, not a re-send of the first,
		// whose recorded answer would be taken for its own
		id.addInt(int64(len(c.Effects)))
		for _, e := range c.Effects {
			id.add(e.Op)
			id.add(e.Key)
			id.addInt(int64(len(e.Args)))
			for _, a := range e.Args {
				id.add(a)
			}
			id.addBytes(e.Job)
		}
		c.pack(fields)
	}
	if len(sent) == 0 {
		return out, nil
	}
	args := append(s.callArgs(p, 3+len(effects)), len(sent), fields.done(), marks)
	args = append(args, effects...)
	reply, err := s.send(ctx, lua.Step, id.call(), args).Result()
	if err == nil {
		if n, ok := reply.(int64); ok && n == 0 {
			return out, nil // every checkpoint ok, nothing outboxed: the zero results
		}
	}
	v, ok := reply.([]any)
	if err == nil && !ok {
		err = fmt.Errorf("%w: step reply %T", ErrMalformed, reply)
	}
	if err == nil && len(v) != len(sent) {
		err = fmt.Errorf("%w: step reply %v", ErrMalformed, v)
	}
	if err != nil {
		for _, i := range sent {
			out[i].Err = err
		}
		return out, err
	}
	for k, e := range v {
		i := sent[k]
		pair, _ := e.([]any)
		if len(pair) != 2 {
			out[i].Err = fmt.Errorf("%w: step reply %v", ErrMalformed, e)
			continue
		}
		out[i] = checkpointResult(pair)
	}
	return out, nil
}
