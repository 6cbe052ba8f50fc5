package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// NewJob is a job to add. Validation is the caller's; the store writes
// what it is given.
type NewJob struct {
	Local string
	// Generated: Local is a fresh random ID, not the caller's: an existing
	// job with it is another job (a collision, retried under a new ID), not
	// a repeat of this one.
	Generated bool
	// Relayed: a follow-up enqueued by an outbox relay under an ID derived
	// from its commit, or a child spawned by a parent's step under an ID
	// derived from the parent's. Its enqueue is remembered
	// (keys.Partition.FollowUp) as long as a relay or the step could repeat
	// it, so a repeat never enqueues it again, even once the job is
	// deleted.
	Relayed bool `msgpack:"-"`
	// Tick: a schedule's tick, under the ID the tick names. Its enqueue is
	// remembered as a relayed job's is, for a day (lua/lib.lua TICK_KEEP):
	// a scheduler that stalled after claiming the tick, and resumes after
	// another enqueued it and the job ran and was deleted, adds nothing.
	Tick        bool `msgpack:"-"`
	Kind        string
	Payload     []byte
	Headers     []byte
	RunAt       time.Time     // absolute due time; zero: now
	Delay       time.Duration // due after this long in store time
	MaxAttempts int
	Timeout     time.Duration
	Deadline    time.Time
	Priority    int
	Parent      *ParentRef // set for a job spawned by a parent job's step
	Limits      Limits
	Unique      Unique
	Sticky      Sticky
	// Hold is the job's fingerprint (kind and arguments) for the
	// quarantine hold: while a job with the same fingerprint is
	// quarantined in the partition, this one is added held, never due,
	// until that one is released or deleted; with a Deadline, due then,
	// and archived (deadline_exceeded) by the claim that meets it. "": no
	// hold.
	Hold string
}

// Sticky routes a job to a preferred worker. Mode says what happens while
// that worker does not claim it: "w" it waits for ever, "a" any worker may
// take it after After, "f" it is archived ('sticky_unavailable') after
// After.
type Sticky struct {
	Worker string
	Mode   string
	After  time.Duration
}

// Limits are a job's flow-control settings (lua/lib_limits.lua, flow control).
type Limits struct {
	ConcurrencyKey   string // at most ConcurrencyLimit jobs of this key run at once
	ConcurrencyLimit int
	RateClass        string // token bucket: RateJobs per RatePer, burst RateBurst
	RateJobs         int
	RatePer          time.Duration
	RateBurst        int
}

// Unique makes a job unique by Key: while a job holds the key (until it
// finishes, or for TTL when TTL > 0), enqueueing another with the same key
// adds nothing. OnDuplicate then says what happens to the existing job:
// "" nothing, "replace" (its arguments become the new ones) or "debounce"
// (its run time moves to the new one's), when it has not started yet.
type Unique struct {
	Key         string
	TTL         time.Duration
	OnDuplicate string
}

// ParentRef ties a spawned job to the parent waiting for it.
type ParentRef struct {
	Ref  keys.Ref // the parent
	Step string   // the step that spawned the job
}

// EnqueueResult says what an enqueue did with one job.
type EnqueueResult struct {
	Status EnqueueStatus
	// Local is set when the job's generated ID was taken and it was
	// enqueued under this one instead (or sent under it, when Failed).
	Local    string
	Existing string // for Held: the ID (in the partition) of the job holding the key
	// HeldBy is set, with Added, when the job was added held behind this
	// quarantined job (its ID in the partition): NewJob.Hold.
	HeldBy string
	Err    error // ErrConflict for Conflicted; the call's error for Failed
}

// MaxConcurrencyLimit is the largest concurrency limit a job's hash
// keeps: the largest whole number the scripts read (a Lua number, 2^53 -
// 1). A larger limit is written as this one, which no partition's
// running jobs ever reach either.
const MaxConcurrencyLimit = 1<<53 - 1

// DefaultMaxAttempts is the max attempts of a job whose hash has no 'ma'
// field: the scripts leave it out for the default, to keep pending jobs
// small (lua/lib.lua DEFAULT_MAX_ATTEMPTS).
const DefaultMaxAttempts = 25

// maxEnqueueBatch bounds the jobs one enqueue script call adds, so a huge
// batch (a fan-out of 10,000 children) never blocks Redis for long.
const maxEnqueueBatch = 1000

