package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// Errors of the queue registry; match them with errors.Is.
var (
	// ErrQueueNotFound: the call names a queue that is not registered in
	// the namespace. The error names the queue.
	ErrQueueNotFound = sluicetype.ErrQueueNotFound
	// ErrResizeRefused: ResizeQueue cannot resize the queue as it is; the
	// error says why, and nothing was changed.
	ErrResizeRefused = sluicetype.ErrResizeRefused
	// ErrLayoutMismatch: the flow.Client's ClientOptions.Partitions
	// disagrees with the registry about the queue (a
	// *sluicetype.LayoutMismatchError).
	ErrLayoutMismatch = sluicetype.ErrLayoutMismatch
)

// MaxQueuesListed bounds Queues, and MaxNamespacesListed Namespaces;
// MaxPartitions is the most partitions a queue may have.
const (
	MaxPartitions       = store.MaxPartitions
	MaxQueuesListed     = store.MaxQueuesListed
	MaxNamespacesListed = store.MaxNamespacesListed
)

// QueueInfo is a registered queue and its layout.
type QueueInfo struct {
	Name       string
	Partitions int
	// Version is 1 when the queue was registered, one more after each
	// resize.
	Version    int64
	Registered time.Time // when a client or worker first used it
	Changed    time.Time // when registered or last resized
	Paused     int       // partitions paused (PauseQueue pauses all)
}

// Queues lists the namespace's registered queues (at most
// MaxQueuesListed), sorted by name, with their layouts and paused
// partitions, in two round trips. A queue is registered by the first
// client or worker (of this version or later) that uses it. A queue whose
// registry entry is not a layout is left out, and named in the error
// returned with the others (Unreadable reads it; ErrMalformed), as is one
// whose partitions this release cannot read (ErrNewerDataModel, or a
// paused flag of another type).
func (c *Client) Queues(ctx context.Context) ([]QueueInfo, error) {
	return c.queues(ctx, true)
}

// Layouts is Queues without the paused partitions (Paused is 0): one read
// of the registry, whatever the number of partitions. Dashboards that read
// the paused flags anyway (QueuesLive) list the queues with it.
func (c *Client) Layouts(ctx context.Context) ([]QueueInfo, error) {
	return c.queues(ctx, false)
}

// QueueCount is the number of queues registered in the namespace, in one
// round trip whatever their number: more than MaxQueuesListed means
// Queues, Layouts and QueuesLive (with no queues named) left some out,
// which QueueLayout and Queue still read by name. A registry entry that
// is not a layout counts too (Queues names it in its error).
func (c *Client) QueueCount(ctx context.Context) (int, error) {
	n, err := c.b.Store.CountLayouts(ctx)
	return int(n), err
}

// QueueLayout reads one queue's layout, however many queues the namespace
// has (Queues and Layouts list at most MaxQueuesListed), in one round
// trip; Paused is 0. A queue that is not registered: ErrQueueNotFound,
// naming it. A registry entry that is not a layout: ErrMalformed, the
// queue named as Unreadable reads it.
func (c *Client) QueueLayout(ctx context.Context, queue string) (QueueInfo, error) {
	l, err := c.layout(ctx, queue)
	if err != nil {
		return QueueInfo{}, err
	}
	return queueInfo(l, nil), nil
}

// Queue reads one queue as Queues lists it, paused partitions included,
// however many queues the namespace has: a second round trip after
// QueueLayout's, with its errors. A queue whose partitions this release
// cannot read (a newer data model, a paused flag of another type) is
// named as Unreadable reads it.
func (c *Client) Queue(ctx context.Context, queue string) (QueueInfo, error) {
	l, err := c.layout(ctx, queue)
	if err != nil {
		return QueueInfo{}, err
	}
	paused, err := c.pausedFlags(ctx, l)
	if err != nil {
		return QueueInfo{}, err
	}
	return queueInfo(l, paused), nil
}

// layout reads queue's registry entry; one that is not a layout is named
// (*store.EntryError).
func (c *Client) layout(ctx context.Context, queue string) (store.Layout, error) {
	l, err := c.b.Store.ReadLayout(ctx, queue)
	if errors.Is(err, store.ErrMalformed) {
		return l, &store.EntryError{Name: queue, Err: err}
	}
	return l, err
}

