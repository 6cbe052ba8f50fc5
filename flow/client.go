package flow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// DefaultMaxPayload is the default bound on encoded job arguments.
const DefaultMaxPayload = 1 << 20

// DefaultMaxAttempts is the default number of returned errors that archive
// a job.
const DefaultMaxAttempts = 25

// ClientOptions configure a Client; zero values mean the defaults.
type ClientOptions struct {
	// Namespace must match the workers'. Default "sluice".
	Namespace string
	// Registry, when set, makes enqueueing a kind it does not know an
	// ErrUnknownKind error instead of a job no worker can run.
	Registry *Registry
	// MaxPayload bounds encoded arguments in bytes. Default 1 MiB.
	MaxPayload int
	// MaxAttempts is the default for jobs that do not set one. Default 25.
	MaxAttempts int
	// Partitions maps a queue to its number of partitions. Optional: each
	// queue's count is recorded in Redis by the first client or worker
	// that uses it, and read from there by every other. A count given here
	// is the one a new queue is registered with (default 1), and a check
	// of a registered one: another count is a *sluicetype.LayoutMismatchError
	// (ErrLayoutMismatch) at the queue's first use. See
	// admin.Client.ResizeQueue to change it.
	Partitions map[string]int
	// RetainCancelled is how long a job cancelled by an operator
	// (admin.Client.CancelJob, or the CLI's --retain) is kept before the
	// workers' retention sweep deletes it. Default: the retention of
	// cancelled jobs that the workers of the job's queue recorded in Redis
	// (runtime.Options.RetainCancelled), or DefaultRetainCancelled where
	// none did; admin.Cancelled says which applied.
	RetainCancelled time.Duration
	// Clock replaces Redis TIME in scripts (tests only; see
	// runtime.NewFakeClock).
	Clock runtime.Clock
	// TracerProvider makes a producer span per enqueued job, whose trace
	// context the job's headers carry to its attempts (see package
	// runtime). Default otel.GetTracerProvider(): a no-op unless an SDK is
	// installed.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the sluice.jobs.enqueued counter. Default
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

// Client enqueues and inspects jobs. It is safe for concurrent use.
type Client struct {
	st   *store.Store
	opts ClientOptions
	plan *planner
	tel  *clientTelemetry // telemetry.go
	// waits is the subscriber that Wait calls share (wait.go).
	waits waitHub
}

// NewClient returns a client on rdb, which stays the caller's: Sluice never
// closes it.
func NewClient(rdb redis.UniversalClient, opts ClientOptions) (*Client, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	if opts.Namespace == "" {
		opts.Namespace = "sluice"
	}
	if !runtime.ValidQueue(opts.Namespace) {
		return nil, fmt.Errorf("%w: namespace %s", ErrInvalid, names.Quote(opts.Namespace))
	}
	if opts.MaxPayload < 0 || opts.MaxAttempts < 0 || opts.RetainCancelled < 0 {
		return nil, fmt.Errorf("%w: MaxPayload, MaxAttempts and RetainCancelled must not be negative", ErrInvalid)
	}
	if opts.MaxPayload == 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	for q, n := range opts.Partitions {
		if !runtime.ValidQueue(q) || n <= 0 || n > store.MaxPartitions {
			return nil, fmt.Errorf("%w: partitions of queue %s: %d", ErrInvalid, names.Quote(q), n)
		}
	}
	cfg := store.Config{NS: opts.Namespace}
	if opts.Clock != nil {
		cfg.Now = opts.Clock.Now
	}
	st := store.New(rdb, cfg)
	pl := &planner{st: st, maxPayload: opts.MaxPayload, maxAttempts: opts.MaxAttempts, layouts: store.NewLayouts(st, opts.Partitions)}
	if opts.Registry != nil {
		pl.known = opts.Registry.Known
	}
	return &Client{st: st, opts: opts, plan: pl, tel: newClientTelemetry(opts)}, nil
}

// Enqueued is the result of enqueueing one job.
type Enqueued struct {
	ID string
	// Duplicate: nothing was added because the job exists already: a job
	// with the same caller-supplied ID, kind and arguments, or (Unique) the
	// job holding the same unique key, whose ID is then ID.
	Duplicate bool
	Unique    bool
	// Err is set, in EnqueueMany results, for a job whose ID conflicts with
	// a different existing job: a *sluicetype.ConflictError (ErrConflict);
	// or for a job whose call to its partition failed, with that call's
	// error (see EnqueueMany; Enqueue returns it too, with the ID).
	Err error
	// HeldBy is set when the job was added held behind this quarantined
	// job (WithQuarantineHold): it runs once that job is released.
	HeldBy string
}

// Item is one job of an EnqueueMany call.
type Item struct {
	Args Args
	Opts []EnqueueOption
}

// Enqueue adds one job. A job whose ID (WithID) is taken by a different
// job returns a *sluicetype.ConflictError (ErrConflict) naming it. When
// the call fails on its way to Redis or back (past go-redis's retries),
// the result still carries the ID the job was sent under, with the error:
// if only the reply was lost, the job was added under that ID, and Job
// finds it.
func (c *Client) Enqueue(ctx context.Context, args Args, opts ...EnqueueOption) (Enqueued, error) {
	res, err := c.enqueue(ctx, false, Item{Args: args, Opts: opts})
	if len(res) == 0 {
		return Enqueued{}, err
	}
	if err == nil {
		err = res[0].Err
	}
	return res[0], err
}

// EnqueueMany adds jobs in one round trip per partition (per 1,000 of its
// jobs). Jobs without a
// key that places them (a partition key, unique key or ID) fill
// consecutive partitions in blocks of at least 128, starting one partition
// further on each call. Every job is validated first: on bad input nothing
// is added, the result is nil, and the error names the first bad job by
// its index ("job 3: ..."). A job whose ID conflicts has its Err set (a
// *sluicetype.ConflictError); the others are added. A job that Redis's
// data keeps from being added (ErrMalformed: a key it needs, its unique
// key or rate class, holds something else) has its Err set too, and the
// error returned counts it, as below; so does one that Redis refuses as
// bad input only its clock can tell (ErrInvalid: a WithDelay that makes
// the job due at or after its deadline), nothing written for it.
//
// One partition's failure is its jobs' alone: when a call to a partition
// fails (Redis unreachable past go-redis's retries, or ErrLayoutMismatch,
// mostly a *sluicetype.LayoutMismatchError, after a shrink of the queue
// took the partition away), the jobs
// it carried, and those of that partition it could not send after it
// (jobs go in calls of at most 1,000), have that error as their Err; the
// error returned says how many jobs failed and wraps each distinct cause.
// The result is then not nil: it lists every job, so the others, which
// were added, keep their IDs. Send again the jobs whose Err is set and is
// not a conflict: those of a refused partition (ErrLayoutMismatch) were
// not added; those whose call failed on the network may have been, if
// only the reply was lost: send those with SentAs(their ID), which finds
// a job added (Duplicate) rather than adding a second.
func (c *Client) EnqueueMany(ctx context.Context, items ...Item) ([]Enqueued, error) {
	return c.enqueue(ctx, true, items...)
}

// enqueue is EnqueueMany; many says whether to name a bad job by its
// index, which means nothing to a caller of Enqueue.
func (c *Client) enqueue(ctx context.Context, many bool, items ...Item) ([]Enqueued, error) {
	tr := c.tel.begin(ctx, items)
	sp := newSpread(c.plan.rr.Add(1), len(items))
	jobs, routes, bad, err := c.plan.batch(ctx, items, nil, sp, tr.start, func(i int, d drafted) error {
		tr.placed(i, d.queue)
		return nil
	})
	if err != nil {
		if many {
			err = fmt.Errorf("job %d: %w", bad, err)
		}
		tr.end(nil, err)
		return nil, err
	}
	byPart := map[keys.Partition][]int{}
	for i, r := range routes {
		byPart[r.ref.Partition] = append(byPart[r.ref.Partition], i)
	}
	out := make([]Enqueued, len(items))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = map[keys.Partition]error{} // the partitions whose call failed
	)
	send := func(p keys.Partition, idx []int) {
		part := jobs // every job, in order, when all go to p
		if len(idx) < len(jobs) {
			part = make([]store.NewJob, len(idx))
			for k, i := range idx {
				part[k] = jobs[i]
			}
		}
		res, err := c.plan.enqueue(ctx, p, routes[idx[0]].of, part) // one result per job, even on an error
		for k, i := range idx {
			out[i] = enqueued(routes[i].ref, res[k])
		}
		if err != nil {
			mu.Lock()
			errs[p] = err
			mu.Unlock()
		}
	}
	for p, idx := range byPart {
		if len(byPart) == 1 { // one round trip: no goroutine to hand it to
			send(p, idx)
			break
		}
		wg.Go(func() { send(p, idx) })
	}
	wg.Wait()
	tr.end(out, nil) // each job's Err tells its span
	// one job, one partition: out[0] keeps the ID it was sent under, and
	// Enqueue reads its Err
	if !many {
		if err := errs[routes[0].ref.Partition]; err != nil {
			return out, err
		}
		return out, nil
	}
	if len(errs) == 0 && !slices.ContainsFunc(out, notAdded) {
		return out, nil
	}
	return out, partlyEnqueued(out, routes, errs)
}