// Enqueue adds jobs to one partition, with one result per job: in one
// round trip for up to maxEnqueueBatch jobs (and maxCallBytes of their
// data), in consecutive calls of that size beyond. Each call is atomic.
// When one fails, Enqueue returns its error with every job's result all
// the same: the earlier calls' jobs
// were added (enqueueing the same IDs again is a no-op for them); the
// jobs of the failed call (of a failed retry under new IDs: the jobs it
// retried) and those of the calls not made are Failed, with the error
// (Redis may have run the failed call if only its reply was lost).
//
// A generated ID (Generated) that another job already has, which two
// producers drawing the same random bits in the same millisecond could
// cause, is never written over: the job is enqueued again with a random
// suffix added to its ID, and its result's Local says so.
//
// A job whose run time or deadline is outside [MinTime, MaxTime] is not
// sent: it is Failed with ErrTimeOutOfRange, and the others are enqueued.
// (Past MaxTime, Redis would write the time in exponent form, which no
// reader takes back: the job could not be read.)
func (s *Store) Enqueue(ctx context.Context, p keys.Partition, jobs []NewJob) ([]EnqueueResult, error) {
	for i := range jobs {
		if jobs[i].timeErr() != nil {
			return s.enqueueInRange(ctx, p, jobs)
		}
	}
	out := make([]EnqueueResult, 0, len(jobs))
	for len(jobs) > 0 {
		n, _ := callCut(len(jobs), maxEnqueueBatch, func(i int) int { return jobs[i].size() })
		res, err := s.enqueue(ctx, p, jobs[:n])
		if err == nil {
			err = s.retryTaken(ctx, p, jobs[:n], res)
		}
		if err != nil {
			if res == nil {
				res = make([]EnqueueResult, n)
				for i := range res {
					res[i].Status = taken // not added: failed below
				}
			}
			out = append(out, res...)
			for range jobs[n:] {
				out = append(out, EnqueueResult{Status: taken})
			}
			for i := range out {
				if out[i].Status == taken { // the call failed, or no new ID was found
					out[i] = EnqueueResult{Status: Failed, Err: err, Local: out[i].Local}
				}
			}
			return out, err
		}
		out = append(out, res...)
		jobs = jobs[n:]
	}
	return out, nil
}

// enqueueInRange enqueues the jobs of jobs whose times are in range, and
// fails the others.
func (s *Store) enqueueInRange(ctx context.Context, p keys.Partition, jobs []NewJob) ([]EnqueueResult, error) {
	out := make([]EnqueueResult, len(jobs))
	var ok []NewJob
	var at []int
	for i := range jobs {
		if err := jobs[i].timeErr(); err != nil {
			out[i] = EnqueueResult{Status: Failed, Err: err}
			continue
		}
		ok, at = append(ok, jobs[i]), append(at, i)
	}
	if len(ok) == 0 {
		return out, nil
	}
	res, err := s.Enqueue(ctx, p, ok) // one result per job, even with an error
	for k, i := range at {
		out[i] = res[k]
	}
	return out, err
}

// timeErr is ErrTimeOutOfRange for a run time or deadline outside
// [MinTime, MaxTime], else nil.
func (j *NewJob) timeErr() error {
	what, at := "run time", j.RunAt
	if j.RunAt.IsZero() || TimeInRange(j.RunAt) {
		if j.Deadline.IsZero() || TimeInRange(j.Deadline) {
			return nil
		}
		what, at = "deadline", j.Deadline
	}
	return fmt.Errorf("%w: %s %v of job %q is not within %v..%v", ErrTimeOutOfRange, what, at, j.Local, MinTime, MaxTime)
}

// maxIDRetries bounds the new IDs tried for one job whose generated ID was
// taken; running out means something else is wrong.
const maxIDRetries = 5

// retryTaken enqueues again, under new IDs, the jobs of res whose
// generated ID was taken, and fills in their results.
func (s *Store) retryTaken(ctx context.Context, p keys.Partition, jobs []NewJob, res []EnqueueResult) error {
	if !slices.ContainsFunc(res, func(r EnqueueResult) bool { return r.Status == taken }) {
		return nil // the common case: no copy
	}
	jobs = slices.Clone(jobs) // the caller's stay as they were
	for range maxIDRetries {
		var again []NewJob
		var at []int
		for i, r := range res {
			if r.Status == taken {
				j := jobs[i]
				j.Local += "-" + keys.NewLocal()[10:]
				again, at = append(again, j), append(at, i)
			}
		}
		if len(again) == 0 {
			return nil
		}
		more, err := s.enqueue(ctx, p, again)
		if err != nil {
			// the IDs they were sent under: Redis may have added them
			for k, i := range at {
				res[i].Local = again[k].Local
			}
			return err
		}
		for k, i := range at {
			jobs[i], res[i] = again[k], more[k]
			res[i].Local = again[k].Local
		}
	}
	for i := range res {
		if res[i].Status == taken {
			res[i].Local = "" // every ID it was sent under holds another job: it was not added
		}
	}
	return fmt.Errorf("sluice: no free job ID after %d tries", maxIDRetries)
}

