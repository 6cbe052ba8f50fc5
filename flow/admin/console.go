package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// The reads below serve live dashboards (package web): each costs a fixed
// number of O(1) commands per partition, whatever the number of jobs.

// QueueLive is a queue's live counters.
type QueueLive struct {
	Queue      string
	Partitions int
	// Paused counts the paused partitions.
	Paused int
	Depth  map[string]int64 // jobs per state; every state is present
	// Minute is the start of the current minute (the store's clock) and
	// Finished what reached each terminal state during it so far.
	Minute   time.Time
	Finished map[string]int64
	// Previous is what finished in the minute before Minute.
	Previous map[string]int64
	// Err, when set, is why the queue's counters could not be read: its
	// registry entry is not a layout, a counter is not a number, a key
	// holds another type (ErrMalformed, or Redis's answer), a partition is
	// at a newer data model. Only Queue (and Partitions, when its layout
	// was read) is then set; the other queues are read all the same.
	Err error
}

// QueuesLive reads, for each queue of queues (name -> partitions, 0 for
// the count Redis records), its per-state counters, paused partitions and
// what finished in the current minute: one read of the registry, then one
// bounded call per partition (lua/live.lua), at most liveConcurrency at a
// time. With no queues (nil or empty) it reads every registered queue (at
// most MaxQueuesListed). The result is sorted by queue name.
//
// A named queue that is not registered is ErrQueueNotFound, and a count
// other than the registry's ErrLayoutMismatch: nothing is read. A queue
// whose data is corrupt is returned with Err set, among the others.
func (c *Client) QueuesLive(ctx context.Context, queues map[string]int) ([]QueueLive, error) {
	lays, bad, err := c.liveLayouts(ctx, queues)
	if err != nil {
		return nil, err
	}
	type read struct {
		q, k int
		p    keys.Partition
	}
	var todo []read
	out := make([]QueueLive, len(lays))
	reads := make([][]store.LiveRead, len(lays))
	for i, l := range lays {
		out[i] = QueueLive{Queue: l.Queue, Partitions: l.Partitions, Err: bad[l.Queue]}
		if out[i].Err != nil {
			continue
		}
		out[i].Depth, out[i].Finished, out[i].Previous = map[string]int64{}, map[string]int64{}, map[string]int64{}
		reads[i] = make([]store.LiveRead, l.Partitions)
		for k, p := range l.Parts(c.b.Namespace) {
			todo = append(todo, read{i, k, p})
		}
	}
	errs := make([]error, len(todo))
	sem := make(chan struct{}, liveConcurrency)
	var wg sync.WaitGroup
	for j, r := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			reads[r.q][r.k], errs[j] = c.b.Store.Live(ctx, r.p)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for j, r := range todo {
		if q := &out[r.q]; errs[j] != nil && q.Err == nil {
			q.Err = fmt.Errorf("queue %s partition %d: %w", q.Queue, r.p.Index, errs[j])
		}
	}
	for i := range out {
		q := &out[i]
		if q.Err != nil {
			q.Depth, q.Finished, q.Previous = nil, nil, nil
			continue
		}
		for _, s := range flow.States {
			q.Depth[s] = 0
		}
		for k, r := range reads[i] {
			err := errors.Join(addCounts(q.Depth, r.Stats, false), addCounts(q.Finished, r.Finished, true),
				addCounts(q.Previous, r.Previous, true))
			if err != nil {
				*q = QueueLive{Queue: q.Queue, Partitions: q.Partitions,
					Err: fmt.Errorf("queue %s partition %d: %w", q.Queue, k, err)}
				break
			}
			if r.Paused {
				q.Paused++
			}
			q.Minute = time.UnixMilli(r.Minute * 60000)
		}
	}
	return out, nil
}

