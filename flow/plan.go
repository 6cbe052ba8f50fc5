package flow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/mpack"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/store"
)

// planner turns Items into jobs ready for the store: validated, encoded,
// with an ID and a partition. Clients and spawning steps share it.
type planner struct {
	st          *store.Store
	known       func(kind string) bool // nil: any valid kind
	maxPayload  int
	maxAttempts int
	layouts     *store.Layouts // each queue's partition count
	rr          atomic.Uint64
}

// batch plans items as one call: it drafts every item (item i with
// opts(i) after its own options; each draft is then shown to check, which
// may refuse it), and only once all are good gives each its partition,
// which may register a queue: bad input writes nothing. parent is set for
// spawned children. On an error, bad is the index of the item it names.
// EnqueueMany and Spawn both plan this way.
func (pl *planner) batch(ctx context.Context, items []Item, parent *store.ParentRef, sp *spread,
	opts func(i int) EnqueueOption, check func(i int, d drafted) error) (jobs []store.NewJob, routes []route, bad int, err error) {
	// Each job is held once, in jobs: a job is a few hundred bytes, and a
	// producer's allocations cost it garbage collection.
	jobs = make([]store.NewJob, len(items))
	routes = make([]route, len(items))
	for i, it := range items {
		d, err := pl.draft(it, parent, opts(i))
		if err == nil && check != nil {
			err = check(i, d)
		}
		if err != nil {
			return nil, nil, i, err
		}
		jobs[i], routes[i] = d.job, route{queue: d.queue, key: d.key, part: d.part}
	}
	// only now: bad input registers no queue. The jobs SentAs places go
	// first: their partition may not exist (ErrInvalid), and placing them
	// registers nothing, where placing another job may register its queue.
	for _, sentAs := range []bool{true, false} {
		for i, r := range routes {
			if (r.part > 0) != sentAs {
				continue
			}
			if r.ref, r.of, err = pl.locate(ctx, r.queue, r.key, r.part, jobs[i].Local, sp); err != nil {
				return nil, nil, i, err
			}
			routes[i] = r
		}
	}
	return jobs, routes, 0, nil
}

// placed is a job given its partition, with the partition count of its
// queue that placed it.
type placed struct {
	ref keys.Ref
	of  int
	job store.NewJob
}

// enqueue adds jobs placed on partition p by a count of of partitions,
// with one result per job even on an error (store.Enqueue: those it
// struck are Failed). A partition that a shrink of its queue took away
// since this process read the layout adds nothing: the layout is read
// again, and the error is a *LayoutMismatchError
// (store.Layouts.Retired), so the next call places by the new count. A
// job the script refused as bad input, which only the store could tell
// (a delay, counted from the store's clock, that makes it due at or
// after its deadline), is ErrInvalid, as draft's refusals are.
func (pl *planner) enqueue(ctx context.Context, p keys.Partition, of int, jobs []store.NewJob) ([]store.EnqueueResult, error) {
	res, err := pl.st.Enqueue(ctx, p, jobs)
	for i := range res {
		if res[i].Err != nil && errors.Is(res[i].Err, store.ErrDeadlineNotAfterDue) {
			res[i].Err = fmt.Errorf("%w: %w", ErrInvalid, res[i].Err)
		}
	}
	if errors.Is(err, store.ErrRetired) {
		retired := err
		err = pl.layouts.Retired(ctx, p, of)
		for i := range res {
			if res[i].Err == retired {
				res[i].Err = err
			}
		}
	}
	return res, err
}

// route is where a job of an EnqueueMany call goes: its queue and routing
// key (drafted), then the ref locate gives it and the partition count that
// placed it.
type route struct {
	queue, key string
	part       int // 1 + the partition SentAs names; 0: none
	ref        keys.Ref
	of         int
}

// drafted is a validated, encoded job not yet given its partition.
type drafted struct {
	queue string
	key   string // routeKey
	part  int    // 1 + the partition SentAs names; 0: none
	job   store.NewJob
}

// place gives a drafted job its partition. The first job of a queue in
// the process reads (or registers) the queue's layout: a caller that
// must write nothing for bad input drafts every job first (batch).
func (pl *planner) place(ctx context.Context, d drafted, sp *spread) (placed, error) {
	ref, of, err := pl.locate(ctx, d.queue, d.key, d.part, d.job.Local, sp)
	if err != nil {
		return placed{}, err
	}
	return placed{ref, of, d.job}, nil
}

// locate is place without the job: the ref of job local in queue, routed
// by key (or in partition part-1, when part is set: SentAs), and the
// partition count that placed it.
func (pl *planner) locate(ctx context.Context, queue, key string, part int, local string, sp *spread) (keys.Ref, int, error) {
	if part > 0 {
		return pl.sentAs(ctx, queue, part, local)
	}
	lay, err := pl.layouts.Use(ctx, queue)
	if err != nil {
		return keys.Ref{}, 0, err
	}
	return pl.in(lay, key, local, sp), lay.Partitions, nil
}

