package flow

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// EnqueueOption sets one property of an enqueued job.
type EnqueueOption func(*enqueueOptions) error

type enqueueOptions struct {
	queue       string
	id          string
	sentAs      string // SentAs: a job ID, queue:partition:local
	queueSet    bool   // WithQueue named the queue (a kind's defaults too)
	partKey     string // WithPartitionKey
	delay       time.Duration
	runAt       time.Time
	maxAttempts int
	timeout     time.Duration
	deadline    time.Time
	priority    int
	headers     map[string]string
	limits      store.Limits
	unique      store.Unique
	uniqueArgs  bool // derive the unique key from kind and arguments
	sticky      store.Sticky
	hold        bool // WithQuarantineHold
	tick        bool // a schedule's tick (asTick)
}

// WithPreferredWorker routes the job to the worker whose WorkerID is
// worker, with fallback mode "wait" (only that worker, ever), "after" (any
// worker once it has waited d unclaimed) or "fail" (archived with reason
// sticky_unavailable after d). d is 0 for "wait" and positive for the
// others. Package sticky wraps it.
func WithPreferredWorker(worker, mode string, d time.Duration) EnqueueOption {
	return func(o *enqueueOptions) error {
		codes := map[string]string{"wait": "w", "after": "a", "fail": "f"}
		code, ok := codes[mode]
		if !runtime.ValidWorkerID(worker) || !ok || d < 0 || (code != "w") != (d > 0) {
			return fmt.Errorf("%w: preferred worker %s, fallback %s after %s", ErrInvalid, names.Quote(worker), names.Quote(mode), d)
		}
		o.sticky = store.Sticky{Worker: worker, Mode: code, After: d}
		return nil
	}
}

// MaxIDLength bounds a caller-supplied job ID.
const MaxIDLength = 128

// MaxPriority is the highest priority; 0 (the default) is the lowest.
const MaxPriority = 9

// WithQueue puts the job on queue (default "default").
func WithQueue(queue string) EnqueueOption {
	return func(o *enqueueOptions) error {
		if !runtime.ValidQueue(queue) {
			return fmt.Errorf("%w: queue name %s", ErrInvalid, names.Quote(queue))
		}
		o.queue, o.queueSet = queue, true
		return nil
	}
}

// WithID gives the job a caller-chosen ID, which makes enqueueing it
// idempotent: the same ID with the same kind and arguments is a no-op
// success (Enqueued.Duplicate), with different ones an ErrConflict. The ID
// is remembered until the job is deleted after its retention; a job
// enqueued with it after that is a new job, and idempotency.Key answers
// it the keys the deleted job had: an ID that may come back (an order
// number charged again) needs a part of its own per job for such calls.
//
// On a queue of several partitions the ID places the job only when neither
// WithPartitionKey nor WithUnique (WithUniqueArgs) is given: the partition
// key, else the unique key, decides the partition ahead of the ID, so that
// jobs sharing a unique key meet whatever their IDs. A job ID is idempotent
// within a partition, so repeated enqueues of the same ID must give the
// same partition key and the same unique key (or always none) to meet.
// The returned Enqueued.ID (queue:partition:id) names the job's partition:
// lookups by it need no such care.
func WithID(id string) EnqueueOption {
	return func(o *enqueueOptions) error {
		if id == "" || len(id) > MaxIDLength {
			return fmt.Errorf("%w: job ID must be 1 to %d bytes", ErrInvalid, MaxIDLength)
		}
		if !utf8.ValidString(id) {
			// JSON (the console, sluice -json) would show it changed, and
			// no tool could name the job again
			return fmt.Errorf("%w: job ID %q is not valid UTF-8", ErrInvalid, id)
		}
		for _, c := range id {
			if c <= ' ' || c == 0x7f {
				return fmt.Errorf("%w: job ID %q contains a space or control character", ErrInvalid, id)
			}
		}
		o.id = id
		return nil
	}
}

// SentAs sends a job again under id, the ID an earlier Enqueue or
// EnqueueMany gave it in a result whose Err is the call's error (the
// network, past go-redis's retries): the job goes to that partition under
// that ID, so that when the earlier call did add it (only its reply was
// lost) this one finds it and answers Duplicate, instead of adding a
// second job under a new ID on whichever partition comes next. The ID's
// queue is the job's (WithQueue may name it, and no other); WithID may
// not name another ID (SentAs sets it). A partition the queue no longer has is ErrInvalid.
func SentAs(id string) EnqueueOption {
	return func(o *enqueueOptions) error {
		q, rest, ok1 := strings.Cut(id, ":")
		n, local, ok2 := strings.Cut(rest, ":")
		// the partition as IDs write it, with no sign or leading zero:
		// "q:01:x" is no ID Sluice gives
		idx, err := strconv.Atoi(n)
		if !ok1 || !ok2 || err != nil || strconv.Itoa(idx) != n || idx < 0 || idx >= store.MaxPartitions || local == "" ||
			!runtime.ValidQueue(q) {
			return fmt.Errorf("%w: SentAs(%s): not a job ID (queue:partition:local)", ErrInvalid, names.Quote(id))
		}
		if o.id != "" && o.id != local {
			return fmt.Errorf("%w: SentAs(%s) and WithID(%q) name two IDs", ErrInvalid, names.Quote(id), o.id)
		}
		if err := WithID(local)(o); err != nil { // the local part is an ID as WithID takes it
			return fmt.Errorf("SentAs(%s): %w", names.Quote(id), err)
		}
		o.sentAs = id
		return nil
	}
}