// liveLayouts reads the layouts QueuesLive reads the counters of, sorted
// by queue, and the queues whose registry entry is not a layout (listed
// too, with Partitions 0).
func (c *Client) liveLayouts(ctx context.Context, queues map[string]int) ([]store.Layout, map[string]error, error) {
	bad := map[string]error{}
	if len(queues) == 0 {
		lays, err := c.b.Store.ListLayouts(ctx)
		es, only := store.EntryErrors(err)
		if !only {
			return nil, nil, err
		}
		for _, e := range es {
			bad[e.Name] = e.Err
			lays = append(lays, store.Layout{Queue: e.Name})
		}
		sort.Slice(lays, func(i, j int) bool { return lays[i].Queue < lays[j].Queue })
		return lays, bad, nil
	}
	names := make([]string, 0, len(queues))
	for q, n := range queues {
		if !runtime.ValidQueue(q) {
			return nil, nil, fmt.Errorf("%w: queue %q", flow.ErrInvalid, q)
		}
		if n < 0 || n > MaxPartitions {
			return nil, nil, fmt.Errorf("%w: queue %q: %d partitions not in 0..%d", flow.ErrInvalid, q, n, MaxPartitions)
		}
		names = append(names, q)
	}
	sort.Strings(names)
	m, err := c.b.Store.ReadLayouts(ctx, names)
	es, only := store.EntryErrors(err)
	if !only {
		return nil, nil, err
	}
	for _, e := range es {
		bad[e.Name] = e.Err
	}
	lays := make([]store.Layout, len(names))
	for i, q := range names {
		if bad[q] != nil {
			lays[i] = store.Layout{Queue: q}
			continue
		}
		l, ok := m[q]
		if !ok {
			return nil, nil, c.queueNotFound(q)
		}
		if err := c.sameCount(l, queues[q]); err != nil {
			return nil, nil, err
		}
		lays[i] = l
	}
	return lays, bad, nil
}

// queueNotFound is ErrQueueNotFound for queue.
func (c *Client) queueNotFound(queue string) error {
	return fmt.Errorf("%w: %q in namespace %q", ErrQueueNotFound, queue, c.b.Namespace)
}

// sameCount is ErrLayoutMismatch when a caller's count n (0: none given)
// is not l's.
func (c *Client) sameCount(l store.Layout, n int) error {
	if n != 0 && n != l.Partitions {
		return fmt.Errorf("%w: queue %q of namespace %q has %d partitions in Redis, the call named %d",
			ErrLayoutMismatch, l.Queue, c.b.Namespace, l.Partitions, n)
	}
	return nil
}

// liveConcurrency bounds QueuesLive's calls in flight.
const liveConcurrency = 8

// partitions names queue's partitions, as its layout in Redis records
// them now (one read): ErrQueueNotFound when it has none, and
// ErrLayoutMismatch when n, a caller's count (0: none), is another.
func (c *Client) partitions(ctx context.Context, queue string, n int) ([]keys.Partition, error) {
	if n < 0 || n > MaxPartitions {
		return nil, fmt.Errorf("%w: queue %q: %d partitions not in 0..%d", flow.ErrInvalid, queue, n, MaxPartitions)
	}
	l, err := c.b.Store.ReadLayout(ctx, queue)
	if err != nil {
		return nil, err
	}
	if err := c.sameCount(l, n); err != nil {
		return nil, err
	}
	return l.Parts(c.b.Namespace), nil
}

// addCounts adds the integer fields of m to into; skipRunTimes leaves out
// a minute hash's run time buckets ("rt:<bucket>").
func addCounts(into map[string]int64, m map[string]string, skipRunTimes bool) error {
	for f, v := range m {
		if skipRunTimes && strings.HasPrefix(f, "rt:") {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: counter %s = %q", flow.ErrMalformed, f, v)
		}
		into[f] += n
	}
	return nil
}

// MinuteCount is what a queue finished in one minute, per terminal state.
type MinuteCount struct {
	Minute   time.Time
	Finished map[string]int64
}

