package testsignal

import "context"

// Worker is the set of signals a runtime.Worker sends, for tests to wait
// on its actions instead of on time. Every value names the worker that
// sent it (its ID), so several workers can share one set.
//
// A test turns them on by running the worker under a context that
// carries an initialised set (WithWorker); Run reads it once. Without
// one, every signal is off and costs a nil check.
type Worker struct {
	// Settled: the worker made a job's new state durable, or learnt that
	// it could not: an attempt's outcome acked or refused (By Ack), a job
	// whose lease expired reclaimed by maintenance (By Reap), a job
	// archived by a claim instead of leased (By Claim), the job of an
	// attempt the worker gave up by its own clock handed back while the
	// store still held its lease (By GiveBack), a job pushed to the
	// worker that it did not run handed back (By HandBack). Sent once the
	// write has returned, after the attempt's telemetry and death report
	// are recorded and it is no longer in flight.
	Settled Signal[Settled]
	// Claimed: a job was leased and its attempt starts.
	Claimed Signal[Claimed]
	// Dry: a claim found a partition with nothing to run.
	Dry Signal[Dry]
	// Idle: every partition is dry; the fetch loop has armed its idle
	// timer and waits for a wake-up.
	Idle Signal[Idle]
	// Maintained: a maintenance pass (reap, promote, sweep) is over and
	// the timer of the next one is armed. N counts the passes, from 1.
	Maintained Signal[Pass]
	// Renewed: the renewal loop has armed the timer of its next round: N
	// rounds have renewed leases and beaten the heartbeat so far (0: none
	// yet, the loop has just started).
	Renewed Signal[Pass]
	// Relayed: a relay pass over every partition's outbox is over and the
	// relay loop waits for a kick or its tick. N counts the passes.
	Relayed Signal[Pass]
	// Swept: the death loop has armed its tick; N sweeps for pending
	// death reports have run so far (0: none yet).
	Swept Signal[Pass]
	// Delivered: a death report was delivered (OnDeath ran) and dropped.
	Delivered Signal[Job]
	// Progress: an attempt's progress report was written.
	Progress Signal[Job]
	// Tracked: an attempt waits for its tracked goroutines (Attempt.Go)
	// before it is settled.
	Tracked Signal[Job]
	// Extending: an ExtendLease of an attempt waits, for the turn of
	// another ExtendLease of it or for the renewals of its lease in
	// flight.
	Extending Signal[Job]
}

// By says which of the worker's writes settled a job.
type By string

const (
	Ack   By = "ack"   // an attempt's outcome
	Reap  By = "reap"  // maintenance reclaimed an expired lease
	Claim By = "claim" // a claim archived the job instead of leasing it
	// GiveBack: the worker handed back, as a crash, the job of an attempt
	// it gave up when its lease ran out by its own clock
	GiveBack By = "give_back"
	// HandBack: the worker released a job pushed to it that it did not
	// run (no slot free, stopping), charging nothing
	HandBack By = "hand_back"
)

// Settled is a job the worker has settled.
type Settled struct {
	Worker string
	JobID  string
	Fence  int64 // the attempt's fence (By Ack)
	By     By
	// State is the job's state after the write; "" when nothing was
	// written (Err says why).
	State string
	// Err is why an attempt's outcome was not written: the ack's error
	// (the attempt was no longer current, Redis failed), or, when there
	// was nothing to ack, the cause that ended the attempt (its lease was
	// lost).
	Err error
}

// Claimed is a job the worker leased.
type Claimed struct {
	Worker string
	JobID  string
	Fence  int64
}

// Dry is a partition a claim found with nothing to run.
type Dry struct {
	Worker    string
	Queue     string
	Partition int
}

// Idle is a fetch loop waiting for work.
type Idle struct {
	Worker string
}

// Pass is one round of a worker's periodic loop.
type Pass struct {
	Worker string
	N      int
}

// Job is an event about one job.
type Job struct {
	Worker string
	JobID  string
}

// NewWorker returns a worker signal set with every signal on.
func NewWorker() *Worker {
	s := &Worker{}
	s.Settled.Init("settled")
	s.Claimed.Init("claimed")
	s.Dry.Init("dry")
	s.Idle.Init("idle")
	s.Maintained.Init("maintained")
	s.Renewed.Init("renewed")
	s.Relayed.Init("relayed")
	s.Swept.Init("swept")
	s.Delivered.Init("delivered")
	s.Progress.Init("progress")
	s.Tracked.Init("tracked")
	s.Extending.Init("extending")
	return s
}

type workerKey struct{}

// WithWorker returns ctx carrying s: a runtime.Worker run under it sends
// its signals to s.
func WithWorker(ctx context.Context, s *Worker) context.Context {
	return context.WithValue(ctx, workerKey{}, s)
}

// WorkerFrom returns (a copy of, sharing its buffers) the set ctx
// carries, or the zero set, all off.
func WorkerFrom(ctx context.Context) Worker {
	if s, _ := ctx.Value(workerKey{}).(*Worker); s != nil {
		return *s
	}
	return Worker{}
}