// in is the ref of job local in lay's queue, routed by key over lay's
// partitions: locate once the layout is known.
func (pl *planner) in(lay store.Layout, key, local string, sp *spread) keys.Ref {
	idx := pl.partition(lay.Queue, lay.Partitions, key, sp)
	return keys.Ref{Partition: pl.st.Partition(lay.Queue, idx), Local: local}
}

// sentAs is locate for a job SentAs places: in partition part-1 of queue,
// which must have it. The queue was used before (it gave the ID): its
// layout is read, never registered, when the process does not know it.
// A partition beyond the count the process knows is checked against the
// registry before it is refused: the queue may have grown since (the ID
// came from a process that knew it so).
func (pl *planner) sentAs(ctx context.Context, queue string, part int, local string) (keys.Ref, int, error) {
	lay, ok := pl.layouts.Cached(queue)
	if !ok || part-1 >= lay.Partitions {
		var err error
		if lay, err = pl.layouts.Lookup(ctx, queue); err != nil {
			return keys.Ref{}, 0, err
		}
	}
	if idx := part - 1; idx < lay.Partitions {
		return keys.Ref{Partition: pl.st.Partition(queue, idx), Local: local}, lay.Partitions, nil
	}
	return keys.Ref{}, 0, fmt.Errorf("%w: SentAs names partition %d of queue %q, which has %d", ErrInvalid, part-1, queue, lay.Partitions)
}