// MaxPartitionKeyLength bounds a WithPartitionKey key.
const MaxPartitionKeyLength = 256

// WithPartitionKey places the job on its queue's partition chosen by a
// stable hash of key, so that all jobs with the same key share one
// partition and are claimed in the order they were enqueued (within a
// priority; a retried or delayed job goes back by its due time). Different
// keys spread over the partitions. With one worker of Concurrency 1, or
// with WithConcurrencyLimit(key, 1) (the limit is per partition, and the
// key has only one), one key's jobs also run one at a time, in order.
//
// The key decides the partition even when WithID or WithUnique is given:
// a job ID is idempotent, and a unique key held, within a partition, so
// repeated enqueues of the same ID or unique key must give the same
// partition key (or always none) to meet. Changing the queue's number of
// partitions moves keys to other partitions. On a queue of one partition
// the key has no effect.
func WithPartitionKey(key string) EnqueueOption {
	return func(o *enqueueOptions) error {
		if key == "" || len(key) > MaxPartitionKeyLength {
			return fmt.Errorf("%w: partition key must be 1 to %d bytes, got %d", ErrInvalid, MaxPartitionKeyLength, len(key))
		}
		o.partKey = key
		return nil
	}
}

// WithDelay makes the job due d from now (store time). Of WithDelay and
// WithRunAt, the last given wins. A job whose delay makes it due at or
// after its WithDeadline could never run: the enqueue refuses it
// (ErrInvalid, naming both times; nothing written for it), checked in
// Redis, whose clock the delay counts from (in EnqueueMany that job
// alone has its Err set; a spawned child fails its Spawn step; a
// follow-up is dead-lettered when relayed).
func WithDelay(d time.Duration) EnqueueOption {
	return func(o *enqueueOptions) error {
		if d < 0 {
			return fmt.Errorf("%w: negative delay %s", ErrInvalid, d)
		}
		o.delay, o.runAt = d, time.Time{}
		return nil
	}
}

// WithRunAt makes the job due at t (a time past, now). A time after
// MaxTime is refused (ErrInvalid). Of WithRunAt and WithDelay, the last
// given wins.
func WithRunAt(t time.Time) EnqueueOption {
	return func(o *enqueueOptions) error {
		if !t.IsZero() && !store.TimeInRange(t) {
			return fmt.Errorf("%w: run time %v is not within %v..%v", ErrInvalid, t, store.MinTime, MaxTime)
		}
		o.runAt, o.delay = t, 0
		return nil
	}
}

// MaxTime is the latest run time, deadline or timer a job keeps (in the
// year 144,683); a later one is refused rather than kept as another.
var MaxTime = store.MaxTime

// WithMaxAttempts sets how many returned errors archive the job (default
// 25).
func WithMaxAttempts(n int) EnqueueOption {
	return func(o *enqueueOptions) error {
		if n <= 0 {
			return fmt.Errorf("%w: max attempts %d must be positive", ErrInvalid, n)
		}
		o.maxAttempts = n
		return nil
	}
}

// WithTimeout bounds each attempt to d.
func WithTimeout(d time.Duration) EnqueueOption {
	return func(o *enqueueOptions) error {
		if d <= 0 {
			return fmt.Errorf("%w: timeout %s must be positive", ErrInvalid, d)
		}
		o.timeout = d
		return nil
	}
}

// WithDeadline bounds the job's useful life across attempts: once t passes
// it is archived with reason deadline_exceeded instead of running. A
// workflow suspended (step.Sleep, WaitSignal, Select) wakes at its
// deadline at the latest, and is archived then; so is a job held behind
// a quarantined twin (WithQuarantineHold) that is still held then, one
// still waiting then for a concurrency slot or a rate token
// (WithConcurrencyLimit, WithRateLimit; by the first claim of its
// partition after t, off the wait list), and
// one whose retry backoff, Snooze, RateLimited or crash delay would end
// after t (it is due at t instead). A deadline not after
// the job's WithRunAt time is refused (ErrInvalid): the job could never
// run; so is one not after the time its WithDelay makes it due, by
// Redis's clock (see WithDelay).
func WithDeadline(t time.Time) EnqueueOption {
	return func(o *enqueueOptions) error {
		if t.IsZero() {
			return fmt.Errorf("%w: zero deadline", ErrInvalid)
		}
		if !store.TimeInRange(t) {
			return fmt.Errorf("%w: deadline %v is not within %v..%v", ErrInvalid, t, store.MinTime, MaxTime)
		}
		o.deadline = t
		return nil
	}
}

// WithPriority sets the job's priority, 0 (default, lowest) to MaxPriority;
// within a queue partition higher priorities are always claimed first,
// after the jobs pinned to the claiming worker (package sticky), which it
// takes first, in their order.
func WithPriority(p int) EnqueueOption {
	return func(o *enqueueOptions) error {
		if p < 0 || p > MaxPriority {
			return fmt.Errorf("%w: priority %d not in 0..%d", ErrInvalid, p, MaxPriority)
		}
		o.priority = p
		return nil
	}
}

// MaxHeaders bounds a job's headers, encoded (msgpack): a job whose
// headers are larger is refused (ErrPayloadTooLarge). MaxPayload bounds
// its arguments alone.
const MaxHeaders = 64 << 10

// WithHeaders attaches string headers (trace context, tenant, ...) that the
// handler sees as Job.Headers, up to MaxHeaders bytes encoded.
func WithHeaders(h map[string]string) EnqueueOption {
	return func(o *enqueueOptions) error {
		o.headers = h
		return nil
	}
}
