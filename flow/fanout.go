package flow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/mpack"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/outcome"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// JoinRecheck is how long a parent waits for its children before it runs
// again anyway, a safety net for a child that never finishes (deleted by an
// operator, stuck in a paused queue), and for one whose end no worker
// relays: a child in another partition tells its parent through its
// partition's outbox, which only workers serving that partition relay,
// and its worker may have been killed after its ack, before its relay,
// with none serving the children's queue since. Join run again relays
// those outboxes itself.
const JoinRecheck = 10 * time.Minute

// JoinPolicy says when a parent stops waiting for its children.
type JoinPolicy int

const (
	// CollectAll waits for every child and returns each one's result or
	// failure.
	CollectAll JoinPolicy = iota
	// FailFast wakes the parent at the first child that fails; Join then
	// returns a *ChildFailedError.
	FailFast
)

// Children is the handle of the jobs a step spawned. A Children of some
// of them (Step and a subset of IDs) joins those only.
type Children struct {
	Step string
	IDs  []string
}

// spawnedNow is the attempt's memo (attempt.State.Memo) that step's Spawn
// added its children in this very attempt (its step ran, not read from
// its checkpoint): none has ended yet that a Join would find in an outbox
// (unrelayed). A step's name is used once per attempt.
func spawnedNow(st *attempt.State, step string, ran bool) bool {
	return st.Memo("spawned:"+step, func() any { return ran }).(bool)
}

// ChildResult is one child's outcome.
type ChildResult[R any] struct {
	Index  int // position of the child's item in Spawn (Join's results follow the order of the IDs it joins)
	ID     string
	State  string // completed, or archived/cancelled/quarantined when it failed
	Result R      // when completed: its RegisterResult result
	Error  string // when failed: its last error
}

// ChildFailedError is Join's error under FailFast.
type ChildFailedError struct {
	Index   int // position of the child's item in Spawn
	ID      string
	State   string
	Message string
}

func (e *ChildFailedError) Error() string {
	return fmt.Sprintf("child %s %s: %s", e.ID, e.State, e.Message)
}

// Spawn enqueues items as children of the running job, as the durable step
// name: atomically per partition and idempotently (child IDs derive from
// the parent, its creation time, the step and the item's index, and each
// child's enqueue is remembered for seven days, so running the step again
// never duplicates a child, even one that has finished and been deleted
// since). Children a shrink of their queue refuses (their partition went
// away since this process read the layout) go where the new count places
// them, in the same step, the others staying where they were added. A
// child that finishes notifies its parent,
// through its partition's outbox when the parent lives elsewhere, so the
// parent is woken even if a worker dies in between. A child may not have
// a unique key (ErrInvalid, nothing enqueued): one held by another job
// would add no child, and Join would wait for it for ever.
//
// Every child is validated before any is written: on bad input (ErrInvalid,
// ErrPayloadTooLarge, ErrUnknownKind, naming the child by its index)
// nothing is enqueued and no queue is registered. The step checkpoints the
// list of the children's IDs, which must fit in step.MaxResult (1 MiB of
// msgpack): a spawn whose IDs could take more (each ID is
// queue:partition:parentID@time~step~index, its partition number counted
// at its widest, 4 digits) is refused with ErrInvalid before anything is
// written; at the longest names (a 64-byte queue, a 128-byte parent ID, a
// 100-byte step) that is a little over 3,000 children; with a generated
// parent ID, the default queue and a short step, about 20,000. A child
// the store refuses (ErrMalformed: its rate class or unique key holds
// another type) fails the step with that error; a child whose ID is
// another job's, with a *sluicetype.ConflictError.
func Spawn(ctx context.Context, name string, items ...Item) (*Children, error) {
	st, ok := attempt.From(ctx)
	if !ok {
		return nil, step.ErrNoAttempt
	}
	ids, err := step.Run(ctx, name, func(ctx context.Context) ([]string, error) {
		spawnedNow(st, name, true)
		return spawn(ctx, st, name, items)
	})
	if err != nil {
		return nil, err
	}
	return &Children{Step: name, IDs: ids}, nil
}

