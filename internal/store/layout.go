package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// MaxPartitions bounds a queue's partition count.
const MaxPartitions = 1024

// MaxQueuesListed bounds a listing of a namespace's queue registry, and
// MaxNamespacesListed one of the namespaces.
const (
	MaxQueuesListed     = 10000
	MaxNamespacesListed = 10000
)

// Layout is what every client and worker must agree on about a queue: its
// partition count. It is recorded in the namespace's registry
// (keys.Queues, lua/layout.lua) by the first process that uses the queue,
// and changes only through a resize.
type Layout struct {
	Queue      string
	Partitions int
	// Version is 1 when the queue is registered and grows by one with
	// each resize: a process that read another version has a stale view.
	Version    int64
	Registered time.Time
	Changed    time.Time // when registered or last resized
}

// Parts names every partition of the queue.
func (l Layout) Parts(ns string) []keys.Partition {
	ps := make([]keys.Partition, l.Partitions)
	for i := range ps {
		ps[i] = keys.Partition{NS: ns, Queue: l.Queue, Index: i}
	}
	return ps
}

// DecodeLayout reads queue's layout from its registry value,
// "partitions:version:registered:changed" (lua/layout.lua).
func DecodeLayout(queue, v string) (Layout, error) {
	bad := func() (Layout, error) {
		return Layout{}, fmt.Errorf("%w: the layout of queue %q in the registry is %q", ErrMalformed, queue, v)
	}
	f := strings.Split(v, ":")
	if len(f) != 4 {
		return bad()
	}
	var n [4]int64
	for i, s := range f {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || x < 0 || strconv.FormatInt(x, 10) != s {
			return bad()
		}
		n[i] = x
	}
	if n[0] < 1 || n[0] > MaxPartitions || n[1] < 1 {
		return bad()
	}
	return Layout{Queue: queue, Partitions: int(n[0]), Version: n[1],
		Registered: time.UnixMilli(n[2]), Changed: time.UnixMilli(n[3])}, nil
}

// layoutNow is the time the layout script records, and the retention
// script's now: the injected clock's, or "" for the store's TIME.
func (s *Store) layoutNow() string {
	if s.cfg.Now == nil {
		return ""
	}
	return strconv.FormatInt(s.cfg.Now().UnixMilli(), 10)
}

// layoutReply decodes lua/layout.lua's {code, layout} answer.
func layoutReply(queue string, cmd *redis.Cmd) (int64, Layout, error) {
	res, err := cmd.Slice()
	if err != nil {
		return 0, Layout{}, err
	}
	if len(res) != 2 {
		return 0, Layout{}, fmt.Errorf("%w: layout.lua answered %v", ErrMalformed, res)
	}
	code, _ := res[0].(int64)
	v, _ := res[1].(string)
	switch code {
	case -1:
		return code, Layout{}, nil
	case -2:
		_, err := DecodeLayout(queue, v)
		return code, Layout{}, err
	}
	l, err := DecodeLayout(queue, v)
	return code, l, err
}

// RegisterLayout records queue's layout with partitions partitions if the
// registry has none, and answers the layout recorded (by this call when
// created is true). Safe to re-send: a second delivery finds the first's.
func (s *Store) RegisterLayout(ctx context.Context, queue string, partitions int) (l Layout, created bool, err error) {
	cmd := lua.Layout.Run(ctx, s.rdb, []string{keys.Queues(s.cfg.NS)}, "register", s.layoutNow(), queue, partitions)
	code, l, err := layoutReply(queue, cmd)
	return l, code == 1, err
}

