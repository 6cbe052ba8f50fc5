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
)

// WatchKeep is how long a job that a caller waits on (Watch) is kept at
// least once it has finished, whatever the retention of its final state,
// so that its waiters can read it even where completed jobs are deleted
// at once (lua/lib_lifecycle.lua, WATCH_KEEP).
const WatchKeep = time.Minute

// Watch runs lua/watch.lua for the job ref, whose caller is subscribed to
// ref.DoneChannel() already: it returns the job's state, and marks a job
// that has not finished as watched, so that finishing it publishes
// "<state> <local>" on that channel and keeps it at least WatchKeep. A
// finished job is only read. ErrNotFound when there is no such job.
// created is the job's creation time in ms (its created field), 0 when
// it has none (a generated ID tells it, and is never given to another
// job) or the field is no whole number (corrupt: nothing to compare).
func (s *Store) Watch(ctx context.Context, ref keys.Ref) (state string, created int64, err error) {
	v, err := s.run(ctx, lua.Watch, ref.Partition, ref.Local).Text()
	if err != nil {
		return "", 0, err
	}
	switch v {
	case statusNone:
		return "", 0, ErrNotFound
	case statusMalformed:
		return "", 0, fmt.Errorf("%w: watch: job %s: its state field names no state", ErrMalformed, ref.Local)
	}
	state, ct, _ := strings.Cut(v, " ")
	if n, err := strconv.ParseInt(ct, 10, 64); err == nil && n > 0 {
		created = n
	}
	return state, created, nil
}

// States reads the state of each job of refs in one round trip (a
// pipeline; on a cluster, one per node), "" for a job that does not
// exist, and also for one that cannot be read (its key holds another
// type, its partition is at a newer data model, read in the same round
// trip): reading the job (Get) says which. created is each job's
// creation time as Watch answers it (0: none). It writes nothing. Its
// error is that of reaching Redis.
func (s *Store) States(ctx context.Context, refs []keys.Ref) (states []string, created []int64, err error) {
	if len(refs) == 0 {
		return nil, nil, nil
	}
	var dm models
	cmds := make([]*redis.SliceCmd, len(refs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range refs {
			dm.add(ctx, p, r.Partition)
			cmds[i] = p.HMGet(ctx, r.Job(r.Local), keys.FieldState, keys.FieldCreated)
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		return nil, nil, err
	}
	if err := dm.unreached(); err != nil { // not the job's: the call's
		return nil, nil, err
	}
	states, created = make([]string, len(refs)), make([]int64, len(refs))
	for i, c := range cmds {
		v, err := c.Result()
		switch {
		case err != nil && !isReplyError(err):
			return nil, nil, err
		case err != nil, dm.of(refs[i].Partition) != nil:
			// unreadable: ""
		default:
			if st, ok := v[0].(string); ok {
				states[i] = StateName(st)
			}
			if ct, ok := v[1].(string); ok {
				if n, err := strconv.ParseInt(ct, 10, 64); err == nil && n > 0 {
					created[i] = n
				}
			}
		}
	}
	return states, created, nil
}