// pausedFlags reads the paused flags of layout l's partitions; a queue
// whose partitions this release cannot read is named (*store.EntryError).
func (c *Client) pausedFlags(ctx context.Context, l store.Layout) ([]bool, error) {
	paused, err := c.b.Store.PausedFlags(ctx, l.Parts(c.b.Namespace))
	if errors.Is(err, store.ErrNewerDataModel) || errors.Is(err, store.ErrMalformed) {
		return nil, &store.EntryError{Name: l.Queue, Err: fmt.Errorf("queue %q: %w", l.Queue, err)}
	}
	return paused, err
}

func (c *Client) queues(ctx context.Context, withPaused bool) ([]QueueInfo, error) {
	lays, unread := c.b.Store.ListLayouts(ctx)
	if _, only := store.EntryErrors(unread); !only {
		return nil, unread
	}
	if !withPaused {
		out := make([]QueueInfo, len(lays))
		for i, l := range lays {
			out[i] = queueInfo(l, nil)
		}
		return out, unread
	}
	var parts []keys.Partition
	for _, l := range lays {
		parts = append(parts, l.Parts(c.b.Namespace)...)
	}
	paused, err := c.b.Store.PausedFlags(ctx, parts)
	if errors.Is(err, store.ErrNewerDataModel) || errors.Is(err, store.ErrMalformed) {
		// a queue this release cannot read: each queue is read alone (a
		// round trip each, in this rare case only), and the ones that
		// fail are left out and named, as a corrupt registry entry is
		return c.queuesOneByOne(ctx, lays, unread)
	}
	if err != nil {
		return nil, err
	}
	out := make([]QueueInfo, len(lays))
	at := 0
	for i, l := range lays {
		out[i] = queueInfo(l, paused[at:at+l.Partitions])
		at += l.Partitions
	}
	return out, unread
}

// queuesOneByOne is queues' listing when the paused flags of all its
// queues could not be read at once: each queue's are read alone, and a
// queue whose partitions this release cannot read (a newer data model, a
// key of another type) is left out and named in the error
// (*store.EntryError), joined to unread.
func (c *Client) queuesOneByOne(ctx context.Context, lays []store.Layout, unread error) ([]QueueInfo, error) {
	out := make([]QueueInfo, 0, len(lays))
	errs := []error{unread}
	for _, l := range lays {
		paused, err := c.pausedFlags(ctx, l)
		var bad *store.EntryError
		switch {
		case errors.As(err, &bad):
			errs = append(errs, bad)
		case err != nil:
			return nil, err
		default:
			out = append(out, queueInfo(l, paused))
		}
	}
	return out, errors.Join(errs...)
}

// queueInfo is the listing's entry of the queue of layout l, whose
// partitions' paused flags are paused.
func queueInfo(l store.Layout, paused []bool) QueueInfo {
	q := QueueInfo{Name: l.Queue, Partitions: l.Partitions, Version: l.Version, Registered: l.Registered, Changed: l.Changed}
	for _, p := range paused {
		if p {
			q.Paused++
		}
	}
	return q
}

// Namespaces lists the namespaces with a registered queue on rdb (at most
// MaxNamespacesListed), sorted. It reads one key (a set that every
// namespace joins when its first queue is registered), never scans the
// keyspace.
func Namespaces(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", flow.ErrInvalid)
	}
	return store.Namespaces(ctx, rdb)
}

