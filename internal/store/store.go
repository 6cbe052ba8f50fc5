// Package store runs Sluice's Lua scripts against Redis and decodes their
// answers. It is the only Go code that talks to the job data model; callers
// work in whole partitions, one script call (one round trip) each.
package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// Config is the part of a deployment's settings that scripts need.
type Config struct {
	NS              string
	RetainCompleted time.Duration // < 0: delete completed jobs at once
	RetainArchived  time.Duration // archived and quarantined jobs
	RetainCancelled time.Duration
	CrashLimit      int
	// CrashDelay is how long a job waits, after its first crash, before it
	// is retried (doubling with each crash, at most a minute, or this if
	// longer); 0: it is available again at once (lua/lib_lifecycle.lua crash).
	CrashDelay time.Duration
	// Now, when set, replaces the store's TIME in every script (tests only).
	Now func() time.Time
}

// Store runs scripts for one namespace.
type Store struct {
	rdb   redis.UniversalClient
	cfg   Config
	pkeys sync.Map // keys.Partition -> *partKeys
	// pinsIndexed holds the prefixes of the partitions whose index of pin
	// lists this process found complete (unindexedPins)
	pinsIndexed sync.Map
	// keep ends every call ID: '~' and how long, in ms, its record is kept
	// (callKeep, read by lua/lib_replay.lua); keepFor is that time
	keep    string
	keepFor time.Duration
}

// partKeys is how every script call on a partition starts: lua.Head
// elements (the number of keys given), the KEYS, then the ARGV entries
// every script takes (lib.lua), each put in an interface once. Boxing a
// string or a number above 255 allocates, and these are 30 of them.
type partKeys struct {
	call  []any
	nowAt int // where the store time goes, when the Store has a clock
}

// New returns a Store on rdb. rdb is the caller's; the Store never closes it.
func New(rdb redis.UniversalClient, cfg Config) *Store {
	keep := callKeep(rdb)
	return &Store{rdb: rdb, cfg: cfg, keep: keepSuffix(keep), keepFor: keep}
}

// Client is the Redis client the store runs on.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// NS is the store's namespace.
func (s *Store) NS() string { return s.cfg.NS }

// Partition names partition index of queue in this namespace.
func (s *Store) Partition(queue string, index int) keys.Partition {
	return keys.Partition{NS: s.cfg.NS, Queue: queue, Index: index}
}

// NewLocal returns a fresh job ID (keys.NewLocal) that carries the
// injected clock's time when there is one, so that a job's created time
// read from its ID (enqueue.lua, CT_SLACK) agrees with the store time.
func (s *Store) NewLocal() string {
	if s.cfg.Now != nil {
		return keys.NewLocalAt(s.cfg.Now())
	}
	return keys.NewLocal()
}

// PrepareWorkerScripts builds the texts of the scripts a worker runs
// (package lua builds a script at its first use): a worker pays for it
// when it is made, not at its first claim.
func PrepareWorkerScripts() {
	for _, sc := range []*lua.Script{lua.Claim, lua.Ack, lua.Step, lua.Renew, lua.Maintain, lua.Enqueue,
		lua.Heartbeat, lua.Relay, lua.Deaths, lua.Layout, lua.Progress, lua.Retention} {
		sc.Hash()
	}
}

// run executes a script with the common ARGV header of lua/lib.lua
// followed by args and a fresh call ID (callID).
func (s *Store) run(ctx context.Context, sc *lua.Script, p keys.Partition, args ...any) *redis.Cmd {
	return s.send(ctx, sc, newCallID(), append(s.callArgs(p, len(args)), args...))
}

// callArgs starts a call to partition p (partKeys), with room for n more
// arguments and the call ID. The hot paths (enqueue, ack, step) append
// their own arguments to it and call send, which copies nothing.
func (s *Store) callArgs(p keys.Partition, n int) []any {
	pk := s.partKeys(p)
	args := append(make([]any, 0, len(pk.call)+n+1), pk.call...)
	if s.cfg.Now != nil {
		args[pk.nowAt] = strconv.FormatInt(s.cfg.Now().UnixMilli(), 10)
	}
	return args
}

// send runs sc with args (from callArgs) and the call ID: the last ARGV
// entry, by which a script that receives the same call twice (go-redis
// re-sends a command whose reply was lost; Sluice retries some calls
// itself) answers the second time what it did the first, without running
// again (lua/lib_replay.lua). One logical call keeps one ID through all
// its re-sends; distinct calls never share one.
func (s *Store) send(ctx context.Context, sc *lua.Script, call string, args []any) *redis.Cmd {
	return s.sendKept(ctx, sc, call+s.keep, args)
}

// keepSuffix ends a call ID with how long its record is kept.
func keepSuffix(d time.Duration) string { return "~" + strconv.FormatInt(d.Milliseconds(), 10) }