func spawn(ctx context.Context, st *attempt.State, name string, items []Item) ([]string, error) {
	pl := &planner{st: st.Store, known: st.Known(), maxPayload: DefaultMaxPayload, maxAttempts: DefaultMaxAttempts, layouts: st.Layouts}
	parent := &store.ParentRef{Ref: st.Ref, Step: name}
	trace := traceHeaders(ctx)
	child := func(i int) EnqueueOption {
		id := childID(keys.ChildLocal(st.Ref.Local, st.Created, name, i))
		return func(o *enqueueOptions) error {
			if o.id != "" { // the item's own WithID (or SentAs), applied before
				return fmt.Errorf("%w: WithID: a spawned child's ID derives from its parent, the step and its index, so that the step run again adds no second child", ErrInvalid)
			}
			if err := id(o); err != nil {
				return err
			}
			return trace(o)
		}
	}
	var (
		size    = listHeadSize(len(items)) // of the step's record of the IDs, at most
		tooMany error
	)
	check := func(i int, d drafted) error {
		if d.job.Unique.Key != "" {
			// a held key adds no child, and Join would wait for ever for
			// the one it names
			return fmt.Errorf("%w: a unique key (WithUnique, WithUniqueArgs): a spawned child is unique by its ID already", ErrInvalid)
		}
		size += childIDSize(d.queue, d.job.Local)
		if i == len(items)-1 && size > step.MaxResult {
			// the children would be added, and the step that lists them
			// not checkpointed: the parent parked, its children orphans
			tooMany = fmt.Errorf("%w: the IDs of %d children take up to %d bytes in the step's checkpoint, over step.MaxResult (%d): spawn fewer children per step, or give them shorter names (queue, parent ID, step)",
				ErrInvalid, len(items), size, step.MaxResult)
			return tooMany
		}
		return nil
	}
	// every child is drafted before any is placed: bad input writes
	// nothing, not even the registration of a child's new queue
	jobs, routes, bad, err := pl.batch(ctx, items, parent, nil, child, check)
	if tooMany != nil { // no child's fault: all of them together
		return nil, tooMany
	}
	if err != nil {
		return nil, fmt.Errorf("child %d: %w", bad, err)
	}
	var added map[int]bool
	if st.Lease.Fence > 1 {
		// an attempt before this one may have added children and failed
		// short of the step's checkpoint, placed by a partition count the
		// queue has changed since: those stay where they are
		if added, err = placedBefore(ctx, pl, jobs, routes, nil); err != nil {
			return nil, err
		}
	}
	ids := make([]string, len(items))
	all := make([]int, 0, len(items))
	for i, r := range routes {
		ids[i] = r.ref.String()
		if !added[i] {
			all = append(all, i)
		}
	}
	refused, err := addChildren(ctx, pl, jobs, routes, ids, all)
	if err != nil || len(refused) == 0 {
		return ids, err
	}
	// a shrink of a child's queue took the partitions of some away (the
	// planner has read the new count): those go where the new count
	// places them, now, and the others stay where they were added. The
	// step run again would place all of them by the new count, and add
	// again the children added here to a partition the new count does
	// not choose for them.
	size = listHeadSize(len(items))
	jobs2, routes2, bad, err := pl.batch(ctx, items, parent, nil, child, check)
	if tooMany != nil {
		return nil, tooMany
	}
	if err != nil {
		return nil, fmt.Errorf("child %d: %w", bad, err)
	}
	for _, i := range refused {
		jobs[i], routes[i], ids[i] = jobs2[i], routes2[i], routes2[i].ref.String()
	}
	if st.Lease.Fence > 1 {
		// by a count this process had not seen: the step run before may
		// have added them there, or elsewhere by the new count
		more, err := placedBefore(ctx, pl, jobs, routes, refused)
		if err != nil {
			return ids, err
		}
		rest := refused[:0]
		for _, i := range refused {
			ids[i] = routes[i].ref.String()
			if !more[i] {
				rest = append(rest, i)
			}
		}
		refused = rest
	}
	if again, err := addChildren(ctx, pl, jobs, routes, ids, refused); err != nil || len(again) > 0 {
		return ids, cmp.Or(err, fmt.Errorf("%w: the queue of %d children was resized again during the spawn", sluicetype.ErrLayoutMismatch, len(again)))
	}
	return ids, nil
}

