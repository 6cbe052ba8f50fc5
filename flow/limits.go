package flow

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/names"
)

// RateLimit is a token bucket: Jobs per Per, with bursts of up to Burst
// (default Jobs).
type RateLimit struct {
	Jobs  int
	Per   time.Duration
	Burst int
}

// WithConcurrencyLimit lets at most limit jobs with this key run at once
// (e.g. per tenant). Jobs over the limit wait without spending attempts and
// without holding up other jobs. The limit is enforced in the claim script
// of each queue partition: with several partitions, each allows limit (see
// the README on limits and partitions). A job has one concurrency key:
// given twice, as any option, the later applies (a job's own options
// override its kind's defaults). A limit of 2^53 or more is kept as
// 2^53 - 1, the largest the scripts read: no limit in practice.
func WithConcurrencyLimit(key string, limit int) EnqueueOption {
	return func(o *enqueueOptions) error {
		if key == "" || limit <= 0 {
			return fmt.Errorf("%w: concurrency limit needs a key and a positive limit (got %s, %d)", ErrInvalid, names.Quote(key), limit)
		}
		o.limits.ConcurrencyKey, o.limits.ConcurrencyLimit = key, limit
		return nil
	}
}

// WithRateLimit puts the job in rate class class, whose jobs start at most
// at rate r (store time), per queue partition. Jobs over the rate wait
// without spending attempts and without holding up other classes, and
// start in the order they began to wait while the workers claim them
// within about a token's time: a job of the class that finds others
// waiting waits behind them. Every job
// of a class should carry the same rate. A job has one rate class: given
// twice, the later applies. If the store's clock steps back (a failover to
// a server whose clock is behind, an NTP step), the class refills nothing
// until the clock is past its last refill, for at most the time a full
// burst takes to refill; should the clock then step forward again, the
// class may start up to one burst more than its rate, and so again for
// each such step back and forward.
func WithRateLimit(class string, r RateLimit) EnqueueOption {
	return func(o *enqueueOptions) error {
		if class == "" || r.Jobs <= 0 || r.Per <= 0 || r.Burst < 0 {
			return fmt.Errorf("%w: rate limit needs a class, positive Jobs and Per, and Burst >= 0 (got %s, %+v)", ErrInvalid, names.Quote(class), r)
		}
		burst := r.Burst // r is shared by every use of this option: never write it
		if burst == 0 {
			burst = r.Jobs
		}
		o.limits.RateClass, o.limits.RateJobs, o.limits.RatePer, o.limits.RateBurst = class, r.Jobs, r.Per, burst
		return nil
	}
}

// OnDuplicate says what enqueueing a duplicate of a unique job does to the
// existing job while it has not started: it was never claimed, and it is
// of the duplicate's kind. An existing job that ran (snoozed, a workflow
// suspended in a step, one redriven) keeps its arguments and run time,
// which its checkpointed steps and timers were made with; one of another
// kind keeps the arguments it can read. The duplicate is reported
// (Enqueued.Duplicate) either way.
type OnDuplicate string

const (
	// KeepExisting leaves the existing job as it is (the default).
	KeepExisting OnDuplicate = ""
	// ReplaceArgs gives the existing job the new job's arguments, and with
	// them its WithQuarantineHold (or none): held copies are matched by
	// the arguments the job runs. When a job of those arguments is
	// quarantined already, the existing job is held behind it, as a new
	// job of them would be.
	ReplaceArgs OnDuplicate = "replace"
	// Debounce moves the existing job's run time to the new job's (its
	// WithDelay or WithRunAt) when that is later than now: each duplicate
	// pushes it back. A duplicate due now (no delay, or a WithRunAt
	// passed), or at or past the existing job's WithDeadline, leaves the
	// existing job's run time as it is: moved there, the job would be
	// archived at its deadline without running.
	Debounce OnDuplicate = "debounce"
)

// WithUnique makes the job unique by key: while a job holds the key —
// until it finishes when ttl is 0, else for ttl from its enqueue — another
// enqueue with the key adds nothing and returns the holder's ID with
// Enqueued.Duplicate and Enqueued.Unique set. With a ttl, that ID may name
// a job that finished and is gone (DiscardCompleted, or retention shorter
// than the ttl): the key is held all the same.
//
// A unique key is held within a queue partition, so on a partitioned queue
// the key places the job, by a stable hash, ahead of a WithID ID: jobs
// with one key meet on one partition whatever their IDs, and all but the
// holder are duplicates. Only WithPartitionKey goes before it (see there),
// so repeated enqueues of the same unique key must give the same partition
// key (or always none) to meet.
func WithUnique(key string, ttl time.Duration, on OnDuplicate) EnqueueOption {
	return func(o *enqueueOptions) error {
		if key == "" || ttl < 0 || (on != KeepExisting && on != ReplaceArgs && on != Debounce) {
			return fmt.Errorf("%w: unique key %s, ttl %s, on duplicate %s", ErrInvalid, names.Quote(key), ttl, names.Quote(string(on)))
		}
		o.unique.Key, o.unique.TTL, o.unique.OnDuplicate = key, ttl, string(on)
		o.uniqueArgs = false // the last of WithUnique and WithUniqueArgs wins
		return nil
	}
}

// WithQuarantineHold holds the job while a job of the same kind and
// arguments is quarantined: enqueued then, it is added, but waits (scheduled, never due,
// JobInfo.HeldBy naming the quarantined job) until an operator releases
// that job (admin.Client.Release, sluice release) or it is deleted, so that a
// payload that crashes workers cannot come straight back under a new ID
// and crash them again up to the crash limit. A held job with a
// WithDeadline is due at its deadline (JobInfo.RunAt) and archived then
// (deadline_exceeded) if still held, as WithDeadline says: a parent
// joining it is told, though no operator releases the twin. A copy enqueued before
// the quarantine (waiting, or running) is not held: it runs, and may be
// quarantined in turn. Jobs are matched by a
// fingerprint of kind and arguments, within a partition: on a queue of
// several partitions the fingerprint places the job (after a partition
// key or unique key), so copies meet; give every copy the option. A
// resize of the queue changes that placement: a copy of a payload
// quarantined before it may land on another partition, and is not held
// (docs/operations.md, "Resizing a queue"). The
// fingerprint places the job ahead of a WithID: the same ID with other
// arguments lands on another partition, where it is added rather than
// refused as ErrConflict.
func WithQuarantineHold() EnqueueOption {
	return func(o *enqueueOptions) error {
		o.hold = true
		return nil
	}
}

// WithUniqueArgs is WithUnique with a key derived from the job's kind and
// arguments.
func WithUniqueArgs(ttl time.Duration, on OnDuplicate) EnqueueOption {
	return func(o *enqueueOptions) error {
		if err := WithUnique("args", ttl, on)(o); err != nil {
			return err
		}
		o.uniqueArgs = true
		return nil
	}
}