// sendKept is send with the call ID's keep suffix given (keepSuffix), for
// a call whose caller re-sends it for longer than the store's keep.
func (s *Store) sendKept(ctx context.Context, sc *lua.Script, call string, args []any) *redis.Cmd {
	cmd := sc.Call(ctx, s.rdb, append(args, call))
	s.refreshSlots(cmd.Err())
	if err := scriptError(cmd.Err()); err != cmd.Err() {
		cmd.SetErr(err)
	}
	return cmd
}

// partKeys builds a partition's call head once.
func (s *Store) partKeys(p keys.Partition) *partKeys {
	if pk, ok := s.pkeys.Load(p); ok {
		return pk.(*partKeys)
	}
	ks := p.Script()
	if s.declaresOne() {
		ks = ks[:1]
	}
	call := make([]any, lua.Head, lua.Head+len(ks)+8)
	call[lua.Head-1] = strconv.Itoa(len(ks))
	for _, k := range ks {
		call = append(call, k)
	}
	pk := &partKeys{call: call, nowAt: len(call)}
	pk.call = append(pk.call, "", p.Prefix(), keys.WakeChannel(p.NS, p.Queue), p.Index,
		retention(s.cfg.RetainCompleted), retention(s.cfg.RetainArchived),
		retention(s.cfg.RetainCancelled), s.cfg.CrashLimit)
	s.pkeys.Store(p, pk)
	return pk
}

// argRetainCancelled is where, counted from the store time (ARGV[1]),
// a call's retention of cancelled jobs (ARGV[7], lua/lib.lua) is.
const argRetainCancelled = 6

func retention(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return ms(d)
}

// ms is d in whole milliseconds, what scripts take. A positive d under
// 1 ms is 1, not 0, which most fields read as "none" (no timeout, a key
// held until the job ends).
func ms(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}

// msUp is d in whole milliseconds, rounded up: for a period or a hold
// that must not come out shorter than asked.
func msUp(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d > 0 && d%time.Millisecond != 0 {
		ms++ // rounded up without d+1ms-1, which overflows near the largest Duration
	}
	return ms
}

func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// unixMSUp is unixMS rounded up to the next whole millisecond: for a time
// something must not happen before (a job's run time, a timer's wake).
func unixMSUp(t time.Time) int64 {
	m := unixMS(t)
	if !t.IsZero() && t.After(time.UnixMilli(m)) {
		m++
	}
	return m
}

// boundMS is finish-time bound t as the scan scripts take it (ARGV's
// "finished at or after", "finished before"): 0 for none; else rounded up
// to a whole millisecond (a finish time, whole milliseconds, is before t,
// or at or after it, exactly as it is against t rounded up), and -1 for a
// bound that comes to the epoch, which 0 would turn into none: as an
// after, every job (as none); as a before, no job.
func boundMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	if ms := unixMSUp(t); ms != 0 {
		return ms
	}
	return -1
}

// deadlineMS is deadline t as a script takes it: 0 for none, and a
// deadline at or before the epoch 1 ms after it (long passed, not none).
func deadlineMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixMilli(), 1)
}

// DeadlineAfterRun reports whether deadline is after run time runAt as
// a job's hash keeps them (whole milliseconds: the deadline rounded down,
// the run time up): a job whose deadline is not could never run.
func DeadlineAfterRun(deadline, runAt time.Time) bool {
	return deadlineMS(deadline) > unixMSUp(runAt)
}

func timeOrZero(v int64) time.Time {
	if v < 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

func strs(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: script answered %T, want a list", ErrMalformed, v)
	}
	out := make([]string, len(list))
	for i, e := range list {
		switch x := e.(type) {
		case string:
			out[i] = x
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		default:
			return nil, fmt.Errorf("%w: list entry %T", ErrMalformed, e)
		}
	}
	return out, nil
}

// timeAt is Time read at the node that holds key: on a cluster, a keyless
// TIME goes to any node, whose clock may differ from the key's node's
// and which may be down while that one is up.
func (s *Store) timeAt(ctx context.Context, key string) (time.Time, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if s.cfg.Now != nil || !ok {
		return s.Time(ctx)
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return time.Time{}, err
	}
	return node.Time(ctx).Result()
}

// Time reads the store's time: the injected clock's (Config.Now), else
// Redis TIME, in one round trip. An operator's tool takes its "now" from
// it, never from its machine's clock, to place what it reads against data
// the scripts wrote in store time (per-minute counters, finish times, a
// schedule's last tick): that machine's clock may be minutes off Redis's.
func (s *Store) Time(ctx context.Context) (time.Time, error) {
	if s.cfg.Now != nil {
		return s.cfg.Now(), nil
	}
	return s.rdb.Time(ctx).Result()
}

// declaresOne reports whether a call to a partition declares its first key
// (sched) alone, the prelude naming the others from the prefix
// (lua/lib.lua, partition_keys): on a single server, *redis.Client, where
// no slot migrates and the 21 other keys cost a call about 4 µs of
// Redis's time. Any other client (a cluster's, a ring's, a wrapper whose
// server Sluice cannot tell) declares them all.
func (s *Store) declaresOne() bool {
	_, single := s.rdb.(*redis.Client)
	return single
}
