package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
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

// RelayResult is what one relay call did.
type RelayResult struct {
	Handled int          // outbox entries read
	Dead    []DeadEffect // those of them dead-lettered
}

// DeadEffect is an outbox entry that could not be relayed: an effect on a
// key in another slot that Redis refuses (its key holds another type, its
// value would overflow, ...), a follow-up that cannot be enqueued, or an
// entry that cannot be read. It stays in its partition's dead stream
// (keys.Partition.DeadOutbox) until sent back (ReviveEffects) or trimmed.
type DeadEffect struct {
	ID    string    // in the dead stream
	Entry string    // in the outbox, before it was dead-lettered
	Job   string    // ID in the partition of the job whose commit wrote it; "" unknown
	Error string    // why it could not be relayed
	At    time.Time // when it was dead-lettered
	// What it would write: Op, Key and Args, or the follow-up job for
	// OpEnqueue; Op is "" for an entry that could not be read.
	Op       string
	Key      string
	Args     []string
	FollowUp *FollowUp

	raw   []byte // the entry's effect as the outbox held it
	first string // the entry's first ID: Entry, or the 'o' of a revived one
}

// ErrNoDeadEffect: no dead-lettered outbox entry has this ID.
var ErrNoDeadEffect = sluicetype.ErrNoDeadEffect

// RelayOutbox relays up to limit outbox entries of one partition: effects
// on keys in other slots (each applied exactly once, by its dedup marker)
// and notifications to parents in other partitions (idempotent). Entries
// are deleted once relayed. One that can never apply is dead-lettered
// (lua/deadfx.lua): moved to the dead stream with its error, which its job
// records too; the call reports it, and relaying goes on with the rest. A
// failure that may pass (Redis unreachable) stops the call.
func (s *Store) RelayOutbox(ctx context.Context, p keys.Partition, limit int) (RelayResult, error) {
	msgs, err := s.rdb.XRangeN(ctx, p.Outbox(), "-", "+", int64(limit)).Result()
	if err != nil || len(msgs) == 0 {
		return RelayResult{}, err
	}
	notes := map[keys.Partition][]note{}
	var done []string
	var dead []DeadEffect
	// bury carries an entry's first ID into the dead stream: buried again
	// after a revive, it still counts its age from it, so it is never
	// applied once whether it applied before can no longer be told
	bury := func(m redis.XMessage, first, msg string) {
		b, _ := m.Values["b"].(string)
		d := DeadEffect{Entry: m.ID, Error: msg, first: first}
		d.describe([]byte(b))
		dead = append(dead, d)
	}
	oldest := s.now().Add(-relayMaxAge)
	for _, m := range msgs {
		first, _ := m.Values["o"].(string) // a revived entry's first ID (lua/deadfx.lua)
		if first == "" {
			first = m.ID
		}
		if entryTime(first).Before(oldest) {
			bury(m, first, "not relayed: older than "+relayMaxAge.String()+", so whether it was applied before is no longer known")
			continue
		}
		switch m.Values["t"] {
		case "n":
			n, ok := s.decodeNote(m.Values)
			if !ok {
				bury(m, first, "malformed notification")
				continue
			}
			notes[n.parent.Partition] = append(notes[n.parent.Partition], n)
			done = append(done, m.ID)
		case "fx":
			b, _ := m.Values["b"].(string)
			if err := s.relayEffect(ctx, []byte(b)); err != nil {
				if !permanent(err) {
					return RelayResult{}, err
				}
				bury(m, first, err.Error())
				continue
			}
			done = append(done, m.ID)
		default:
			bury(m, first, "unknown outbox entry")
		}
	}
	for pp, ns := range notes {
		args := []any{len(ns)}
		for _, n := range ns {
			args = append(args, n.parent.Local, n.step, n.child, n.state, n.result)
		}
		if err := s.run(ctx, lua.Notify, pp, args...).Err(); err != nil {
			return RelayResult{}, err
		}
	}
	if len(done) > 0 {
		if err := s.rdb.XDel(ctx, p.Outbox(), done...).Err(); err != nil {
			return RelayResult{}, err
		}
	}
	buried, err := s.bury(ctx, p, dead)
	return RelayResult{Handled: len(msgs), Dead: buried}, err
}

// permanent reports whether relaying an entry failed for good: the effect
// cannot apply, or Redis answered an error (not a connection failure, nor
// a state that passes: LOADING, BUSY, TRYAGAIN, ...), which a script
// validating its input only answers for what will never apply.
func permanent(err error) bool {
	if _, ok := err.(*sluicetype.EffectError); ok {
		return true
	}
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "ERR ")
}

