package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
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
// always still there. The age is store time's (RelayOutbox reads Redis
// TIME), as the entry's ID and the marker's expiry are: a relayer whose
// clock was a day or more behind would have applied an entry whose marker
// was gone, one ahead dead-lettered fresh entries.
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
	state  string // "" for a withdrawal of the child's end ('w' entry)
	result string
	// redrives is the child's count of redrives when it ended or was
	// redriven ("" from an older release: 0): the parent records no end
	// of a run withdrawn since (lua/lib_lifecycle.lua deliver, withdraw)
	redrives string
	// mark names the notification among all others the parent's
	// partition receives: the child's partition and its outbox entry
	// (keys.Partition.NoteMark), delivered once by it (lua/notify.lua)
	mark string
	// msg and first are its outbox entry and that entry's first ID, to
	// delete it or dead-letter it by
	msg   redis.XMessage
	first string
}

// RelayResult is what one relay call did.
type RelayResult struct {
	Handled int          // outbox entries read
	Dead    []DeadEffect // those of them dead-lettered
	Held    int          // those of them left for a later pass (held)
	Last    string       // the ID of the last entry read: where the next batch starts
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
	born  string // the entry's 'c': its job's creation time; "-" for none (lua/deadfx.lua)
}

// ErrNoDeadEffect: no dead-lettered outbox entry has this ID.
var ErrNoDeadEffect = sluicetype.ErrNoDeadEffect

