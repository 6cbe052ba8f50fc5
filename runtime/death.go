package runtime

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// deathQueueSize bounds the deaths waiting for OnDeath; more are left to
// the sweep (and logged) rather than slowing acks down.
const deathQueueSize = 1024

// deathHold is how long a death report taken by a sweep is held for this
// worker: a worker that dies while its handler runs leaves it to another
// after that.
const deathHold = time.Minute

// deathSweepLimit bounds the death reports one sweep takes per partition.
const deathSweepLimit = 100

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
	Redrives     int   // how often an operator redrove or released it: a death's identity, with ID and Fence (Death)
	Created      time.Time
	Deadline     time.Time // zero: none
}

// Death is a job that was moved to archived, the dead-letter state, or
// quarantined at the crash limit.
//
// OnDeath is called only once the script that made the move succeeded: a
// stale attempt, whose write was rejected, never reports one. Delivery is
// at least once: the script that archives or quarantines a job also keeps
// a pending death report in the job's slot (keys.Partition.Deaths), which
// is dropped only after a death handler has run for it (returned or
// panicked). The worker that made the move reports it at once; a report
// still pending 30 s later (that worker died, or its queue was full) is
// delivered by any worker with OnDeath set, on its maintenance tick, held
// for a minute so that two do not deliver it at once. So a handler may
// see a death twice: its worker died after the handler ran but before
// the report was dropped; or handlers ran slowly, a death queued at its
// worker for more than 30 s, or a sweep's reports handled for more than
// the minute's hold in all, and another worker's sweep took the report
// too. Make it idempotent, by Job.ID, Job.Fence and Job.Redrives (a job
// redriven and archived again by a claim, its deadline passed or its
// sticky fallback due, dies twice under one fence; and Job.Created, for
// an ID enqueued again after its job was deleted, whose fences start
// over).
// Calls come from a single goroutine per worker, never on the ack path,
// so a slow handler delays other death reports but no job. A dead job is
// kept two minutes at least, whatever RetainArchived, so that its report
// is still there when another worker's sweep may take it.
type Death struct {
	Job JobSnapshot
	// State is "archived" or "quarantined".
	State string
	// Reason is the archive reason: attempts_exhausted, skipped,
	// deadline_exceeded, or a park reason (unknown_kind,
	// malformed_payload, malformed, ...); crash_limit for a quarantine.
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
	// redrives and lease are the job's redrive count and last lease ID
	// when it died (store.Job.Redrives, LeaseID): with its fence, which
	// death DoneDeath drops the report of
	redrives int
	lease    string
}

// noteDeath queues the death of an attempt whose ack answered 'archived'
// or 'quarantined'.
func (w *Worker) noteDeath(a *Attempt, ack store.Ack, res store.AckResult, err error) {
	if w.opts.OnDeath == nil || res.Err != nil || (res.State != "archived" && res.State != "quarantined") {
		return
	}
	it := deathItem{ref: a.ref, redrives: a.redrives, lease: a.LeaseID,
		d: Death{Job: snapshot(a), State: res.State, LastError: ack.Message, Err: err, At: w.clk.Now()}}
	switch {
	case res.State == "quarantined":
		it.d.Reason = "crash_limit"
		it.d.Job.CrashAttempt++
	default:
		it.fill = !archiveReason(&it.d, ack, res)
	}
	w.queueDeath(it)
}

// archiveReason sets d's reason from the ack that archived it (res), and
// says whether the ack tells it (else the job, read from Redis, does).
// A job the store archived for its corrupt data ('malformed') has that
// reason, whatever its code asked.
func archiveReason(d *Death, ack store.Ack, res store.AckResult) bool {
	if res.Reason != "" {
		d.Reason = res.Reason
		return true
	}
	switch ack.Code {
	case store.CodeRetry:
		d.Reason = "attempts_exhausted"
		d.Job.Attempt++
	case store.CodeSkip:
		d.Reason = "skipped"
	case store.CodeDeadline:
		d.Reason = "deadline_exceeded"
	case store.CodePark:
		d.Reason = ack.Reason
	case store.CodeCrash: // a crash counter that cannot be counted (lib_lifecycle.lua crash): the fill's read fails on it too
		d.Reason = "malformed"
	default: // completion effects failed, or a code archiving for its own reason
		return false
	}
	return true
}

// reapedDeaths queues the deaths of jobs a maintenance pass (or a give-back)
// quarantined (a lease lost at the crash limit) or archived ('malformed':
// its crash counter, its hash or its state corrupt).
func (w *Worker) reapedDeaths(p keys.Partition, reaped []store.Reaped) {
	if w.opts.OnDeath == nil {
		return
	}
	for _, r := range reaped {
		var reason string
		switch r.State {
		case "quarantined":
			reason = "crash_limit"
		case "archived":
			reason = "malformed"
		default:
			continue
		}
		ref := keys.Ref{Partition: p, Local: r.Local}
		w.queueDeath(deathItem{
			ref: ref, fill: true,
			d: Death{Job: JobSnapshot{ID: ref.String(), Queue: p.Queue}, State: r.State, Reason: reason, At: w.clk.Now()},
		})
	}
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
			d: Death{Job: JobSnapshot{ID: ref.String(), Queue: p.Queue}, State: "archived", Reason: pk.Reason, At: w.clk.Now()},
		})
	}
}