// size is about how many bytes j's fields take in an enqueue call: every
// string it sends counts, keys and names included (a caller's keys have
// no length limit, and a batch of long ones would pass maxCallBytes
// uncounted).
func (j *NewJob) size() int {
	n := len(j.Local) + len(j.Kind) + len(j.Payload) + len(j.Headers) + len(j.Hold) + 128
	n += len(j.Unique.Key) + len(j.Limits.ConcurrencyKey) + len(j.Limits.RateClass) + len(j.Sticky.Worker)
	if j.Parent != nil {
		n += len(j.Parent.Ref.Queue) + len(j.Parent.Ref.Local) + len(j.Parent.Step) + 8 // the index, separators
	}
	return n
}

func (s *Store) enqueue(ctx context.Context, p keys.Partition, jobs []NewJob) ([]EnqueueResult, error) {
	fields := newArgList(len(jobs) * 64) // a plain job: 5 fields
	for _, j := range jobs {
		fields.str(j.Local)
		fields.str(j.Kind)
		fields.bytes(j.Payload)
		switch {
		case j.Relayed:
			fields.str("f")
		case j.Tick:
			fields.str("t")
		case !j.Generated:
			fields.str("c") // the caller's ID: a job with it may be this one again
		default:
			if t, ok := keys.LocalTime(j.Local); ok {
				fields.int(t.UnixMilli())
			} else {
				fields.str("g") // a fresh ID, whose time is unknown
			}
		}
		if j.plain() {
			fields.str("")
			continue
		}
		fields.str("x")
		fields.int(unixMSUp(j.RunAt)) // never due before the time asked, as timers
		fields.int(msUp(j.Delay))
		fields.int(int64(j.MaxAttempts))
		fields.int(ms(j.Timeout))
		fields.int(deadlineMS(j.Deadline))
		fields.int(int64(j.Priority))
		fields.bytes(j.Headers)
		if pa := j.Parent; pa != nil {
			fields.str(pa.Ref.String())
			fields.str(pa.Ref.Prefix())
			fields.str(pa.Step)
			fields.str(pa.Ref.Local)
		} else {
			fields.str("")
			fields.str("")
			fields.str("")
			fields.str("")
		}
		l := j.Limits
		fields.str(l.ConcurrencyKey)
		// the scripts read a limit of 2^53 or more as corrupt data, a limit
		// of 1 (lua/lib.lua count_of): no partition runs that many jobs
		fields.int(min(int64(l.ConcurrencyLimit), MaxConcurrencyLimit))
		fields.str(l.RateClass)
		fields.int(int64(l.RateJobs))
		fields.int(msUp(l.RatePer)) // never a faster rate than asked
		fields.int(int64(l.RateBurst))
		fields.str(j.Unique.Key)
		fields.int(msUp(j.Unique.TTL)) // never a shorter hold than asked
		fields.str(j.Unique.OnDuplicate)
		fields.str(j.Sticky.Worker)
		fields.str(j.Sticky.Mode)
		fields.int(ms(j.Sticky.After))
		fields.str(j.Hold)
	}
	args := append(s.callArgs(p, 2), len(jobs), fields.done())
	v, err := s.send(ctx, lua.Enqueue, newCallID(), args).Result()
	if err != nil {
		return nil, err
	}
	if n, ok := v.(int64); ok { // every job added
		if n != int64(len(jobs)) {
			return nil, fmt.Errorf("%w: %d jobs added of %d", ErrMalformed, n, len(jobs))
		}
		return make([]EnqueueResult, len(jobs)), nil // Added is the zero Status
	}
	answers, err := strs(v)
	if err != nil {
		return nil, err
	}
	if len(answers) != len(jobs) {
		return nil, fmt.Errorf("%w: %d enqueue answers for %d jobs", ErrMalformed, len(answers), len(jobs))
	}
	out := make([]EnqueueResult, len(answers))
	for i, a := range answers {
		out[i], err = enqueueResult(a)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// plain reports whether every setting of j but its ID, kind and payload is
// at its default, so that the enqueue script is sent only those
// (lua/enqueue.lua).
func (j *NewJob) plain() bool {
	return j.RunAt.IsZero() && j.Delay == 0 && j.MaxAttempts == DefaultMaxAttempts && j.Timeout == 0 &&
		j.Deadline.IsZero() && j.Priority == 0 && len(j.Headers) == 0 && j.Parent == nil &&
		j.Limits == (Limits{}) && j.Unique == (Unique{}) && j.Sticky == (Sticky{}) && j.Hold == ""
}