// bury dead-letters entries of p's outbox and returns those it moved (an
// entry that another relay handled meanwhile is no longer there).
func (s *Store) bury(ctx context.Context, p keys.Partition, dead []DeadEffect) ([]DeadEffect, error) {
	if len(dead) == 0 {
		return nil, nil
	}
	args := []any{"bury", len(dead)}
	for _, d := range dead {
		args = append(args, d.Entry, d.first, d.Job, d.Error, d.blob())
	}
	v, err := s.run(ctx, lua.DeadEffects, p, args...).Result()
	if err != nil {
		return nil, err
	}
	moved, err := strs(v)
	if err != nil {
		return nil, err
	}
	byEntry := make(map[string]DeadEffect, len(dead))
	for _, d := range dead {
		byEntry[d.Entry] = d
	}
	out := make([]DeadEffect, 0, len(moved)/2)
	for i := 0; i+1 < len(moved); i += 2 {
		d := byEntry[moved[i]]
		d.ID, d.At = moved[i+1], entryTime(moved[i+1])
		out = append(out, d)
	}
	return out, nil
}

// DeadEffects lists up to n dead-lettered entries of p's outbox, oldest
// first, after the dead entry ID after ("" from the start).
func (s *Store) DeadEffects(ctx context.Context, p keys.Partition, after string, n int) ([]DeadEffect, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	msgs, err := s.rdb.XRangeN(ctx, p.DeadOutbox(), start, "+", int64(n)).Result()
	if err != nil {
		return nil, err
	}
	out := make([]DeadEffect, len(msgs))
	for i, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		out[i] = DeadEffect{ID: m.ID, Entry: str("id"), Job: str("job"), Error: str("error"), At: entryTime(m.ID)}
		out[i].describe([]byte(str("b")))
	}
	return out, nil
}

// ReviveEffects sends dead-lettered entries of p back to its outbox, to be
// relayed again, with one error per ID: nil, or ErrNotFound.
func (s *Store) ReviveEffects(ctx context.Context, p keys.Partition, ids []string) ([]error, error) {
	args := []any{"revive", len(ids)}
	for _, id := range ids {
		args = append(args, id)
	}
	v, err := s.run(ctx, lua.DeadEffects, p, args...).Result()
	if err != nil {
		return nil, err
	}
	res, err := strs(v)
	if err != nil || len(res) != len(ids) {
		return nil, fmt.Errorf("%w: revive reply %v", ErrMalformed, v)
	}
	out := make([]error, len(ids))
	for i, r := range res {
		out[i] = reviveStatus(ids[i], r)
	}
	return out, nil
}

// describe fills in what the entry would write from its blob, kept to
// send it back.
func (d *DeadEffect) describe(b []byte) {
	d.raw = b
	var e relayed
	if len(b) == 0 || msgpack.Unmarshal(b, &e) != nil {
		return
	}
	if d.Job == "" {
		d.Job = e.From
	}
	d.Op, d.Key, d.Args, d.FollowUp = e.Op, e.Key, e.Args, e.Job
}

func (d *DeadEffect) blob() []byte { return d.raw }

// Public is d, a dead effect of partition p, as users see it, named by
// full IDs: its own (queue:partition:entry) and its job's ("" when
// unknown).
func (d DeadEffect) Public(p keys.Partition) sluicetype.DeadEffect {
	var job string
	if d.Job != "" {
		job = keys.Ref{Partition: p, Local: d.Job}.String()
	}
	return sluicetype.DeadEffect{ID: keys.Ref{Partition: p, Local: d.ID}.String(), JobID: job,
		Error: d.Error, Op: d.Op, Key: d.Key, Args: d.Args, At: d.At}
}

func (s *Store) decodeNote(v map[string]any) (note, bool) {
	str := func(k string) string { x, _ := v[k].(string); return x }
	ref, ok := keys.ParseRef(s.cfg.NS, str("p"))
	return note{parent: ref, step: str("s"), child: str("c"), state: str("st"), result: str("r")}, ok
}

// relayEffect applies one outboxed effect; an *sluicetype.EffectError means it can
// never apply.
func (s *Store) relayEffect(ctx context.Context, b []byte) error {
	var e relayed
	if err := msgpack.Unmarshal(b, &e); err != nil {
		return &sluicetype.EffectError{Msg: "undecodable outbox entry: " + err.Error()}
	}
	if e.Op == sluicetype.OpEnqueue {
		if e.Job == nil {
			return &sluicetype.EffectError{Msg: "ENQUEUE without a job"}
		}
		job := e.Job.Job
		job.Relayed = true
		res, err := s.Enqueue(ctx, e.Job.Partition, []NewJob{job})
		if err != nil {
			return err
		}
		if res[0].Err != nil {
			return &sluicetype.EffectError{Msg: res[0].Err.Error()}
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
	return relayStatus(e.Op, e.Key, res)
}