// ResizeLayout sets queue's partition count to partitions if its layout
// is still at version (compare and set) and token still holds the queue's
// resize lock (LockResize), and answers the layout it found or made: done
// is false when it found another version, or (ErrResizeUnlocked) that the
// lock was lost. A queue with no layout is sluicetype.ErrQueueNotFound.
func (s *Store) ResizeLayout(ctx context.Context, queue string, version int64, partitions int, token string) (l Layout, done bool, err error) {
	cmd := lua.Layout.Run(ctx, s.rdb, []string{keys.Queues(s.cfg.NS), keys.ResizeLock(s.cfg.NS, queue)},
		"resize", s.layoutNow(), queue, partitions, version, token)
	code, l, err := layoutReply(queue, cmd)
	switch {
	case err != nil:
	case code == -1:
		err = s.notFound(queue)
	case code == -3:
		err = ErrResizeUnlocked
	}
	return l, code == 1, err
}

// ResizeLockTTL is how long a resize lock lives unless released: longer
// than a resize of the most partitions takes, short enough that one left
// by a dead operator's tool does not block the next for long.
const ResizeLockTTL = time.Minute

// LockResize takes queue's resize lock for token (for ResizeLockTTL),
// from whoever holds it when steal is set; false when another token holds
// it. Safe to re-send.
func (s *Store) LockResize(ctx context.Context, queue, token string, steal bool) (bool, error) {
	mode := "0"
	if steal {
		mode = "1"
	}
	n, err := lua.Layout.Run(ctx, s.rdb, []string{keys.Queues(s.cfg.NS), keys.ResizeLock(s.cfg.NS, queue)},
		"lock", "", token, ResizeLockTTL.Milliseconds(), mode).Int()
	return n == 1, err
}

// UnlockResize releases queue's resize lock if token holds it.
func (s *Store) UnlockResize(ctx context.Context, queue, token string) error {
	return lua.Layout.Run(ctx, s.rdb, []string{keys.Queues(s.cfg.NS), keys.ResizeLock(s.cfg.NS, queue)},
		"unlock", "", token).Err()
}

// ReadLayout reads queue's layout from the registry, in one round trip;
// sluicetype.ErrQueueNotFound when it has none.
func (s *Store) ReadLayout(ctx context.Context, queue string) (Layout, error) {
	v, err := s.rdb.HGet(ctx, keys.Queues(s.cfg.NS), queue).Result()
	if err == redis.Nil {
		return Layout{}, s.notFound(queue)
	}
	if err != nil {
		return Layout{}, err
	}
	return DecodeLayout(queue, v)
}

// EntryError is one entry of a listing that could not be decoded: a
// worker's record (Workers), a schedule (Schedules), a queue's layout in
// the registry (ListLayouts, ReadLayouts). Those listings leave such an
// entry out, return the others, and return with them an error joining one
// EntryError per entry left out (errors.Join), so that one corrupt key
// hides no healthy entry from a caller that shows what it can.
// errors.Is(err, ErrMalformed) matches it.
type EntryError struct {
	Name string // the worker ID, schedule name or queue
	Err  error
}

func (e *EntryError) Error() string { return e.Err.Error() }
func (e *EntryError) Unwrap() error { return e.Err }

// EntryErrors returns the EntryErrors err joins, and whether err is
// nothing else (true for nil): a listing that returned such an error
// returned every other entry.
func EntryErrors(err error) ([]*EntryError, bool) {
	if err == nil {
		return nil, true
	}
	var e *EntryError
	if errors.As(err, &e) && e == err {
		return []*EntryError{e}, true
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil, false
	}
	var out []*EntryError
	for _, x := range j.Unwrap() {
		es, ok := EntryErrors(x)
		if !ok {
			return nil, false
		}
		out = append(out, es...)
	}
	return out, true
}

// ReadLayouts reads the layouts of queues in one round trip; a queue the
// registry has none of is left out. A queue whose registry value is not a
// layout is left out too, with an *EntryError for it in the error
// returned along with the others.
func (s *Store) ReadLayouts(ctx context.Context, queues []string) (map[string]Layout, error) {
	if len(queues) == 0 {
		return map[string]Layout{}, nil
	}
	vs, err := s.rdb.HMGet(ctx, keys.Queues(s.cfg.NS), queues...).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]Layout, len(queues))
	var bad []error
	for i, v := range vs {
		str, ok := v.(string)
		if !ok {
			continue
		}
		l, err := DecodeLayout(queues[i], str)
		if err != nil {
			bad = append(bad, &EntryError{Name: queues[i], Err: err})
			continue
		}
		out[queues[i]] = l
	}
	return out, errors.Join(bad...)
}