// placedBefore moves the routes of the children which (nil: all) already
// added, on another partition of their queue than the one routes name, to
// that partition: one of the queue's layout, or one an earlier layout
// named (store.PartitionsBeyond), where a child the step added before,
// and its seven-day marker, still are. It returns the children found on a
// partition a shrink retired: added before, not to be added again (a
// retired partition takes no job, and a shrink leaves none on it: those
// children ran; their IDs name the partition they ran on). The queue's
// layout is read from the registry, not this process's view of it, which
// may be older than a resize: a queue never resized (version 1) costs
// that one read, its children placed where routes place them; else, two
// pipelined round trips more or so (the flags past the layout, 16 a read;
// then the children). Only when the step may have run before.
func placedBefore(ctx context.Context, pl *planner, jobs []store.NewJob, routes []route, which []int) (added map[int]bool, err error) {
	added = map[int]bool{}
	if which == nil {
		which = make([]int, len(routes))
		for i := range which {
			which[i] = i
		}
	}
	byQueue := map[keys.Partition][]int{} // by partition 0 of the queue
	for _, i := range which {
		q := keys.Partition{NS: routes[i].ref.Partition.NS, Queue: routes[i].ref.Partition.Queue}
		byQueue[q] = append(byQueue[q], i)
	}
	for q, idx := range byQueue {
		lay, err := pl.layouts.Refresh(ctx, q.Queue)
		if err != nil {
			return nil, err
		}
		if lay.Version == 1 && lay.Partitions == routes[idx[0]].of {
			continue
		}
		// the layout's partitions, and those the routes' count names
		of := lay.Partitions
		parts := make([]keys.Partition, max(of, routes[idx[0]].of))
		for k := range parts {
			parts[k] = keys.Partition{NS: q.NS, Queue: q.Queue, Index: k}
		}
		former, retired, err := pl.st.PartitionsBeyond(ctx, q.NS, q.Queue, of)
		if err != nil {
			return nil, err
		}
		wasRetired := map[int]bool{}
		for k, p := range former {
			wasRetired[p.Index] = retired[k]
			if p.Index >= len(parts) {
				parts = append(parts, p)
			}
		}
		locals := make([]string, len(idx))
		for k, i := range idx {
			locals[k] = jobs[i].Local
		}
		found, err := pl.st.EnqueuedIn(ctx, parts, locals)
		if err != nil {
			return nil, err
		}
		for _, i := range idx {
			if p, ok := found[jobs[i].Local]; ok {
				routes[i].ref.Partition = p
				added[i] = wasRetired[p.Index]
			}
		}
	}
	return added, nil
}