// QueueHistory reads what queue (with partitions partitions, 0 for
// the count Redis records) finished in each of the last minutes minutes (at most
// MaxStatsWindow), oldest first, the current one of store time (Redis
// TIME, not the caller's clock) last: one read of the registry and of
// TIME, then one O(1) command per partition and minute, in one pipelined
// round trip. A queue that is not registered is
// ErrQueueNotFound, a count other than the registry's ErrLayoutMismatch.
func (c *Client) QueueHistory(ctx context.Context, queue string, partitions, minutes int) ([]MinuteCount, error) {
	if !runtime.ValidQueue(queue) {
		return nil, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	// compared as minutes: a huge count would wrap as a Duration
	if most := int(MaxStatsWindow / time.Minute); minutes < 1 || minutes > most {
		return nil, fmt.Errorf("%w: %d minutes not in 1..%d", flow.ErrInvalid, minutes, most)
	}
	parts, err := c.partitions(ctx, queue, partitions)
	if err != nil {
		return nil, err
	}
	at, err := c.b.Store.Time(ctx) // the minutes are counted in store time
	if err != nil {
		return nil, err
	}
	now := at.UnixMilli() / 60000
	ms, err := c.b.Store.Minutes(ctx, parts, now-int64(minutes)+1, now)
	if err != nil {
		return nil, err
	}
	out := make([]MinuteCount, len(ms))
	for i, m := range ms {
		out[i] = MinuteCount{Minute: time.UnixMilli((now - int64(minutes) + 1 + int64(i)) * 60000), Finished: m.Finished}
	}
	return out, nil
}

// DeadEffectCount counts queue's dead-lettered effects, in every
// partition (one XLEN each, in one pipelined round trip): how many
// DeadEffects would list with no limit.
func (c *Client) DeadEffectCount(ctx context.Context, queue string) (int64, error) {
	if !runtime.ValidQueue(queue) {
		return 0, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	parts, err := c.partitions(ctx, queue, 0)
	if err != nil {
		return 0, err
	}
	_, dead, err := c.b.Store.OutboxSizes(ctx, parts)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, d := range dead {
		n += d
	}
	return n, nil
}

// ReadableSchedules is Schedules, which now also returns every schedule
// it could read and, when some could not be, an error that joins one
// error per such schedule, naming it (ErrMalformed); any other error with
// no schedule.
func (c *Client) ReadableSchedules(ctx context.Context) ([]ScheduleInfo, error) {
	return c.Schedules(ctx)
}

// JobBrief is the part of a job that changes as it runs, and its
// creation time, which tells the job from another given its ID later.
type JobBrief struct {
	State        string // "" when the job no longer exists, or cannot be read
	Attempt      int
	CrashAttempt int
	Fence        int64
	// Created is the job's creation time, as flow.JobInfo's: a job
	// deleted and its ID given to a new one between two reads may have
	// the same state and counters, but not the same creation time. Zero
	// when the job no longer exists.
	Created time.Time
	// Err, when set, is why the job could not be read: its partition is
	// at a newer data model (ErrNewerDataModel), its key holds another
	// type than a hash (ErrMalformed). Only Err is then set; the other
	// jobs are read all the same.
	Err error `json:"-"`
}

// JobBriefs reads the state and counters of each job of ids, in one
// pipelined round trip (one O(1) command per job, and one per partition
// for its data model). A malformed ID is an ErrInvalid error, and an
// error of reaching Redis fails the call; a job that does not exist has
// an empty State, one that cannot be read its own Err.
func (c *Client) JobBriefs(ctx context.Context, ids []string) (map[string]JobBrief, error) {
	refs := make([]keys.Ref, len(ids))
	for i, id := range ids {
		ref, err := c.ref(id)
		if err != nil {
			return nil, err
		}
		refs[i] = ref
	}
	read, err := c.b.Store.JobsFields(ctx, refs, keys.FieldState, keys.FieldAttempt, keys.FieldCrashAttempt, keys.FieldFence, keys.FieldCreated)
	if err != nil {
		return nil, err
	}
	out := make(map[string]JobBrief, len(ids))
	for i, id := range ids {
		if read[i].Err != nil {
			out[id] = JobBrief{Err: read[i].Err}
			continue
		}
		v := read[i].Values
		b, err := brief(refs[i].Local, v)
		if err != nil {
			err = fmt.Errorf("job %s: %w", id, err)
			out[id] = JobBrief{Err: err}
			continue
		}
		out[id] = b
	}
	return out, nil
}

// brief reads the state, counters and creation time of the job of ID
// local (JobBriefs' fields, "" when absent): a state that names none of
// flow.States, or a counter or creation time that is not a whole number,
// is corrupt data (ErrMalformed). A job of a generated ID keeps no
// creation time: its ID carries it (as Job reads it).
func brief(local string, v []string) (JobBrief, error) {
	b := JobBrief{State: store.StateName(v[0])}
	if b.State != "" && !validState(b.State) {
		return JobBrief{}, fmt.Errorf("%w: its state field %q names no state", flow.ErrMalformed, v[0])
	}
	counts := [3]int64{}
	for k := range counts {
		if v[k+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(v[k+1], 10, 64)
		if err != nil || n < 0 {
			return JobBrief{}, fmt.Errorf("%w: its counter %q is not a whole number", flow.ErrMalformed, v[k+1])
		}
		counts[k] = n
	}
	b.Attempt, b.CrashAttempt, b.Fence = int(counts[0]), int(counts[1]), counts[2]
	switch {
	case b.State == "":
	case v[4] == "":
		b.Created, _ = keys.LocalTime(local)
	default:
		ms, err := strconv.ParseInt(v[4], 10, 64)
		if err != nil {
			return JobBrief{}, fmt.Errorf("%w: its creation time %q is not a whole number", flow.ErrMalformed, v[4])
		}
		b.Created = time.UnixMilli(ms)
	}
	return b, nil
}

// MaxChildrenListed bounds JobExtras.Children.
const MaxChildrenListed = 200

// JobExtras is what Job does not return of a job: its headers and the
// children that finished and told it so.
type JobExtras struct {
	Headers map[string]string
	// Children are finished children (of a parent that spawned some),
	// by local ID, with the state each ended in; at most about
	// MaxChildrenListed, MoreChildren set when there are more.
	Children     []ChildInfo
	MoreChildren bool
}

// ChildInfo is a finished child as its parent recorded it: its ID within
// its partition (the part after queue:partition:, which the parent's
// record does not keep) and the state it ended in.
type ChildInfo struct {
	Local string
	State string
}

// JobExtras reads job id's headers and finished children, in one round
// trip for the job and one bounded scan of its children record. As Job,
// it refuses a partition at a newer data model (ErrNewerDataModel); a key
// of the job of another type is ErrMalformed.
func (c *Client) JobExtras(ctx context.Context, id string) (JobExtras, error) {
	ref, err := c.ref(id)
	if err != nil {
		return JobExtras{}, err
	}
	j, _, err := c.b.Store.Get(ctx, ref)
	if err != nil {
		return JobExtras{}, err
	}
	var x JobExtras
	if len(j.Headers) > 0 {
		if err := msgpack.Unmarshal(j.Headers, &x.Headers); err != nil {
			return x, fmt.Errorf("%w: job %s headers: %v", flow.ErrMalformed, id, err)
		}
	}
	kv, more, err := c.b.Store.ChildrenPage(ctx, ref, MaxChildrenListed)
	if err != nil {
		return x, err
	}
	for i := 0; i+1 < len(kv); i += 2 {
		state, _, _ := strings.Cut(kv[i+1], "\n")
		x.Children = append(x.Children, ChildInfo{Local: kv[i], State: state})
	}
	sort.Slice(x.Children, func(a, b int) bool { return x.Children[a].Local < x.Children[b].Local })
	x.MoreChildren = more
	return x, nil
}