func (w *Worker) queueDeath(it deathItem) {
	select {
	case w.rel.deaths() <- it:
	default:
		w.log.Error("death handler queue full; the sweep will deliver the report", "job", it.d.Job.ID, "reason", it.d.Reason)
	}
}

// deathLoop delivers queued deaths, and on every maintenance tick the
// death reports left pending in Redis (sweepDeaths), until quit; then the
// ones still queued.
//
// The tick is armed once per sweep, not after every delivery: a worker
// delivering a death each MaintenanceInterval or more often would put
// its sweep off for ever, and the reports of a dead worker (or of a full
// queue) would wait as long.
func (w *Worker) deathLoop(run *relRun) {
	t := w.clk.NewTimer(w.opts.MaintenanceInterval)
	defer func() { t.Stop() }()
	for sweeps := 0; ; {
		w.sig.Swept.Signal(testsignal.Pass{Worker: w.opts.WorkerID, N: sweeps})
		select {
		case it := <-w.rel.deaths():
			w.deliverDeath(run.ctx, it)
			continue
		case <-t.C():
			w.sweepDeaths(run.ctx)
			sweeps++
			t = w.clk.NewTimer(w.opts.MaintenanceInterval)
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

// sweepDeaths delivers the death reports of the worker's partitions that
// are still pending in Redis past their grace: their worker died, or its
// queue was full.
func (w *Worker) sweepDeaths(ctx context.Context) {
	for _, p := range w.parts {
		jobs, err := w.st.TakeDeaths(ctx, p, deathSweepLimit, deathHold)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("reading pending death reports failed", "queue", p.Queue, "partition", p.Index, "err", err)
			}
			continue
		}
		for _, j := range jobs {
			ref := keys.Ref{Partition: p, Local: j.Local}
			w.deliverDeath(ctx, deathItem{ref: ref, redrives: j.Redrives, lease: j.LastLeaseID, d: Death{
				Job: jobSnapshot(ref, j), State: j.State, Reason: j.Reason, LastError: j.LastError, At: w.clk.Now(),
			}})
		}
	}
}

// deliverDeath calls OnDeath, then drops the job's pending death report:
// whether the handler returned or panicked, it has run. A death this worker
// knows only by the job's ID (fill) is completed from the job as Redis
// holds it then; one whose job is no longer in the death's state was
// returned to execution since, and is not reported with a later attempt's
// data.
func (w *Worker) deliverDeath(ctx context.Context, it deathItem) {
	w.rel.active.Add(1)
	defer w.rel.active.Add(-1)
	if it.fill {
		if j, _, err := w.st.Get(ctx, it.ref); err != nil {
			w.log.Warn("reading a dead job for its death report failed", "job", it.d.Job.ID, "err", err)
		} else if j.State != it.d.State {
			// redriven or released since, its pending report dropped with
			// that (as a sweep would find it): what the job holds now is a
			// later attempt's, running or dead again (that death is
			// reported by its own report), not this death's
			w.log.Info("a dead job was returned to execution before its death report was delivered; not reported",
				"job", it.d.Job.ID, "state", j.State, "reason", it.d.Reason)
			return
		} else {
			it.d.Job = jobSnapshot(it.ref, j)
			it.redrives, it.lease = j.Redrives, j.LastLeaseID
			it.d.LastError = j.LastError
			if it.d.Reason == "" {
				it.d.Reason = j.Reason
			}
		}
	}
	w.callOnDeath(ctx, it.d)
	if err := w.st.DoneDeath(ctx, it.ref.Partition, it.ref.Local, it.d.Job.Fence, it.redrives, it.lease); err != nil && ctx.Err() == nil {
		w.log.Warn("dropping a delivered death report failed; it may be delivered again", "job", it.d.Job.ID, "err", err)
	}
	w.sig.Delivered.Signal(testsignal.Job{Worker: w.opts.WorkerID, JobID: it.d.Job.ID})
}

func (w *Worker) callOnDeath(ctx context.Context, d Death) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("death handler panicked", "job", d.Job.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	w.opts.OnDeath(ctx, d)
}

func snapshot(a *Attempt) JobSnapshot {
	return JobSnapshot{
		ID: a.ID, Queue: a.Queue, Kind: a.Kind, Payload: a.Payload, Headers: a.Headers, Priority: a.Priority,
		Attempt: a.Attempt, CrashAttempt: a.CrashAttempt, MaxAttempts: a.MaxAttempts, Fence: a.Fence,
		Redrives: a.redrives, Created: a.Created, Deadline: a.Deadline,
	}
}

func jobSnapshot(ref keys.Ref, j *store.Job) JobSnapshot {
	return JobSnapshot{
		ID: ref.String(), Queue: ref.Queue, Kind: j.Kind, Payload: j.Payload, Headers: j.Headers, Priority: j.Priority,
		Attempt: j.Attempt, CrashAttempt: j.CrashAttempt, MaxAttempts: j.MaxAttempts, Fence: j.Fence,
		Redrives: j.Redrives, Created: j.Created, Deadline: j.Deadline,
	}
}
