package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// Retention is how long the workers of a queue keep the jobs that finish
// there before their maintenance sweep deletes them, as one worker
// recorded it (RecordRetention) in the namespace's keys.Retention hash:
// "completed:archived:cancelled:started:worker" (ms; completed -1 when
// they are deleted at once; started in unix ms).
type Retention struct {
	Queue     string
	Completed time.Duration // < 0: deleted at once
	Archived  time.Duration // archived and quarantined jobs
	Cancelled time.Duration
	Worker    string // the worker that recorded it
	// Started is when that worker started, in the store's time (Time):
	// the records of two workers compare by it, whatever their clocks.
	Started time.Time
}

// RecordRetention records the store's retention as that of the workers
// of queues, by worker, which started at started, read from the store's
// clock (Time) when it started, in one round trip (lua/retention.lua).
// The record of a queue is that of the worker that started last, not of
// the last write: a queue's record is replaced only when started is at
// or after the start it holds (or it holds none, or one that cannot be
// read, or one more than a minute after the store's time, which no start
// read from the store can be). A worker writes it when it starts, and
// again later only if that failed: an older worker whose write succeeds
// late does not undo the record of a newer one (a deploy that changed the
// configuration). A worker's configuration is what it records, and the
// newest is the one a deploy brings; a rule that kept the longest could
// never record a shorter retention again.
//
// newer lists the queues whose record was left as it was, a worker that
// started after started having recorded its own there. A call go-redis
// sends twice (its reply lost) finds its own record the second time and
// changes nothing. The key holding another type than a hash is an error
// wrapping ErrMalformed, and a start more than a minute after the store's
// time is refused: nothing is written then.
func (s *Store) RecordRetention(ctx context.Context, queues []string, worker string, started time.Time) (newer []string, err error) {
	if len(queues) == 0 {
		return nil, nil
	}
	if worker == "" || slices.Contains(queues, "") {
		return nil, fmt.Errorf("store: a retention record needs a worker ID and queue names (worker %q, queues %q)", worker, queues)
	}
	v := encodeRetention(Retention{Completed: s.cfg.RetainCompleted, Archived: s.cfg.RetainArchived,
		Cancelled: s.cfg.RetainCancelled, Worker: worker, Started: started})
	if _, err := DecodeRetention(queues[0], v); err != nil {
		return nil, err // a start past what a record holds (year 2262)
	}
	args := make([]any, 0, 2+len(queues))
	args = append(args, s.layoutNow(), v)
	for _, q := range queues {
		args = append(args, q)
	}
	key := keys.Retention(s.cfg.NS)
	newer, err = lua.Retention.Run(ctx, s.rdb, []string{key}, args...).StringSlice()
	if err != nil {
		return nil, scriptError(err)
	}
	return newer, nil
}

// encodeRetention is r as keys.Retention holds it (DecodeRetention).
func encodeRetention(r Retention) string {
	return strconv.FormatInt(retention(r.Completed), 10) + ":" + strconv.FormatInt(retention(r.Archived), 10) + ":" +
		strconv.FormatInt(retention(r.Cancelled), 10) + ":" + strconv.FormatInt(max(r.Started.UnixMilli(), 0), 10) + ":" + r.Worker
}

// ReadRetention reads the retention recorded for queue's workers, in one
// round trip; ok is false when none is (no worker of a version that
// records it has served the queue). A value that is not a retention is an
// *EntryError naming the queue (ErrMalformed).
func (s *Store) ReadRetention(ctx context.Context, queue string) (r Retention, ok bool, err error) {
	v, err := s.rdb.HGet(ctx, keys.Retention(s.cfg.NS), queue).Result()
	if err == redis.Nil {
		return Retention{}, false, nil
	}
	if err != nil {
		return Retention{}, false, err
	}
	r, err = DecodeRetention(queue, v)
	if err != nil {
		return Retention{}, false, &EntryError{Name: queue, Err: err}
	}
	return r, true, nil
}

// maxRetentionMS is the longest retention a time.Duration holds, in ms.
const maxRetentionMS = math.MaxInt64 / int64(time.Millisecond)

// DecodeRetention reads queue's retention from its value in
// keys.Retention (RecordRetention): three whole numbers of ms, each -1
// or more, the start time (unix ms) and a worker ID, which may hold ':'.
func DecodeRetention(queue, v string) (Retention, error) {
	bad := func() (Retention, error) {
		return Retention{}, fmt.Errorf("%w: the retention recorded for queue %q is %q", ErrMalformed, queue, v)
	}
	f := strings.SplitN(v, ":", 5)
	if len(f) != 5 || f[4] == "" {
		return bad()
	}
	var n [4]int64
	for i, s := range f[:4] {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || x < -1 || x > maxRetentionMS || strconv.FormatInt(x, 10) != s || (i == 3 && x < 0) {
			return bad()
		}
		n[i] = x
	}
	d := func(ms int64) time.Duration {
		if ms < 0 {
			return -1
		}
		return time.Duration(ms) * time.Millisecond
	}
	return Retention{Queue: queue, Completed: d(n[0]), Archived: d(n[1]), Cancelled: d(n[2]),
		Worker: f[4], Started: time.UnixMilli(n[3])}, nil
}
