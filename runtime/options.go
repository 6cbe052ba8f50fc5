package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/sluicetype"
)

// Options configure a Worker. The zero value of every field means its
// documented default.
type Options struct {
	// Namespace separates independent Sluice deployments on one Redis.
	// Default "sluice".
	Namespace string
	// Queues maps each queue to serve to its weight. Default {"default": 1}.
	Queues map[string]int
	// Partitions maps a queue to its number of partitions (hash tags).
	// Optional: each queue's count is recorded in Redis by the first
	// client or worker that uses it and read from there. A count given
	// here is the one a new queue is registered with (default 1), and a
	// check of a registered one: Run fails with a
	// *sluicetype.LayoutMismatchError (ErrLayoutMismatch) on another. A
	// queue listed here but not in Queues is checked too (children spawned
	// into it are placed by it).
	Partitions map[string]int
	// Concurrency is the most jobs run at once. Default 50; at most
	// MaxConcurrency.
	Concurrency int
	// ClaimBatch is the most jobs one claim leases. Default 32; at most
	// MaxClaimBatch.
	ClaimBatch int
	// Lease is how long a claim holds a job before it must be renewed.
	// Default 30s; at least 1ms (leases are stored in milliseconds).
	Lease time.Duration
	// KindLease overrides Lease for some job kinds; each at least 1ms.
	// Run logs a warning for a kind it has no handler for.
	KindLease map[string]time.Duration
	// RenewInterval is how often all leases are renewed (one round trip per
	// partition, and a heartbeat write). Default a third of the shortest
	// lease (Lease, KindLease); when set, at least 1ms and shorter than
	// the shortest lease.
	RenewInterval time.Duration
	// Timeout bounds one attempt when the job sets none. Default: none.
	Timeout time.Duration
	// KindTimeout overrides Timeout for some job kinds. Run logs a
	// warning for a kind it has no handler for.
	KindTimeout map[string]time.Duration
	// ShutdownWindow is how long in-flight jobs may finish after shutdown
	// begins, their leases still renewed. Default 10s.
	ShutdownWindow time.Duration
	// CancelGrace is how long a cancelled handler (timeout, deadline,
	// shutdown) gets to return before the worker settles its job without
	// it. An isolated attempt whose child replied before is not settled
	// so: its outcome is the reply's, once its child is wound down
	// (runtime/isolated bounds that). Default 1s.
	CancelGrace time.Duration
	// Backoff gives the delay before a retry. Default DefaultBackoff,
	// which is also the delay when Backoff panics (logged).
	Backoff Backoff
	// CrashLimit is the crash_attempt count at which a job is quarantined.
	// Default 3.
	CrashLimit int
	// CrashDelay is how long a job waits after its first crash (a panic, a
	// lost lease) before it runs again, doubling with each crash up to a
	// minute (or CrashDelay if longer), in store time: a job that took its
	// process down does not come straight back. Default 1s; negative:
	// none, the job is available again at once behind waiting work.
	CrashDelay time.Duration
	// NonConsuming reports errors that should put the job back without
	// spending an attempt or recording a failure (like RateLimited with no
	// delay). Default: none. It is called after the handler returned,
	// outside its recovery: a panic there counts as false (logged).
	NonConsuming func(error) bool
	// MaintenanceInterval is how often expired leases are reaped, due jobs
	// promoted and expired finished jobs deleted. Default 1s.
	MaintenanceInterval time.Duration
	// IdlePoll is how long a partition whose last claim found it dry goes
	// unpolled without a wake-up, a safety net for lost pub/sub messages
	// (e.g. during a cluster failover). Default 5s.
	IdlePoll time.Duration
	// RetainCompleted, RetainArchived (archived and quarantined jobs) and
	// RetainCancelled say how long finished jobs are kept before they are
	// deleted with all their keys. An archived or quarantined job is kept
	// two minutes at least, so that its pending death report outlives its
	// delivery's grace. Defaults DefaultRetainCompleted,
	// DefaultRetainArchived, DefaultRetainCancelled. A worker records them
	// in Redis as its queues' retention when it starts (the worker that
	// started last, on Redis's clock, wins, even over one whose write
	// succeeds later), and an operator's cancel keeps a job
	// RetainCancelled as recorded there (admin.Client.CancelJob).
	RetainCompleted time.Duration
	RetainArchived  time.Duration
	RetainCancelled time.Duration
	// DiscardCompleted deletes completed jobs at once instead of keeping them.
	DiscardCompleted bool
	// WorkerID identifies this worker as a lease holder and as the target
	// of sticky routing (package sticky): set a stable one for that. Default
	// hostname:pid:random.
	WorkerID string
	// Clock is the time source. Default the wall clock with Redis TIME for
	// every decision in Redis; see NewFakeClock. On another clock than
	// the default, an isolated child (runtime/isolated) is told nothing of
	// its lease, which it would count in real time: it does not end
	// itself when its worker is stopped. Every loop of the worker reads
	// it, outside any job's recovery: a Clock that panics ends the
	// process.
	Clock Clock
	// Logger receives the worker's logs. Default slog.Default(). Its
	// handler is called from every loop of the worker (claims, renewals,
	// the reaper, the relay), outside any job's recovery: one that panics
	// ends the process, and one that blocks stops the loop that logs.
	Logger *slog.Logger
	// Periodic, when set, runs while the worker runs (see Periodic).
	Periodic Periodic

	// OnDeath, when set, is told about every job this worker moved to
	// archived (the dead-letter state) or quarantined (Death.State says
	// which), only once the fence-checked script that moved it succeeded;
	// see Death for the delivery guarantees.
	OnDeath func(ctx context.Context, d Death)
	// OnDeadEffect, when set, is told about every effect on a key in
	// another slot that this worker's relay could not apply; see
	// DeadEffect. Such effects are logged and counted whether it is set or
	// not. It runs on the relay loop: keep it short.
	OnDeadEffect func(ctx context.Context, d sluicetype.DeadEffect)
	// OnStuck, when set, is told about attempts that stopped progressing;
	// see Stuck. The evidence is also written to the job and logged,
	// whether OnStuck is set or not.
	OnStuck func(ctx context.Context, s Stuck)
	// StuckAfterStop is how long an attempt told to stop (timeout,
	// deadline, lost lease, shutdown, cancellation) may keep running before
	// it is reported stuck. Default 30s. One still running when Run
	// returns is reported then, however long it ran since (a handler that
	// ignores the shutdown window's cancellation: Run does not wait for
	// it).
	StuckAfterStop time.Duration
	// StuckNoProgress reports an attempt whose lease is healthy but which
	// made no progress (no step checkpoint, cursor checkpoint or
	// ReportProgress) for this long. Default 0: off.
	StuckNoProgress time.Duration

	// OnEvent, when set, is told what happens to each attempt this worker
	// runs: started, then one of completed, retried, failed, crashed,
	// snoozed, suspended, cancelled, released (see Event). It is never
	// called on the path that runs and acks jobs: events go through a
	// queue of EventBuffer events to one goroutine that calls OnEvent in
	// order, so a slow OnEvent delays only later events, and when the
	// queue is full the event is dropped and counted (DroppedEvents).
	// Unset, it costs a nil check per attempt.
	OnEvent func(ctx context.Context, e Event)
	// EventBuffer bounds the events waiting for OnEvent. Default 1024; at
	// most MaxEventBuffer (the queue is allocated in full by NewWorker).
	EventBuffer int
	// Middleware wraps every handler, Middleware[0] outermost: it runs
	// first and sees the outcome last. See Middleware for panics.
	Middleware []Middleware

	// TracerProvider makes the attempt spans and, through the handler's
	// context, the step spans (see Telemetry in the package doc). Default
	// otel.GetTracerProvider(): a no-op unless an SDK is installed. A
	// panic as an attempt's span starts or ends (a span processor, an
	// exporter it calls, the propagator) is logged: the attempt runs
	// without its span, or is settled as it would be without it.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the worker's metrics. Default
	// otel.GetMeterProvider(). An attempt's counts are recovered as its
	// span's end is; its instruments must not panic elsewhere (the
	// reaper's and relay's counts, which no job is charged with).
	MeterProvider metric.MeterProvider
}