// ResizeQueue changes the number of partitions of queue to partitions
// (1..1024). It is refused with ErrResizeRefused, changing nothing,
// unless:
//
//   - every partition of the queue is paused (PauseQueue), so that no
//     worker claims from it while the fleet moves to the new layout;
//   - when shrinking, the partitions that go away hold no job in any
//     state and no outboxed or dead-lettered effect (let the work finish
//     before pausing; delete, or wait out the retention of, finished
//     jobs): by their per-state counters and by their own indexes, so
//     that a counters key deleted or damaged by hand does not hide jobs
//     still listed (docs/operations.md, "Resizing a queue").
//
// A resize holds the queue's resize lock (a key beside the registry, for
// at most a minute) from start to end: another resize of the queue
// meanwhile is refused with ErrResizeRefused at once, and a ResumeQueue
// that finds partitions this one retired takes the lock and cancels it
// (refused, nothing recorded; the partitions come back). Pausing leaves
// retired partitions retired.
//
// Growing pauses the new partitions first, so the queue stays paused as a
// whole. The registry's layout is then changed by compare and set, while
// the lock is still held. Resizing to the current count does nothing but
// bring back, paused, partitions of that layout that a shrink retired and
// did not record (its caller saw an error): a re-run after a lost reply
// is safe. A resize to another count brings those its layout keeps back
// too, once it is recorded.
//
// Processes that have the queue's old layout keep it until they restart:
// a worker notices on its next maintenance pass, logs an error and stops
// claiming from the queue; a client keeps placing new jobs by the old
// count. A shrink retires the partitions it takes away first, so that a
// client's enqueue to one of them adds nothing and fails with a
// *LayoutMismatchError (Resized: the client has read the new count, and
// the call may be made again) rather than leaving jobs where no worker
// looks. Restart (or start anew) every producer and worker of the queue,
// then ResumeQueue. docs/operations.md gives the procedure.
//
// A job keeps its partition (its ID names it): growing moves no job, and
// jobs placed by a partition key, unique key or ID after the resize may
// land on another partition than earlier ones with the same key, so
// uniqueness and idempotent IDs do not hold across a resize for jobs
// enqueued before it and still held.
func (c *Client) ResizeQueue(ctx context.Context, queue string, partitions int) error {
	if !runtime.ValidQueue(queue) {
		return fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	if partitions < 1 || partitions > MaxPartitions {
		return fmt.Errorf("%w: %d partitions not in 1..%d", flow.ErrInvalid, partitions, MaxPartitions)
	}
	st := c.b.Store
	token := keys.NewLocal()
	if ok, err := st.LockResize(ctx, queue, token, false); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: queue %q: another resize of it is under way (or a resume bringing back what one retired): try again when it is done",
			ErrResizeRefused, queue)
	}
	defer func() { _ = st.UnlockResize(context.WithoutCancel(ctx), queue, token) }()
	lay, err := st.ReadLayout(ctx, queue)
	if err != nil {
		return err
	}
	if lay.Partitions == partitions {
		c.b.Layouts.Put(lay)
		// a shrink whose outcome was not known and was not recorded left
		// partitions of this layout retired: they come back, paused
		return c.takeBackRetired(ctx, lay)
	}
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("%w: queue %q (%d partitions) to %d: "+format,
			append([]any{ErrResizeRefused, queue, lay.Partitions, partitions}, a...)...)
	}
	parts := lay.Parts(c.b.Namespace)
	paused, err := st.PausedFlags(ctx, parts)
	if err != nil {
		return err
	}
	var running []string
	for i, p := range paused {
		if !p {
			running = append(running, fmt.Sprint(i))
		}
	}
	if len(running) > 0 {
		return refuse("partitions %s are not paused: pause the queue first", strings.Join(running, ", "))
	}
	var gone []keys.Partition
	if partitions < lay.Partitions {
		// retired before the check: an enqueue either lands before it,
		// and the check sees its job, or is refused
		gone = parts[partitions:]
		for _, p := range gone {
			if err := st.Retire(ctx, p); err != nil {
				return errors.Join(err, c.undoRetire(ctx, gone))
			}
		}
		if err := c.checkEmpty(ctx, gone, refuse); err != nil {
			return errors.Join(err, c.undoRetire(ctx, gone))
		}
	}
	var grown []keys.Partition
	for i := lay.Partitions; i < partitions; i++ {
		// paused, whatever an earlier shrink left there
		p := st.Partition(queue, i)
		grown = append(grown, p)
		if err := st.TakeBack(ctx, p); err != nil {
			return errors.Join(err, c.retireGrown(ctx, queue, token, grown))
		}
	}
	now, done, err := st.ResizeLayout(ctx, queue, lay.Version, partitions, token)
	switch {
	case errors.Is(err, store.ErrResizeUnlocked):
		// a resume took the lock, and brings back what this retired
		return errors.Join(refuse("cancelled: the lock was taken (by a ResumeQueue of the queue, or after a minute) before the new layout was recorded; nothing was recorded"),
			c.retireGrown(ctx, queue, token, grown))
	case err != nil:
		// recorded or not: the partitions a shrink retired stay retired
		// (run the resize again, or ResumeQueue); those a growth took back
		// are retired again unless it was recorded
		return errors.Join(err, c.retireGrown(ctx, queue, token, grown))
	case !done:
		// another resize was recorded without the lock (an older tool):
		// what this retired comes back only where that layout has it
		var keep []keys.Partition
		for _, p := range gone {
			if p.Index < now.Partitions {
				keep = append(keep, p)
			}
		}
		return errors.Join(refuse("the queue was resized meanwhile (now %d partitions, version %d): look again",
			now.Partitions, now.Version), c.undoRetire(ctx, keep), c.retireGrown(ctx, queue, token, grown))
	}
	c.b.Layouts.Put(now)
	// Partitions of the new layout that an earlier shrink retired and did
	// not record (its lock lapsed, its caller saw an error) come back,
	// paused, as a resize to the current count brings them back: left
	// retired, they would refuse every enqueue placed there, as if a
	// resize were under way, until the queue was resumed. Under the lock
	// (taken again: it may have lapsed), so that a shrink that took it
	// since keeps what it retired.
	if ok, err := st.LockResize(ctx, queue, token, false); err != nil {
		return fmt.Errorf("queue %q was resized to %d partitions, but whether an earlier shrink left some of them retired is not known (resize it to %d again): %w",
			queue, partitions, partitions, err)
	} else if ok {
		if err := c.takeBackRetired(ctx, now); err != nil {
			return fmt.Errorf("queue %q was resized to %d partitions, but some that an earlier shrink retired may still be (resize it to %d again): %w",
				queue, partitions, partitions, err)
		}
	}
	return nil
}

