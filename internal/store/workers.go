package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// MaxWorkersListed bounds a listing of the registry.
const MaxWorkersListed = 1000

func (s *Store) workers() keys.Workers { return keys.Workers{NS: s.cfg.NS} }

// Heartbeat registers w as alive for ttl (lua/heartbeat.lua), with the
// data model this release knows (w.DataModel is not read: it is DataModel).
func (s *Store) Heartbeat(ctx context.Context, w sluicetype.WorkerInfo, ttl time.Duration) error {
	qs := make([]string, 0, len(w.Queues))
	for q, n := range w.Queues {
		qs = append(qs, q+":"+strconv.Itoa(n))
	}
	sort.Strings(qs)
	fields := []any{"host", w.Host, "pid", w.PID, "started", unixMS(w.Started), "queues", strings.Join(qs, ","),
		"conc", w.Concurrency, "jobs", strings.Join(w.Jobs, " "), "dm", DataModel}
	if w.QueueVersions != nil { // read back as given: nil stays nil
		vs := make([]string, 0, len(w.QueueVersions))
		for q, v := range w.QueueVersions {
			vs = append(vs, q+":"+strconv.FormatInt(v, 10))
		}
		sort.Strings(vs)
		fields = append(fields, "qv", strings.Join(vs, ","))
	}
	return s.heartbeat(ctx, w.ID, ms(ttl), fields...)
}

// Unregister removes worker w.ID from the registry, unless the entry is
// another process's (its host, PID or start time is not w's): a worker ID
// reused by a new process stays registered when the old one stops.
func (s *Store) Unregister(ctx context.Context, w sluicetype.WorkerInfo) error {
	return s.heartbeat(ctx, w.ID, 0, "host", w.Host, "pid", w.PID, "started", unixMS(w.Started))
}

func (s *Store) heartbeat(ctx context.Context, id string, ttl int64, fields ...any) error {
	now := ""
	if s.cfg.Now != nil {
		now = strconv.FormatInt(s.cfg.Now().UnixMilli(), 10)
	}
	ks := s.workers()
	args := append([]any{now, id, ttl, ks.WorkerPrefix()}, fields...)
	return lua.Heartbeat.Run(ctx, s.rdb, []string{ks.Live(), ks.Worker(id)}, args...).Err()
}

// Worker reads worker id's registration: live is false when its
// heartbeat's entry has expired (or never was); a record that does not
// decode is an *EntryError.
func (s *Store) Worker(ctx context.Context, id string) (w sluicetype.WorkerInfo, live bool, err error) {
	m, err := s.rdb.HGetAll(ctx, s.workers().Worker(id)).Result()
	if err != nil {
		if isReplyError(err) { // a record of another type (WRONGTYPE)
			err = &EntryError{Name: id, Err: fmt.Errorf("%w: worker %s: %v", ErrMalformed, id, err)}
		}
		return w, false, err
	}
	if len(m) == 0 {
		return w, false, nil
	}
	if w, err = decodeWorker(id, m); err != nil {
		return w, false, &EntryError{Name: id, Err: err}
	}
	return w, true, nil
}

// Workers lists the live workers (at most MaxWorkersListed), most recently
// seen first, and drops the dead ones it meets from the registry. A worker
// whose record does not decode is left out, with an *EntryError for it in
// the error returned along with the others.
func (s *Store) Workers(ctx context.Context) ([]sluicetype.WorkerInfo, error) {
	ks := s.workers()
	ids, err := s.rdb.ZRevRange(ctx, ks.Live(), 0, MaxWorkersListed-1).Result()
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, ks.Worker(id))
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		return nil, err
	}
	var out []sluicetype.WorkerInfo
	var dead []any
	var bad []*EntryError
	for i, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			// a record of another type (WRONGTYPE)
			bad = append(bad, &EntryError{Name: ids[i], Err: fmt.Errorf("%w: worker %s: %v", ErrMalformed, ids[i], err)})
			continue
		}
		m := c.Val()
		if len(m) == 0 {
			dead = append(dead, ids[i])
			continue
		}
		w, err := decodeWorker(ids[i], m)
		if err != nil {
			bad = append(bad, &EntryError{Name: ids[i], Err: err})
			continue
		}
		out = append(out, w)
	}
	if len(dead) > 0 {
		if err := s.rdb.ZRem(ctx, ks.Live(), dead...).Err(); err != nil {
			return nil, err
		}
	}
	return out, joinEntries(bad)
}

func decodeWorker(id string, m map[string]string) (sluicetype.WorkerInfo, error) {
	var bad error
	num := func(f string) int64 {
		n, err := strconv.ParseInt(m[f], 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("%w: worker %s: %s = %q", ErrMalformed, id, f, m[f])
		}
		return n
	}
	w := sluicetype.WorkerInfo{
		ID: id, Host: m["host"], PID: int(num("pid")), Started: time.UnixMilli(num("started")),
		Concurrency: int(num("conc")), LastSeen: time.UnixMilli(num("seen")), Queues: map[string]int{},
	}
	if m["jobs"] != "" {
		w.Jobs = strings.Split(m["jobs"], " ")
	}
	if m["dm"] != "" { // absent: a release before data models were registered
		w.DataModel = int(num("dm"))
	}
	for q := range strings.SplitSeq(m["queues"], ",") {
		name, n, ok := strings.Cut(q, ":")
		if !ok {
			continue
		}
		p, err := strconv.Atoi(n)
		if err != nil && bad == nil {
			bad = fmt.Errorf("%w: worker %s: queue %q", ErrMalformed, id, q)
		}
		w.Queues[name] = p
	}
	if _, ok := m["qv"]; ok { // absent: a release before layout versions were registered
		w.QueueVersions = map[string]int64{}
	}
	for q := range strings.SplitSeq(m["qv"], ",") {
		name, v, ok := strings.Cut(q, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("%w: worker %s: queue version %q", ErrMalformed, id, q)
		}
		w.QueueVersions[name] = n
	}
	return w, bad
}
