package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// relayMarkTTL is how long an applied relayed effect, or an enqueued
// follow-up, is remembered (lua/enqueue.lua FOLLOW_KEEP): an outbox entry
// is relayed within moments, and one older than relayMaxAge is never
// applied (RelayOutbox).
const relayMarkTTL = 7 * 24 * time.Hour

// relayMaxAge is the age past which an outbox entry is dead-lettered
// rather than relayed: a day short of relayMarkTTL, so that the marker of
// an entry applied before (and not deleted, its relayer having died) is
// always still there, whatever the clocks' skew.
const relayMaxAge = relayMarkTTL - 24*time.Hour

// entryTime is the time in a stream entry ID ("ms-seq").
func entryTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return time.UnixMilli(n)
}

// note is a child-finished notification bound for a parent's partition.
type note struct {
	parent keys.Ref
	step   string
	child  string
	state  string
	result string
}

// RelayOutbox relays up to limit outbox entries of one partition: effects
// on keys in other slots (each applied exactly once, by its dedup marker)
// and notifications to parents in other partitions (idempotent). Entries
// are deleted once relayed; one whose effect can never apply is moved to
// the outbox's dead-letter stream with the error. It returns how many
// entries it handled.
func (s *Store) RelayOutbox(ctx context.Context, p keys.Partition, limit int) (int, error) {
	msgs, err := s.rdb.XRangeN(ctx, p.Outbox(), "-", "+", int64(limit)).Result()
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	notes := map[keys.Partition][]note{}
	var done, dead []string
	var deadErr []string
	oldest := s.now().Add(-relayMaxAge)
	for _, m := range msgs {
		if entryTime(m.ID).Before(oldest) {
			dead, deadErr = append(dead, m.ID), append(deadErr, "not relayed: older than "+relayMaxAge.String()+
				", so whether it was applied before is no longer known")
			continue
		}
		switch m.Values["t"] {
		case "n":
			n, ok := s.decodeNote(m.Values)
			if !ok {
				dead, deadErr = append(dead, m.ID), append(deadErr, "malformed notification")
				continue
			}
			notes[n.parent.Partition] = append(notes[n.parent.Partition], n)
			done = append(done, m.ID)
		case "fx":
			b, _ := m.Values["b"].(string)
			if err := s.relayEffect(ctx, []byte(b)); err != nil {
				if _, permanent := err.(*EffectError); !permanent {
					return 0, err
				}
				dead, deadErr = append(dead, m.ID), append(deadErr, err.Error())
				continue
			}
			done = append(done, m.ID)
		default:
			dead, deadErr = append(dead, m.ID), append(deadErr, "unknown outbox entry")
		}
	}
	for pp, ns := range notes {
		args := []any{len(ns)}
		for _, n := range ns {
			args = append(args, n.parent.Local, n.step, n.child, n.state, n.result)
		}
		if err := s.run(ctx, lua.Notify, pp, args...).Err(); err != nil {
			return 0, err
		}
	}
	_, err = s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, id := range dead {
			pl.XAdd(ctx, &redis.XAddArgs{Stream: p.Outbox() + ":dead", Values: []any{"id", id, "error", deadErr[i]}})
		}
		if ids := append(done, dead...); len(ids) > 0 {
			pl.XDel(ctx, p.Outbox(), ids...)
		}
		return nil
	})
	return len(msgs), err
}

func (s *Store) decodeNote(v map[string]any) (note, bool) {
	str := func(k string) string { x, _ := v[k].(string); return x }
	ref, ok := keys.ParseRef(s.cfg.NS, str("p"))
	return note{parent: ref, step: str("s"), child: str("c"), state: str("st"), result: str("r")}, ok
}

// relayEffect applies one outboxed effect; an *EffectError means it can
// never apply.
func (s *Store) relayEffect(ctx context.Context, b []byte) error {
	var e relayed
	if err := msgpack.Unmarshal(b, &e); err != nil {
		return &EffectError{Msg: "undecodable outbox entry: " + err.Error()}
	}
	if e.Op == OpEnqueue {
		if e.Job == nil {
			return &EffectError{Msg: "ENQUEUE without a job"}
		}
		job := e.Job.Job
		job.Relayed = true
		res, err := s.Enqueue(ctx, e.Job.Partition, []NewJob{job})
		if err != nil {
			return err
		}
		if res[0].Err != nil {
			return &EffectError{Msg: res[0].Err.Error()}
		}
		return nil
	}
	args := []any{relayMarkTTL.Milliseconds(), e.Op}
	for _, a := range e.Args {
		args = append(args, a)
	}
	res, err := lua.Relay.Run(ctx, s.rdb, []string{e.Mark, e.Key}, args...).Text()
	if err != nil {
		return err
	}
	if msg, failed := strings.CutPrefix(res, "error: "); failed {
		return &EffectError{Msg: fmt.Sprintf("%s %s: %s", e.Op, e.Key, msg)}
	}
	return nil
}
