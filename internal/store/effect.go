package store

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
)

// Effect is a Redis write that commits together with a step checkpoint or
// a job's completion. A write to a key in the job's cluster slot is made by
// the same script that checks the fence; any other goes to the partition's
// outbox in that script and is relayed exactly once afterwards.
type Effect struct {
	Op   string   // INCRBY, HINCRBY, SET, HSET, SADD, ZADD, XADD, RPUSH, PEXPIRE, or ENQUEUE
	Key  string   // the key written (not for ENQUEUE)
	Args []string // the op's arguments after the key
	// Job is the follow-up job of an ENQUEUE effect; it is always relayed
	// through the outbox, under an ID derived from the commit.
	Job *FollowUp
}

// FollowUp is a job enqueued by an effect.
type FollowUp struct {
	Partition keys.Partition
	Job       NewJob
}

// OpEnqueue is the Effect op that enqueues a follow-up job.
const OpEnqueue = "ENQUEUE"

// EffectError reports an effect that cannot apply (wrong key type, non
// numeric value, ...): nothing of its commit was written.
type EffectError struct{ Msg string }

func (e *EffectError) Error() string { return "sluice: effect cannot apply: " + e.Msg }

// ErrInvalidEffect: an effect is malformed (unknown op, no key, a key whose
// dedup marker cannot share its slot).
var ErrInvalidEffect = errors.New("sluice: invalid effect")

// relayed is an outbox entry's effect, encoded with msgpack.
type relayed struct {
	Mark string    `msgpack:"m"`
	Key  string    `msgpack:"k"`
	Op   string    `msgpack:"o"`
	Args []string  `msgpack:"a,omitempty"`
	Job  *FollowUp `msgpack:"j,omitempty"`
}

var directOps = map[string]bool{
	"INCRBY": true, "HINCRBY": true, "SET": true, "HSET": true, "SADD": true,
	"ZADD": true, "XADD": true, "RPUSH": true, "PEXPIRE": true,
}

// appendEffects adds effects to a script's ARGV as lua/lib.lua's
// read_effects expects. commit names this commit uniquely (job, step and
// sequence) so relayed effects are applied once.
func (s *Store) appendEffects(args []any, p keys.Partition, commit string, fx []Effect) ([]any, error) {
	args = append(args, len(fx))
	if len(fx) == 0 {
		return args, nil
	}
	slot := keys.Slot(p.Tag())
	for i, e := range fx {
		if e.Op == OpEnqueue {
			if e.Job == nil {
				return nil, fmt.Errorf("%w: ENQUEUE without a job", ErrInvalidEffect)
			}
			job := *e.Job
			job.Job.Local = commit + ":" + strconv.Itoa(i)
			b, err := msgpack.Marshal(relayed{Op: OpEnqueue, Job: &job})
			if err != nil {
				return nil, err
			}
			args = append(args, "o", b)
			continue
		}
		if !directOps[e.Op] || e.Key == "" {
			return nil, fmt.Errorf("%w: %q on key %q", ErrInvalidEffect, e.Op, e.Key)
		}
		if keys.Slot(e.Key) == slot {
			args = append(args, "d", e.Op, e.Key, len(e.Args))
			for _, a := range e.Args {
				args = append(args, a)
			}
			continue
		}
		mark, ok := keys.EffectMark(s.cfg.NS, e.Key, commit+":"+strconv.Itoa(i))
		if !ok {
			return nil, fmt.Errorf("%w: key %q has a '}' but no valid hash tag", ErrInvalidEffect, e.Key)
		}
		b, err := msgpack.Marshal(relayed{Mark: mark, Key: e.Key, Op: e.Op, Args: e.Args})
		if err != nil {
			return nil, err
		}
		args = append(args, "o", b)
	}
	return args, nil
}
