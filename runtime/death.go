package runtime

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// deathQueueSize bounds the deaths waiting for OnDeath; more are dropped
// (and logged) rather than slowing acks down.
const deathQueueSize = 1024

// JobSnapshot is a job as a death or stuck report sees it: its identity,
// arguments and counters.
type JobSnapshot struct {
	ID           string
	Queue        string
	Kind         string
	Payload      []byte // msgpack-encoded arguments
	Headers      []byte
	Priority     int
	Attempt      int // returned errors and timeouts so far
	CrashAttempt int // panics and lost leases so far
	MaxAttempts  int
	Fence        int64 // the last attempt's fence
	Created      time.Time
	Deadline     time.Time // zero: none
}

// Death is a job that was moved to archived, the dead-letter state.
//
// OnDeath is called only after the fence-checked script that archived the
// job answered 'archived' to this worker: a stale attempt, whose write was
// rejected, never reports one. It is called from a single goroutine fed by
// a bounded queue, never on the ack path, so a slow handler delays other
// death reports but no job. Delivery is at most once per archive
// transition and best effort: a worker that crashes (or whose queue is
// full) between the archive and the call loses the report. The archived
// job itself is the durable record; list archived jobs to reconcile.
type Death struct {
	Job JobSnapshot
	// Reason is the archive reason: attempts_exhausted, skipped,
	// deadline_exceeded, or a park reason (unknown_kind,
	// malformed_payload, malformed, ...).
	Reason string
	// LastError is the last error recorded with the job ("" when none).
	LastError string
	// Err is the error the handler returned, when this worker's attempt
	// archived the job (nil for jobs archived at claim).
	Err error
	// At is when this worker learnt of the archive (worker clock).
	At time.Time
}

// deathItem is a queued death; fill asks to complete it from Redis.
type deathItem struct {
	d    Death
	ref  keys.Ref
	fill bool
}

// noteDeath queues the death of an attempt whose ack answered 'archived'.
func (w *Worker) noteDeath(a *Attempt, ack store.Ack, res store.AckResult, err error) {
	if w.opts.OnDeath == nil || res.Err != nil || res.State != "archived" {
		return
	}
	it := deathItem{ref: a.ref, d: Death{Job: snapshot(a), LastError: ack.Message, Err: err, At: w.clk.Now()}}
	switch ack.Code {
	case store.CodeRetry:
		it.d.Reason = "attempts_exhausted"
		it.d.Job.Attempt++
	case store.CodeSkip:
		it.d.Reason = "skipped"
	case store.CodeDeadline:
		it.d.Reason = "deadline_exceeded"
	case store.CodePark:
		it.d.Reason = ack.Reason
	default: // completion effects failed, or a code archiving for its own reason
		it.fill = true
	}
	w.queueDeath(it)
}

// archivedAtClaim queues the deaths of jobs a claim archived instead of
// leasing them (deadline passed while waiting, malformed job).
func (w *Worker) archivedAtClaim(p keys.Partition, parked []store.Parked) {
	if w.opts.OnDeath == nil {
		return
	}
	for _, pk := range parked {
		ref := keys.Ref{Partition: p, Local: pk.Local}
		w.queueDeath(deathItem{
			ref: ref, fill: true,
			d: Death{Job: JobSnapshot{ID: ref.String(), Queue: p.Queue}, Reason: pk.Reason, At: w.clk.Now()},
		})
	}
}

func (w *Worker) queueDeath(it deathItem) {
	select {
	case w.rel.deaths() <- it:
	default:
		w.log.Error("death handler queue full; dropping the report", "job", it.d.Job.ID, "reason", it.d.Reason)
	}
}

// deathLoop delivers queued deaths until quit, then the ones still queued.
func (w *Worker) deathLoop(run *relRun) {
	for {
		select {
		case it := <-w.rel.deaths():
			w.deliverDeath(run.ctx, it)
			continue
		case <-run.quit:
		}
		for {
			select {
			case it := <-w.rel.deaths():
				w.deliverDeath(run.ctx, it)
			default:
				return
			}
		}
	}
}

func (w *Worker) deliverDeath(ctx context.Context, it deathItem) {
	w.rel.active.Add(1)
	defer w.rel.active.Add(-1)
	if it.fill {
		if j, _, err := w.st.Get(ctx, it.ref); err != nil {
			w.log.Warn("reading an archived job for its death report failed", "job", it.d.Job.ID, "err", err)
		} else {
			it.d.Job = jobSnapshot(it.ref, j)
			it.d.LastError = j.LastError
			if it.d.Reason == "" {
				it.d.Reason = j.Reason
			}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("death handler panicked", "job", it.d.Job.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	w.opts.OnDeath(ctx, it.d)
}

func snapshot(a *Attempt) JobSnapshot {
	return JobSnapshot{
		ID: a.ID, Queue: a.Queue, Kind: a.Kind, Payload: a.Payload, Headers: a.Headers, Priority: a.Priority,
		Attempt: a.Attempt, CrashAttempt: a.CrashAttempt, MaxAttempts: a.MaxAttempts, Fence: a.Fence,
		Created: a.Created, Deadline: a.Deadline,
	}
}

func jobSnapshot(ref keys.Ref, j *store.Job) JobSnapshot {
	return JobSnapshot{
		ID: ref.String(), Queue: ref.Queue, Kind: j.Kind, Payload: j.Payload, Headers: j.Headers, Priority: j.Priority,
		Attempt: j.Attempt, CrashAttempt: j.CrashAttempt, MaxAttempts: j.MaxAttempts, Fence: j.Fence,
		Created: j.Created, Deadline: j.Deadline,
	}
}