// RelayOutbox relays up to limit outbox entries of one partition, those
// after the entry ID after ("" for the first): effects
// on keys in other slots (each applied exactly once, by its dedup marker;
// one older than relayMaxAge is dead-lettered instead), follow-up jobs
// (placed again by their queue's layout when a shrink retired their
// partition: relayFollowUp) and notifications to parents in other
// partitions (each delivered once, by its marker, for relayMarkTTL: a
// relayer that read an entry and stalled while another relayed it and a
// later one of the same child must not deliver the older end again over
// the newer). Entries are deleted
// once relayed. One that can never apply is dead-lettered
// (lua/deadfx.lua): moved to the dead stream with its error, which its
// job records too; the call reports it, and relaying goes on with the
// rest. A failure known to pass (passes: Redis unreachable, a failover)
// stops the call and leaves the entry for the next. A follow-up whose
// target partition is being taken away by a resize, or is at a newer data
// model, is left for a later pass alone (held): the entries after it,
// which go elsewhere, are relayed, and the call returns that error with
// its result. Stopped there, the partition's other effects would wait for
// the other queue's resize, and once a day short of a week old be
// dead-lettered unapplied. Notifications to a partition at a newer data
// model, or that this process's Redis user may not touch (NOPERM), are
// held alike; those to one that refuses every call for good (its data
// model key corrupt) are dead-lettered. Held entries stay at
// the front of the outbox: a caller that read a full batch goes on after
// its Last entry, or the entries behind a batch's worth of held ones
// would wait with them.
func (s *Store) RelayOutbox(ctx context.Context, p keys.Partition, after string, limit int) (RelayResult, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	msgs, err := s.rdb.XRangeN(ctx, p.Outbox(), start, "+", int64(limit)).Result()
	if err != nil || len(msgs) == 0 {
		return RelayResult{}, err
	}
	now, err := s.timeAt(ctx, p.Outbox()) // the entries' IDs are its node's time
	if err != nil {
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
		born, ok := m.Values["c"].(string) // an effect's job's creation time
		if !ok || m.Values["t"] != "fx" {
			born = "-" // an entry of an older release, or no effect's
		}
		d := DeadEffect{Entry: m.ID, Error: msg, first: first, born: born}
		d.describe([]byte(b))
		dead = append(dead, d)
	}
	oldest := now.Add(-relayMaxAge)
	var (
		held  error // the first entry's left for a later pass
		nheld int
	)
	for _, m := range msgs {
		first, _ := m.Values["o"].(string) // a revived entry's first ID (lua/deadfx.lua)
		if first == "" {
			first = m.ID
		}
		// A notification (a child's end or its withdrawal) is delivered
		// at any age: a dead-lettered one could not be revived (it holds
		// no effect), and its marker only matters while a stalled relayer
		// may repeat it.
		if t := m.Values["t"]; t != "n" && t != "w" && entryTime(first).Before(oldest) {
			bury(m, first, "not relayed: older than "+relayMaxAge.String()+", so whether it was applied before is no longer known")
			continue
		}
		switch m.Values["t"] {
		case "n", "w": // a child's end, or its withdrawal (a redrive)
			n, ok := s.decodeNote(m.Values)
			if !ok {
				bury(m, first, "malformed notification")
				continue
			}
			n.mark = p.Queue + ":" + strconv.Itoa(p.Index) + ":" + first
			n.msg, n.first = m, first
			notes[n.parent.Partition] = append(notes[n.parent.Partition], n)
		case "fx":
			b, _ := m.Values["b"].(string)
			if err := s.relayEffect(ctx, []byte(b)); err != nil {
				if ctx.Err() == nil && (errors.Is(err, errResizing) || errors.Is(err, ErrNewerDataModel)) {
					held = cmp.Or(held, err) // its target's matter, not the others'
					nheld++
					continue
				}
				if passes(ctx, err) {
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
			args = append(args, n.parent.Local, n.step, n.child, n.state, n.result, n.mark, n.redrives)
		}
		if err := s.run(ctx, lua.Notify, pp, args...).Err(); err != nil {
			switch {
			case ctx.Err() == nil && (errors.Is(err, ErrNewerDataModel) || redis.IsPermissionError(err)):
				// a newer process delivers them, or one whose Redis user
				// may touch the parent's partition (this one's may not:
				// NOPERM); dead-lettered, they could never be revived
				held = cmp.Or(held, err)
				nheld += len(ns)
			case passes(ctx, err):
				return RelayResult{}, err
			default:
				// the parent's partition refuses every call (its data
				// model key is corrupt): its notifications are
				// dead-lettered, and the entries after them relayed
				for _, n := range ns {
					bury(n.msg, n.first, "notification not delivered: "+err.Error())
				}
			}
			continue
		}
		for _, n := range ns {
			done = append(done, n.msg.ID)
		}
	}
	if len(done) > 0 {
		if err := s.rdb.XDel(ctx, p.Outbox(), done...).Err(); err != nil {
			return RelayResult{}, err
		}
	}
	buried, err := s.bury(ctx, p, dead)
	return RelayResult{Handled: len(msgs), Dead: buried, Held: nheld, Last: msgs[len(msgs)-1].ID}, cmp.Or(err, held)
}

// passes reports whether relaying an entry failed for a reason known to
// pass, so that the entry stays for a later pass (and the call stops: the
// entries after it would most likely fail alike): the call was cancelled,
// Redis is unreachable or slow (a connection error, a timeout, a closed
// client or an exhausted pool), or answered a state that ends by itself
// (LOADING, BUSY, TRYAGAIN, MOVED, ASK, CLUSTERDOWN, MASTERDOWN, READONLY,
// NOREPLICAS, OOM, max clients, an authentication that lapsed), a
// partition has a newer data model (a newer process relays the entry),
// or the follow-up's partition is being taken away by a resize. Every
// other failure would recur for this entry (its effect cannot apply,
// Redis refuses its command, a key its follow-up needs is corrupt: an
// *EffectError, ErrMalformed, a WRONGTYPE, an ERR reply): it is
// dead-lettered, alone, and the relay goes on with the rest.
func passes(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	var ee *sluicetype.EffectError
	switch {
	case errors.As(err, &ee), errors.Is(err, ErrMalformed):
		return false
	case errors.Is(err, errResizing), errors.Is(err, ErrNewerDataModel),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	if _, ok := redis.IsAskError(err); ok {
		return true
	}
	return redis.IsLoadingError(err) || redis.IsTryAgainError(err) || redis.IsClusterDownError(err) ||
		redis.IsMasterDownError(err) || redis.IsReadOnlyError(err) || redis.IsNoReplicasError(err) ||
		redis.IsOOMError(err) || redis.IsMaxClientsError(err) || redis.IsAuthError(err) ||
		strings.HasPrefix(err.Error(), "BUSY ")
}

// bury dead-letters entries of p's outbox and returns those it moved (an
// entry that another relay handled meanwhile is no longer there).
func (s *Store) bury(ctx context.Context, p keys.Partition, dead []DeadEffect) ([]DeadEffect, error) {
	if len(dead) == 0 {
		return nil, nil
	}
	args := []any{"bury", len(dead)}
	for _, d := range dead {
		args = append(args, d.Entry, d.first, d.Job, d.Error, d.blob(), d.born)
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
// first, after the dead entry ID after ("" from the start). A partition
// at a newer data model is ErrNewerDataModel (its data model is read in
// the same round trip).
func (s *Store) DeadEffects(ctx context.Context, p keys.Partition, after string, n int) ([]DeadEffect, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	var dm models
	var cmd *redis.XMessageSliceCmd
	all, _ := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		dm.add(ctx, pipe, p)
		cmd = pipe.XRangeN(ctx, p.DeadOutbox(), start, "+", int64(n))
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, err
	}
	if err := pipeError(all); err != nil {
		return nil, err
	}
	msgs := cmd.Val()
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
	n := note{parent: ref, step: str("s"), child: str("c"), state: str("st"), result: str("r"), redrives: str("dn")}
	if v["t"] == "w" {
		n.state, n.result = "", "" // lua/notify.lua: a withdrawal
	} else if n.state == "" {
		return n, false // an end names its state: '' is a withdrawal's
	}
	if n.redrives != "" {
		if c, err := strconv.ParseUint(n.redrives, 10, 63); err != nil || strconv.FormatUint(c, 10) != n.redrives {
			return n, false
		}
	}
	return n, ok
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
		return s.relayFollowUp(ctx, *e.Job)
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

// maxPlacements bounds the partitions a relayed follow-up is offered:
// its own, then one per shrink that retired the one before.
const maxPlacements = 8

// relayFollowUp enqueues a follow-up job, exactly once. Its partition may
// have been retired since its commit (a shrink of its queue): the job is
// then placed again by the queue's current layout (placeAgain), which
// changes its ID's partition but not its local ID.
func (s *Store) relayFollowUp(ctx context.Context, f FollowUp) error {
	job := f.Job
	job.Relayed = true
	p := f.Partition
	var via *keys.Partition // the retired partition whose record sent the job to p
	for range maxPlacements {
		res, err := s.Enqueue(ctx, p, []NewJob{job})
		if errors.Is(err, ErrRetired) {
			to, from, done, err := s.placeAgain(ctx, p, job, f.Route)
			if err != nil || done {
				return err
			}
			p, via = to, &from
			continue
		}
		if err != nil {
			return err
		}
		if res[0].Status == Conflicted {
			// A follow-up's job is the same on every relay of its entry:
			// another job under its ID whose content differs, once the
			// follow-up's enqueue marker is set, is the follow-up itself,
			// added by an earlier relay (whose relayer died before
			// deleting the entry, or whose reply was lost) and whose
			// arguments a unique key's OnDuplicate "replace" changed
			// since. It applied: not a conflict to dead-letter.
			// (enqueue.lua compares a job still there by its content, as
			// a repeated Spawn needs.)
			n, err := s.rdb.Exists(ctx, p.FollowUp(job.Local)).Result()
			if err != nil {
				return err
			}
			if n == 1 {
				return nil
			}
		}
		if res[0].Err != nil {
			if via != nil {
				// nothing was added (a conflict, a corrupt key): the
				// record goes, so that a revive once the cause is mended
				// places the job by the layout of then
				s.rdb.Del(ctx, via.FollowUp(job.Local))
			}
			return &sluicetype.EffectError{Msg: res[0].Err.Error()}
		}
		return nil
	}
	return &sluicetype.EffectError{Msg: fmt.Sprintf("follow-up %s of queue %q: no partition took it after %d placements",
		job.Local, f.Partition.Queue, maxPlacements)}
}

// errResizing: a follow-up's partition is retired but still in its
// queue's layout: a shrink is under way (or was left unfinished). Its
// entry is relayed again on a later pass.
var errResizing = errors.New("sluice: the follow-up's partition is being taken away by a resize of its queue; relayed again later")

// moved is the value of a retired partition's follow-up marker
// (keys.Partition.FollowUp) that says where the follow-up went instead.
const moved = "moved to "

// placeAgain is where (to) a follow-up job goes that its partition p
// refused as retired: the partition of the queue's current layout chosen
// as a producer would choose it (placeIndex), recorded in p's follow-up
// marker (kept as long as the enqueue's own, relayMarkTTL) before the job
// is enqueued there; from is the retired partition whose record that is
// (p, or one that p's record led to). A relay repeated later (its relayer
// died before deleting the entry, or an operator revived it) reads the
// record and goes to the same partition, whose own marker keeps the job
// to once, even if the queue was resized again meanwhile. A marker that p
// already held from the enqueue itself (the job was added to p before it
// was retired, and has finished since: a retired partition holds no job)
// answers done: the follow-up applied before.
func (s *Store) placeAgain(ctx context.Context, p keys.Partition, job NewJob, route string) (to, from keys.Partition, done bool, err error) {
	lay, err := s.ReadLayout(ctx, p.Queue)
	if errors.Is(err, sluicetype.ErrQueueNotFound) {
		return to, from, false, &sluicetype.EffectError{Msg: fmt.Sprintf(
			"follow-up %s: its partition %d of queue %q is retired and the queue has no layout", job.Local, p.Index, p.Queue)}
	}
	if err != nil {
		return to, from, false, err
	}
	if p.Index < lay.Partitions {
		return to, from, false, errResizing
	}
	for range maxPlacements {
		mark := p.FollowUp(job.Local)
		to = s.Partition(p.Queue, placeIndex(job, route, lay.Partitions))
		set, err := s.rdb.SetNX(ctx, mark, moved+strconv.Itoa(to.Index), relayMarkTTL).Result()
		if err != nil {
			return to, from, false, err
		}
		if !set {
			v, err := s.rdb.Get(ctx, mark).Result()
			if err == redis.Nil {
				continue // expired between the two calls
			}
			if err != nil {
				return to, from, false, err
			}
			rest, ok := strings.CutPrefix(v, moved)
			if !ok {
				return to, from, true, nil // enqueued in p before p was retired
			}
			i, err := strconv.Atoi(rest)
			if err != nil || i < 0 || i >= 1<<16 {
				return to, from, false, fmt.Errorf("%w: follow-up marker %s holds %q", ErrMalformed, mark, v)
			}
			to = s.Partition(p.Queue, i)
		}
		if to.Index < lay.Partitions {
			return to, p, false, nil
		}
		// placed there by an older layout: retired since as well
		p = to
	}
	return to, from, false, &sluicetype.EffectError{Msg: fmt.Sprintf(
		"follow-up %s of queue %q: no partition took it after %d placements", job.Local, p.Queue, maxPlacements)}
}

// placeIndex is the partition, of n, that a follow-up placed again goes
// to: by a stable hash (FNV-1a, as flow places a job by a key) of the key
// that placed it (route: FollowUp.Route), so that it goes where a
// producer places a job with its partition key and meets one with its
// unique key there; for an entry of an older release, which has none, its
// unique key, else its quarantine fingerprint; else its local ID. The
// choice is the same on every relay of one entry under one layout.
func placeIndex(j NewJob, route string, n int) int {
	key := j.Local
	switch {
	case route != "":
		key = route
	case j.Unique.Key != "":
		key = j.Unique.Key
	case j.Hold != "":
		key = j.Hold
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}