// undoTimeout bounds what a resize that failed does to undo its changes.
const undoTimeout = 30 * time.Second

// undoContext is the context of a failed resize's undoing (retireGrown,
// undoRetire): ctx's values without its end, which is often why the resize
// failed (its caller cancelled it, or its deadline passed), for at most
// undoTimeout. Left undone, a growth cancelled by its caller left the
// partitions it took back open beyond the layout (a producer on the old
// count placed jobs there that no worker claims: found by
// TestChaosResize), and a refused shrink left partitions of the layout
// retired.
func undoContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
}

// retireGrown retires again the partitions grown, which a growth took
// back (TakeBack) and may not have recorded: beyond the layout, each
// would take the jobs of a producer still on an older count, where no
// worker claims them. The lock is taken again first (it may have lapsed,
// or a resume taken it), and a partition the layout standing now names
// is kept. An error names the partitions left open.
func (c *Client) retireGrown(ctx context.Context, queue, token string, grown []keys.Partition) error {
	if len(grown) == 0 {
		return nil
	}
	ctx, cancel := undoContext(ctx)
	defer cancel()
	st := c.b.Store
	open := func(err error) error {
		return fmt.Errorf("partitions %d to %d of queue %q, beyond its layout, may take jobs that no worker claims (run the resize again): %w",
			grown[0].Index, grown[len(grown)-1].Index, queue, err)
	}
	ok, err := st.LockResize(ctx, queue, token, false)
	if err != nil {
		return open(err)
	}
	if !ok {
		return open(errors.New("another resize holds the queue's lock"))
	}
	now, err := st.ReadLayout(ctx, queue)
	if err != nil {
		return open(err)
	}
	var beyond []keys.Partition
	for _, p := range grown {
		if p.Index >= now.Partitions {
			beyond = append(beyond, p)
		}
	}
	var errs []error
	for _, p := range beyond {
		errs = append(errs, st.Retire(ctx, p))
	}
	if err := errors.Join(errs...); err != nil {
		return open(err)
	}
	// retired before the check, as a shrink does: a job an enqueue left
	// there meanwhile (by a producer on the count the growth took back)
	// is seen, and its partition stays open rather than hold a job no
	// one would ever claim or probe for
	for _, p := range beyond {
		if err := c.checkEmpty(ctx, []keys.Partition{p}, func(format string, a ...any) error {
			return fmt.Errorf(format, a...)
		}); err != nil {
			errs = append(errs, open(err), c.takeBack(ctx, []keys.Partition{p}))
		}
	}
	return errors.Join(errs...)
}