// The largest Options.Concurrency, Options.ClaimBatch and
// Options.EventBuffer NewWorker accepts; a larger one is an
// ErrInvalidOptions. Each sizes memory the worker allocates up front (the
// event queue, a claim's jobs) or per job.
const (
	MaxConcurrency = 1 << 20
	MaxClaimBatch  = 1024
	MaxEventBuffer = 1 << 16
)

// How long a worker keeps finished jobs when Options says nothing
// (RetainCompleted, RetainArchived, RetainCancelled); also what an
// operator's cancel keeps a job when no worker recorded its queue's
// retention in Redis.
const (
	DefaultRetainCompleted = 24 * time.Hour
	DefaultRetainArchived  = 7 * 24 * time.Hour
	DefaultRetainCancelled = 24 * time.Hour
)

// ValidWorkerID reports whether id can name a worker: 1 to 128 letters,
// digits, '_', '.', ':' or '-', starting with a letter or digit.
func ValidWorkerID(id string) bool { return names.Valid(id, 128, "_.:-") }

// ValidQueue reports whether name is a valid queue name: 1 to 64 letters,
// digits, '_', '.' or '-', starting with a letter or digit.
func ValidQueue(name string) bool { return keys.ValidQueue(name) }

func (o Options) withDefaults() (Options, error) {
	bad := func(format string, a ...any) (Options, error) {
		return o, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...)
	}
	if o.Namespace == "" {
		o.Namespace = "sluice"
	}
	if !ValidQueue(o.Namespace) {
		return bad("namespace %q", o.Namespace)
	}
	if len(o.Queues) == 0 {
		o.Queues = map[string]int{"default": 1}
	}
	for q, w := range o.Queues {
		if !ValidQueue(q) {
			return bad("queue name %q", q)
		}
		if w <= 0 {
			return bad("queue %q weight %d must be positive", q, w)
		}
	}
	for q, n := range o.Partitions {
		if !ValidQueue(q) {
			return bad("queue name %q in Partitions", q)
		}
		if n <= 0 || n > 1024 {
			return bad("queue %q partitions %d not in 1..1024", q, n)
		}
	}
	durations := map[string]*time.Duration{
		"Lease": &o.Lease, "RenewInterval": &o.RenewInterval, "Timeout": &o.Timeout,
		"ShutdownWindow": &o.ShutdownWindow, "CancelGrace": &o.CancelGrace,
		"MaintenanceInterval": &o.MaintenanceInterval, "IdlePoll": &o.IdlePoll,
		"RetainCompleted": &o.RetainCompleted, "RetainArchived": &o.RetainArchived,
		"RetainCancelled": &o.RetainCancelled,
		"StuckAfterStop":  &o.StuckAfterStop, "StuckNoProgress": &o.StuckNoProgress,
	}
	for name, d := range durations {
		if *d < 0 {
			return bad("%s %s is negative", name, *d)
		}
	}
	if o.Lease != 0 && o.Lease < time.Millisecond {
		return bad("Lease %s is too short (at least 1ms)", o.Lease)
	}
	if o.RenewInterval != 0 && o.RenewInterval < time.Millisecond {
		return bad("RenewInterval %s is too short (at least 1ms)", o.RenewInterval)
	}
	// periods: a nanosecond (a unit left out, "1" for a second) would
	// have an idle worker call Redis back to back
	for name, d := range map[string]time.Duration{"MaintenanceInterval": o.MaintenanceInterval, "IdlePoll": o.IdlePoll,
		"StuckNoProgress": o.StuckNoProgress} {
		if d != 0 && d < time.Millisecond {
			return bad("%s %s is too short (at least 1ms)", name, d)
		}
	}
	for k, d := range o.KindLease {
		if d < time.Millisecond {
			return bad("KindLease[%q] %s is too short", k, d)
		}
	}
	for k, d := range o.KindTimeout {
		if d <= 0 {
			return bad("KindTimeout[%q] %s must be positive", k, d)
		}
	}
	if o.Concurrency < 0 || o.ClaimBatch < 0 || o.CrashLimit < 0 || o.EventBuffer < 0 {
		return bad("Concurrency, ClaimBatch, CrashLimit and EventBuffer must not be negative")
	}
	if o.Concurrency > MaxConcurrency || o.ClaimBatch > MaxClaimBatch || o.EventBuffer > MaxEventBuffer {
		return bad("Concurrency %d, ClaimBatch %d or EventBuffer %d above its maximum (%d, %d, %d)",
			o.Concurrency, o.ClaimBatch, o.EventBuffer, MaxConcurrency, MaxClaimBatch, MaxEventBuffer)
	}
	for i, m := range o.Middleware {
		if m == nil {
			return bad("Middleware[%d] is nil", i)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Lease, 30*time.Second)
	shortest := o.Lease
	for _, d := range o.KindLease {
		shortest = min(shortest, d)
	}
	def(&o.RenewInterval, shortest/3)
	def(&o.ShutdownWindow, 10*time.Second)
	def(&o.CancelGrace, time.Second)
	def(&o.MaintenanceInterval, time.Second)
	def(&o.IdlePoll, 5*time.Second)
	def(&o.RetainCompleted, DefaultRetainCompleted)
	def(&o.RetainArchived, DefaultRetainArchived)
	def(&o.RetainCancelled, DefaultRetainCancelled)
	def(&o.StuckAfterStop, 30*time.Second)
	if o.RenewInterval <= 0 { // a renewal round, and a heartbeat write, back to back
		return bad("RenewInterval %s for the shortest lease %s", o.RenewInterval, shortest)
	}
	if o.RenewInterval >= shortest {
		return bad("RenewInterval %s must be shorter than the shortest lease %s", o.RenewInterval, shortest)
	}
	if o.Concurrency == 0 {
		o.Concurrency = 50
	}
	if o.ClaimBatch == 0 {
		o.ClaimBatch = 32
	}
	if o.CrashLimit == 0 {
		o.CrashLimit = 3
	}
	if o.EventBuffer == 0 {
		o.EventBuffer = defaultEventBuffer
	}
	switch {
	case o.CrashDelay == 0:
		o.CrashDelay = time.Second
	case o.CrashDelay < 0:
		o.CrashDelay = 0 // the store's "none"
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Clock == nil {
		o.Clock = WallClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.WorkerID != "" && !ValidWorkerID(o.WorkerID) {
		return bad("worker ID %q", o.WorkerID)
	}
	if o.WorkerID == "" {
		host, _ := os.Hostname()
		o.WorkerID = host + ":" + strconv.Itoa(os.Getpid()) + ":" + randomHex(3)
	}
	return o, nil
}