// ListLayouts reads the namespace's registry (at most MaxQueuesListed
// queues, by HSCAN in pages), sorted by queue name. A queue whose value is
// not a layout is left out, with an *EntryError for it in the error
// returned along with the others.
func (s *Store) ListLayouts(ctx context.Context) ([]Layout, error) {
	var out []Layout
	var bad []*EntryError
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, keys.Queues(s.cfg.NS), cursor, "*", 500).Result()
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			l, err := DecodeLayout(kv[i], kv[i+1])
			if err != nil {
				bad = append(bad, &EntryError{Name: kv[i], Err: err})
				continue
			}
			out = append(out, l)
		}
		cursor = next
		if cursor == 0 || len(out)+len(bad) >= MaxQueuesListed {
			break
		}
	}
	slices.SortFunc(out, func(a, b Layout) int { return strings.Compare(a.Queue, b.Queue) })
	// HSCAN may return a field twice across pages
	out = slices.CompactFunc(out, func(a, b Layout) bool { return a.Queue == b.Queue })
	slices.SortFunc(bad, func(a, b *EntryError) int { return strings.Compare(a.Name, b.Name) })
	bad = slices.CompactFunc(bad, func(a, b *EntryError) bool { return a.Name == b.Name })
	return out[:min(len(out), MaxQueuesListed)], joinEntries(bad)
}

// CountLayouts is the number of queues in the namespace's registry (one
// HLEN), entries that are not layouts included: with ListLayouts, it
// tells whether the listing stopped at MaxQueuesListed.
func (s *Store) CountLayouts(ctx context.Context) (int64, error) {
	return s.rdb.HLen(ctx, keys.Queues(s.cfg.NS)).Result()
}

// joinEntries joins es as an error, nil for none.
func joinEntries(es []*EntryError) error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// AddNamespace records the store's namespace in the global set of
// namespaces (keys.Namespaces). Idempotent.
func (s *Store) AddNamespace(ctx context.Context) error {
	return s.rdb.SAdd(ctx, keys.Namespaces, s.cfg.NS).Err()
}

// Namespaces lists the namespaces recorded on rdb (at most
// MaxNamespacesListed, by SSCAN in pages of that one key), sorted.
func Namespaces(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	var out []string
	var cursor uint64
	for {
		ns, next, err := rdb.SScan(ctx, keys.Namespaces, cursor, "*", 500).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
		cursor = next
		if cursor == 0 || len(out) >= MaxNamespacesListed {
			break
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out[:min(len(out), MaxNamespacesListed)], nil
}

// OutboxSizes reads the lengths of the outbox and of the dead outbox of
// each of parts, in one pipelined round trip; as StateCounts, it refuses a
// partition at a newer data model.
func (s *Store) OutboxSizes(ctx context.Context, parts []keys.Partition) (outbox, dead []int64, err error) {
	var dm models
	cmds := make([]*redis.IntCmd, 2*len(parts))
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			dm.add(ctx, p, part)
			cmds[2*i] = p.XLen(ctx, part.Outbox())
			cmds[2*i+1] = p.XLen(ctx, part.DeadOutbox())
		}
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, nil, err
	}
	if err := pipeError(all); err != nil {
		return nil, nil, err
	}
	outbox, dead = make([]int64, len(parts)), make([]int64, len(parts))
	for i := range parts {
		outbox[i], dead[i] = cmds[2*i].Val(), cmds[2*i+1].Val()
	}
	return outbox, dead, nil
}

// notFound is the error for a queue the registry does not have.
func (s *Store) notFound(queue string) error {
	return fmt.Errorf("%w: %q in namespace %q", sluicetype.ErrQueueNotFound, queue, s.cfg.NS)
}