// isNil reports whether a is nil, or a nil pointer.
func isNil(a Args) bool {
	if a == nil {
		return true
	}
	v := reflect.ValueOf(a)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// kindOfArgs is a's kind, "" for nil arguments (isNil): a nil pointer's
// Kind may panic.
func kindOfArgs(a Args) string {
	if isNil(a) {
		return ""
	}
	return a.Kind()
}

// spareOptions holds the options of drafts done: they are a few hundred
// bytes, which every job enqueued would otherwise allocate (the options
// it applies take their address).
var spareOptions = sync.Pool{New: func() any { return new(enqueueOptions) }}

// draft validates and encodes one item (see job).
func (pl *planner) draft(it Item, parent *store.ParentRef, opts ...EnqueueOption) (drafted, error) {
	if isNil(it.Args) {
		return drafted{}, fmt.Errorf("%w: nil job arguments (%T)", ErrInvalid, it.Args)
	}
	kind := it.Args.Kind()
	if !ValidKind(kind) {
		return drafted{}, fmt.Errorf("%w: kind %s", ErrInvalid, names.Quote(kind))
	}
	if pl.known != nil && !pl.known(kind) {
		return drafted{}, fmt.Errorf("%w: %q", ErrUnknownKind, kind)
	}
	o := spareOptions.Get().(*enqueueOptions)
	defer func() {
		*o = enqueueOptions{} // holds nothing of this job once back
		spareOptions.Put(o)
	}()
	*o = enqueueOptions{queue: "default", maxAttempts: pl.maxAttempts}
	if err := applyDefaults(it.Args, o); err != nil {
		return drafted{}, err
	}
	for _, set := range [2][]EnqueueOption{it.Opts, opts} { // not append: it.Opts is the caller's
		for _, opt := range set {
			if opt == nil { // none to apply
				continue
			}
			if err := opt(o); err != nil {
				return drafted{}, err
			}
		}
	}
	// compared as the store keeps them (a deadline within the run time's
	// millisecond is kept at or before it)
	if !o.deadline.IsZero() && !o.runAt.IsZero() && !store.DeadlineAfterRun(o.deadline, o.runAt) {
		// it could never run: archived deadline_exceeded when it came due
		return drafted{}, fmt.Errorf("%w: deadline %v is not after the run time %v", ErrInvalid,
			o.deadline.UTC().Format(time.RFC3339Nano), o.runAt.UTC().Format(time.RFC3339Nano))
	}
	// canonical: equal arguments are equal bytes, which an idempotent ID's
	// repeat, a unique key of the arguments, placement and a quarantine
	// hold's fingerprint compare or hash (maps encode in random order)
	payload, err := mpack.Canonical(it.Args)
	if err != nil {
		return drafted{}, fmt.Errorf("%w: encoding %s arguments: %v", ErrInvalid, kind, err)
	}
	if len(payload) > pl.maxPayload {
		return drafted{}, fmt.Errorf("%w: %s arguments are %d bytes, the limit is %d", ErrPayloadTooLarge, kind, len(payload), pl.maxPayload)
	}
	var headers []byte
	if len(o.headers) > 0 {
		if headers, err = mpack.Marshal(o.headers); err != nil {
			return drafted{}, fmt.Errorf("%w: headers: %v", ErrInvalid, err)
		}
		if len(headers) > MaxHeaders {
			return drafted{}, fmt.Errorf("%w: %s headers are %d bytes, the limit is %d", ErrPayloadTooLarge, kind, len(headers), MaxHeaders)
		}
	}
	if o.uniqueArgs {
		h := fnv.New64a()
		_, _ = h.Write(payload)
		o.unique.Key = kind + ":" + strconv.FormatUint(h.Sum64(), 36)
	}
	hold := ""
	if o.hold {
		sum := sha256.Sum256(append([]byte(kind+"\x00"), payload...))
		hold = hex.EncodeToString(sum[:16])
	}
	part := 0
	if o.sentAs != "" { // the format was checked by SentAs
		q, rest, _ := strings.Cut(o.sentAs, ":")
		n, local, _ := strings.Cut(rest, ":")
		idx, _ := strconv.Atoi(n)
		switch {
		case o.queueSet && o.queue != q:
			return drafted{}, fmt.Errorf("%w: SentAs(%q) names queue %q, WithQueue %s", ErrInvalid, o.sentAs, q, names.Quote(o.queue))
		case o.id != "" && o.id != local:
			return drafted{}, fmt.Errorf("%w: SentAs(%q) and WithID(%q) name two IDs", ErrInvalid, o.sentAs, o.id)
		}
		o.queue, o.id, part = q, local, idx+1
	}
	local, generated := o.id, false
	if local == "" {
		local, generated = pl.st.NewLocal(), true
	}
	return drafted{queue: o.queue, key: routeKey(o, hold), part: part, job: store.NewJob{
		Local: local, Kind: kind, Payload: payload, Headers: headers, RunAt: o.runAt,
		Delay: o.delay, MaxAttempts: o.maxAttempts, Timeout: o.timeout, Deadline: o.deadline,
		Priority: o.priority, Parent: parent, Generated: generated, Limits: o.limits, Unique: o.unique, Sticky: o.sticky,
		Hold: hold,
		// a spawned child's enqueue is remembered: a Spawn step run again
		// (its checkpoint lost to a crash) must not add a child that has
		// finished and been deleted since
		Relayed: parent != nil, Tick: o.tick,
	}}, nil
}

// routeKey is the key whose hash places a job on its queue's partition,
// the first of: its partition key (WithPartitionKey), its unique key
// (WithUnique, WithUniqueArgs), its quarantine-hold fingerprint hold
// (WithQuarantineHold: held copies must meet the quarantined job), its
// caller-chosen ID (WithID, or a spawned child's or a schedule tick's ID);
// "" for none. A unique key is held per
// partition (uq:<key> in the partition's slot), so jobs sharing one must
// meet on one partition whatever their IDs: it goes before the ID. An ID
// is idempotent per partition too, and keeps meeting its earlier enqueue
// as long as it comes with the same partition key and unique key (or
// always none), which then choose the same partition again. A job found
// later by its returned ID needs no routing: the ID names its partition
// (queue:partition:local, keys.Ref).
func routeKey(o *enqueueOptions, hold string) string {
	switch {
	case o.partKey != "":
		return o.partKey
	case o.unique.Key != "":
		return o.unique.Key
	case hold != "":
		return hold
	default:
		return o.id
	}
}

// partition picks the partition of a job of queue, which has n: by a stable hash of key (see
// routeKey: the same key always lands on the same partition while the
// queue's partition count stays the same), else
// round-robin: per call, and within one EnqueueMany call (sp) in
// contiguous blocks of at least minSpreadBlock jobs, so that a batch costs
// a round trip per block rather than one per partition, while a large one
// still spreads over every partition.
func (pl *planner) partition(queue string, n int, key string, sp *spread) int {
	if n <= 1 {
		return 0
	}
	if key != "" {
		h := fnv.New32a()
		_, _ = h.Write([]byte(key))
		return int(h.Sum32() % uint32(n))
	}
	if sp == nil {
		return int(pl.rr.Add(1) % uint64(n))
	}
	i := sp.placed[queue] // this queue's unkeyed jobs placed so far in the call
	sp.placed[queue] = i + 1
	block := max((sp.size+n-1)/n, minSpreadBlock)
	return int((sp.start + uint64(i/block)) % uint64(n))
}

// minSpreadBlock is the fewest jobs of one EnqueueMany call that go to a
// partition before the next one takes over.
const minSpreadBlock = 128

// spread places the unkeyed jobs of one EnqueueMany call of size jobs,
// whose round-robin starts at partition start.
type spread struct {
	start  uint64
	size   int
	placed map[string]int // per queue, its unkeyed jobs placed so far
}

func newSpread(start uint64, size int) *spread {
	return &spread{start: start, size: size, placed: map[string]int{}}
}