// takeBack brings back, paused as they were, those of parts that a
// shrink retired and that are still retired (store.BringBack): one a
// resume or another resize changed since is left as it is, however this
// call's lock fared meanwhile.
func (c *Client) takeBack(ctx context.Context, parts []keys.Partition) error {
	var errs []error
	for _, p := range parts {
		if _, err := c.b.Store.BringBack(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// undoRetire is takeBack as the undoing of a shrink that failed, past
// ctx's end (undoContext).
func (c *Client) undoRetire(ctx context.Context, parts []keys.Partition) error {
	ctx, cancel := undoContext(ctx)
	defer cancel()
	return c.takeBack(ctx, parts)
}

// RetiredPartitions lists the partitions of queue's current layout that a
// shrink retired and did not record (its caller saw an error, or a resume
// cancelled it): they take no job, and ResizeQueue to the current count
// brings them back, paused. Empty when there are none.
func (c *Client) RetiredPartitions(ctx context.Context, queue string) ([]int, error) {
	if !runtime.ValidQueue(queue) {
		return nil, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	lay, err := c.b.Store.ReadLayout(ctx, queue)
	if err != nil {
		return nil, err
	}
	retired, err := c.b.Store.RetiredFlags(ctx, lay.Parts(c.b.Namespace))
	if err != nil {
		return nil, err
	}
	var out []int
	for i, r := range retired {
		if r {
			out = append(out, i)
		}
	}
	return out, nil
}

// takeBackRetired brings back, paused, the partitions of layout lay that a
// shrink retired and did not record (its outcome unknown to its caller,
// or cancelled). Called with the queue's resize lock held, so no shrink
// can still record a layout without them.
func (c *Client) takeBackRetired(ctx context.Context, lay store.Layout) error {
	parts := lay.Parts(c.b.Namespace)
	retired, err := c.b.Store.RetiredFlags(ctx, parts)
	if err != nil {
		return err
	}
	var back []keys.Partition
	for i, r := range retired {
		if r {
			back = append(back, parts[i])
		}
	}
	return c.takeBack(ctx, back)
}

// checkEmpty refuses (through refuse) partitions that go away in a shrink
// while they hold any job or effect: by their per-state counters, their
// outboxes, or their own indexes (ready lists, scheduled and running
// jobs, finished jobs, concurrency and rate waits, pinned jobs with a
// fallback), read in one round trip (a few more for lazy indexes:
// store.PartitionContents). The indexes are read as well as
// the counters, which a counters key deleted or damaged by hand can make
// say nothing of jobs still listed: a partition taken away so would
// keep them where no worker reads.
func (c *Client) checkEmpty(ctx context.Context, gone []keys.Partition, refuse func(string, ...any) error) error {
	contents, err := c.b.Store.PartitionContents(ctx, gone)
	if err != nil {
		return err
	}
	for i, p := range gone {
		in := contents[i]
		var held []string
		for s, n := range in.Counts {
			if n != 0 {
				held = append(held, fmt.Sprintf("%s %d", s, n))
			}
		}
		sort.Strings(held)
		if in.Outbox > 0 {
			held = append(held, fmt.Sprintf("outboxed effects %d", in.Outbox))
		}
		if in.Dead > 0 {
			held = append(held, fmt.Sprintf("dead effects %d", in.Dead))
		}
		if len(held) == 0 && len(in.Indexes) > 0 {
			// the counters say nothing of jobs its indexes list
			var listed []string
			for k, n := range in.Indexes {
				listed = append(listed, fmt.Sprintf("%s %d", k, n))
			}
			sort.Strings(listed)
			return refuse("partition %d, which would go away, holds jobs that its per-state counters (%s) do not count: its indexes hold %s",
				p.Index, p.Stats(), strings.Join(listed, ", "))
		}
		if len(held) > 0 {
			return refuse("partition %d, which would go away, holds %s", p.Index, strings.Join(held, ", "))
		}
	}
	return nil
}