// notAdded reports whether e's job was not added for a reason other than
// a conflict of its ID (which EnqueueMany answers in e.Err alone).
func notAdded(e Enqueued) bool { return e.Err != nil && !errors.Is(e.Err, ErrConflict) }

// partlyEnqueued is EnqueueMany's error when the calls to some
// partitions failed, or some jobs were not added (ErrMalformed): it
// counts the jobs struck and wraps each distinct error once, the
// partitions' in partition order, then the jobs'.
func partlyEnqueued(out []Enqueued, routes []route, errs map[keys.Partition]error) error {
	failed := 0
	var causes []error
	add := func(err error) {
		if !slices.ContainsFunc(causes, func(e error) bool { return e.Error() == err.Error() }) {
			causes = append(causes, err) // once, when every partition fails alike
		}
	}
	parts := slices.SortedFunc(maps.Keys(errs), func(a, b keys.Partition) int {
		return cmp.Or(strings.Compare(a.Queue, b.Queue), a.Index-b.Index)
	})
	for _, p := range parts {
		add(errs[p])
	}
	for i, e := range out {
		if notAdded(e) {
			failed++
			if errs[routes[i].ref.Partition] == nil { // its own answer, not its call's
				add(fmt.Errorf("job %d: %w", i, e.Err))
			}
		}
	}
	return fmt.Errorf("sluice: enqueue failed for %d of %d jobs (each has its Err): %w", failed, len(out), errors.Join(causes...))
}

// enqueued turns a store result into what Enqueue reports.
func enqueued(ref keys.Ref, r store.EnqueueResult) Enqueued {
	if r.Local != "" { // its generated ID was taken: it got another
		ref.Local = r.Local
	}
	if r.Status == store.Held {
		ref.Local = r.Existing
		return Enqueued{ID: ref.String(), Duplicate: true, Unique: true}
	}
	e := Enqueued{ID: ref.String(), Duplicate: r.Status == store.Duplicate, Err: r.Err}
	if r.Status == store.Conflicted {
		e.Err = &sluicetype.ConflictError{ID: e.ID}
	}
	if r.HeldBy != "" {
		e.HeldBy = keys.Ref{Partition: ref.Partition, Local: r.HeldBy}.String()
	}
	return e
}