// addChildren enqueues the children which of a spawn, one call per
// partition, in parallel. It returns the children of the calls refused
// because their partition went away in a shrink (ErrRetired: the planner
// has read the new count), and the first other error.
func addChildren(ctx context.Context, pl *planner, jobs []store.NewJob, routes []route, ids []string, which []int) (refused []int, first error) {
	byPart := map[keys.Partition][]int{}
	for _, i := range which {
		byPart[routes[i].ref.Partition] = append(byPart[routes[i].ref.Partition], i)
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for p, idx := range byPart {
		wg.Go(func() {
			part := make([]store.NewJob, len(idx))
			for k, i := range idx {
				part[k] = jobs[i]
			}
			res, err := pl.enqueue(ctx, p, routes[idx[0]].of, part)
			var lm *sluicetype.LayoutMismatchError
			if errors.As(err, &lm) && lm.Resized {
				mu.Lock()
				refused = append(refused, idx...)
				mu.Unlock()
				return
			}
			for k, r := range res {
				if err != nil {
					break // the call's error: it says more than its jobs'
				}
				i := idx[k]
				switch {
				case r.Status == store.Conflicted:
					err = fmt.Errorf("%w (a child of this step: did the step's items change?)", &sluicetype.ConflictError{ID: ids[i]})
				case r.Err != nil: // the store's refusal of this child (ErrMalformed)
					err = fmt.Errorf("child %d (%s): %w", i, ids[i], r.Err)
				}
			}
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(refused)
	return refused, first
}

// childIDSize is the most bytes the ID of a child with ID local in queue
// takes in Spawn's checkpointed list (msgpack): its partition number
// counted at its widest (store.MaxPartitions), so that a spawn accepted
// fits whatever the queue's partition count, and one refused is refused
// the same way when the step runs again.
func childIDSize(queue, local string) int {
	n := len(queue) + 1 + len(strconv.Itoa(store.MaxPartitions-1)) + 1 + len(local)
	switch {
	case n < 32:
		return 1 + n // fixstr
	case n < 1<<8:
		return 2 + n // str 8
	case n < 1<<16:
		return 3 + n // str 16
	default:
		return 5 + n // str 32
	}
}

// listHeadSize is the size of the msgpack header of a list of n strings.
func listHeadSize(n int) int {
	switch {
	case n < 16:
		return 1 // fixarray
	case n < 1<<16:
		return 3 // array 16
	default:
		return 5 // array 32
	}
}

// childID sets a spawned child's ID without the length limit of WithID.
func childID(id string) EnqueueOption {
	return func(o *enqueueOptions) error {
		o.id = id
		return nil
	}
}

// Join collects the outcomes of children. While some are not finished it
// returns a *sluicetype.WaitingError that the handler must return: the job is suspended,
// without holding a worker or spending an attempt, and runs again (its
// finished steps skipped) when the children are done. R is the children's
// result type. Under FailFast the failed child it answers is recorded with
// the job's checkpoints: every later run (a retry, a run after a crash) is
// told of the same child while it stays failed, though others may have
// failed since, so that it takes the branch its checkpoints recorded. An
// ID that names no child this job spawned (another job's, or a child of
// an earlier job of this ID) is ErrInvalid: it never tells this job that
// it finished, and Join would wait for it for ever.
//
// A parent run again (at JoinRecheck, a retry, admin's RunNow) whose
// Join finds children it has no record of relays, in its worker, the
// outboxes of their partitions (those other than its own) before it
// waits again, once each (entries it cannot relay dead-lettered and
// reported as by the worker's relay, runtime.Options.OnDeadEffect): their
// ends may sit there with no worker serving their queue any more.
// A Join whose children are all recorded, or on the run that spawned
// them, costs no round trip more.
func Join[R any](ctx context.Context, ch *Children, policy JoinPolicy) ([]ChildResult[R], error) {
	st, ok := attempt.From(ctx)
	if !ok {
		return nil, step.ErrNoAttempt
	}
	if ch == nil {
		return nil, fmt.Errorf("%w: Join of nil children (Spawn's result)", ErrInvalid)
	}
	if len(ch.IDs) == 0 {
		return []ChildResult[R]{}, nil // a spawn of nothing: all done
	}
	locals := make([]string, len(ch.IDs))
	parts := make([]keys.Partition, len(ch.IDs))
	for i, id := range ch.IDs {
		ref, ok := keys.ParseRef(st.Store.NS(), id)
		if !ok {
			return nil, fmt.Errorf("%w: child ID %s", ErrInvalid, names.Quote(id))
		}
		if !childOf(st.Ref.Local, st.Created, ref.Local) {
			// only a child this job spawned tells it that it finished
			// (its records, kids_key): any other job, or a child of an
			// earlier job of this ID, would be waited for for ever
			return nil, fmt.Errorf("%w: job %s is no child this job spawned (Join takes the IDs of its own Spawn)", ErrInvalid, names.Quote(id))
		}
		locals[i], parts[i] = ref.Local, ref.Partition
	}
	kids, err := st.Store.Kids(ctx, st.Ref, locals)
	if err != nil {
		return nil, err
	}
	// on the run that spawned them (its fence past 1 too: after a retry,
	// a snooze, a Sleep or a signal), no child has ended unrelayed yet
	if far := unrelayed(st, policy, parts, kids); len(far) > 0 && !spawnedNow(st, ch.Step, false) && st.Host.Relay(ctx, far) {
		// the relay read entries: some may be the ends of these children
		if kids, err = st.Store.Kids(ctx, st.Ref, locals); err != nil {
			return nil, err
		}
	}
	// FailFast's answer is the failed child its first decision named,
	// recorded with the attempt's fence: children that fail later would
	// make the first failed by index another one, and a run after a crash
	// or a failed attempt take another branch than the one its
	// checkpoints recorded
	pin, field := -1, ""
	if policy == FailFast {
		field = joinField(ch)
		if b, ok := st.Checkpoint(field); ok {
			if i, err := strconv.Atoi(string(b)); err == nil && i >= 0 && i < len(kids) &&
				kids[i].Done && kids[i].State != StateCompleted {
				pin = i // still failed (a redrive may have completed it since)
			}
		}
	}
	out := make([]ChildResult[R], len(kids))
	var pending []string
	for i, k := range kids {
		out[i] = ChildResult[R]{Index: spawnIndex(st.Ref.Local, locals[i], i), ID: ch.IDs[i], State: k.State}
		switch {
		case !k.Done:
			pending = append(pending, locals[i])
		case k.State == StateCompleted:
			if len(k.Payload) > 0 {
				if err := mpack.Unmarshal(k.Payload, &out[i].Result); err != nil {
					// the same every attempt: the parent's code asks for
					// another type than the child returns
					return nil, &outcome.Park{Reason: "child_result",
						Err: fmt.Errorf("%w: child %s, as %T: %v", ErrChildResult, ch.IDs[i], out[i].Result, err)}
				}
			}
		default:
			out[i].Error = string(k.Payload)
			if policy == FailFast && (pin < 0 || pin == i) {
				if pin < 0 {
					if err := st.Commit(field, []byte(strconv.Itoa(i)), store.ModeCursor, "", nil); err != nil {
						return nil, err
					}
				}
				return out, &ChildFailedError{Index: out[i].Index, ID: ch.IDs[i], State: k.State, Message: out[i].Error}
			}
		}
	}
	if len(pending) == 0 {
		return out, nil
	}
	// The wait names its children (ack.lua 'wait', deliver): only they
	// count for it, and under FailFast only their failure wakes it. Not
	// the step's count of finished children, even for a join of all of
	// them: a step can have children its checkpoint does not list (an
	// earlier job of the parent's ID, deleted and enqueued again, whose
	// children finish later; a spawn run again with fewer items), and
	// counted, they would end the wait while the join's own still run, the
	// parent waking and joining again on every ack.
	return nil, &sluicetype.WaitingError{Step: ch.Step, Count: len(pending), Children: pending,
		FailFast: policy == FailFast, Recheck: JoinRecheck}
}

// unrelayed returns the partitions, other than the parent's, of the
// children kids has no record of, when the parent runs again (its fence
// past 1: at its Join's recheck, a retry, RunNow) and Join may wait for
// them: each such child tells the parent of its end through its
// partition's outbox, which only workers serving that partition relay,
// and none may any more (a child's worker killed after its ack, before
// its relay; the children's workers scaled to none). On a first run, the
// children were spawned by this very attempt; under FailFast, a failed
// child recorded is Join's answer already. Nil: Join costs no round trip
// more.
func unrelayed(st *attempt.State, policy JoinPolicy, parts []keys.Partition, kids []store.Kid) []keys.Partition {
	if st.Lease.Fence <= 1 || st.Host == nil {
		return nil
	}
	var (
		far  []keys.Partition
		seen map[keys.Partition]bool
	)
	for i, k := range kids {
		switch {
		case k.Done && policy == FailFast && k.State != StateCompleted:
			return nil
		case k.Done || parts[i] == st.Ref.Partition || seen[parts[i]]:
			// recorded, or records its end itself (the parent's partition)
		default:
			if seen == nil {
				seen = map[keys.Partition]bool{}
			}
			seen[parts[i]] = true
			far = append(far, parts[i])
		}
	}
	return far
}

// childOf reports whether local is the ID in its partition of a child
// the job parent, created at created, spawned: keys.ChildLocal's, or
// keys.LegacyChildLocal's (a spawn checkpointed by an older release).
func childOf(parent string, created time.Time, local string) bool {
	return strings.HasPrefix(local, parent+"@"+strconv.FormatInt(created.UnixMilli(), 36)+"~") ||
		strings.HasPrefix(local, parent+"~")
}

// spawnIndex is the position in its Spawn of the item of child local, a
// child of the job whose ID in its partition is parent: the index its ID
// ends with (keys.ChildLocal, keys.LegacyChildLocal). A Children of some
// of a step's children (or merged from several steps) joins them in
// another order than Spawn's, so the child's place among the IDs joined
// is no item's position; that place, at, is its index only for an ID
// that names no child of the job.
func spawnIndex(parent, local string, at int) int {
	if !strings.HasPrefix(local, parent+"@") && !strings.HasPrefix(local, parent+"~") {
		return at
	}
	k := strings.LastIndexByte(local, '~')
	n, err := strconv.Atoi(local[k+1:])
	if k < len(parent) || err != nil || n < 0 || strconv.Itoa(n) != local[k+1:] {
		return at
	}
	return n
}

// joinField is the checkpoint field of a FailFast Join's decision about
// ch: '!j:', its step and a hash of the IDs it joins (a Children may join
// some of a step's children). A '!' field is no step (checkpoint.IsStep):
// it takes no position and is no evidence for step.Version.
func joinField(ch *Children) string {
	h := fnv.New64a()
	for _, id := range ch.IDs {
		_, _ = h.Write([]byte(id))
		_, _ = h.Write([]byte{0})
	}
	return "!j:" + ch.Step + ":" + strconv.FormatUint(h.Sum64(), 36)
}
