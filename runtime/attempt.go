package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// Attempt is one execution of a job, as its handler sees it.
type Attempt struct {
	ID           string // the job ID (queue:partition:local)
	Queue        string
	Kind         string
	Payload      []byte
	Headers      []byte
	Priority     int
	Attempt      int // returned errors so far (0 on the first try)
	CrashAttempt int // crashes so far
	MaxAttempts  int
	Fence        int64  // this attempt's fencing token
	LeaseID      string // this attempt's lease ID
	Worker       string // the ID of the worker running it
	Created      time.Time
	Claimed      time.Time         // when this attempt's claim happened, in store time
	Deadline     time.Time         // zero: none
	Orphan       sluicetype.Orphan // set when the job was ever reclaimed after a crash

	ref   keys.Ref
	state *attempt.State // at stateMem
	// stateMem holds the step state (one allocation per job instead of two)
	stateMem attempt.State
	lease    time.Duration
	timeout  time.Duration // the job's own attempt timeout, if set
	// malformed is why the claim could not decode the job: it is parked
	// instead of run.
	malformed error
	// redrives is the job's redrive count as claimed: its death report is
	// that of this count and fence (store.DoneDeath)
	redrives int
	// suspect: the job has a crash on record and its handler is not
	// Contained; it counts in suspects (worker.go) while its handler runs.
	suspect bool
	settled atomic.Bool // its outcome is being acked
	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	// early is the cause of a stop that came before execute set cancel
	// (the lease lost while the attempt waited for its runner): execute
	// cancels the attempt with it at once
	early error
	// For the watch of a stopped attempt (watch, which also reads
	// ctl.ctx): whether the handler has returned, a channel closed then
	// (returnedChan: made for a watch only), and that the watch started.
	hasReturned bool
	returned    chan struct{}
	watchOnce   sync.Once
	leaseEnd    time.Time // our own estimate of when the lease runs out
	// leaseMoved, made by a reader of leaseEnd's moves (LeaseLeft, an
	// isolated child's feed), is closed when leaseEnd moves (movedLocked)
	leaseMoved chan struct{}
	// lapsed: expire gave the attempt up at leaseEnd (set under mu with
	// that decision, so that ExtendLease, which moves leaseEnd under mu,
	// either moves it first or finds the attempt given up)
	lapsed bool
	// renewing counts the renewals of the lease in flight (renewLoop,
	// ExtendLease); handBack: the worker gave the attempt up while some
	// were, and gives its job back once they have returned (abandon)
	renewing int
	handBack bool
	// renewals numbers the renewals of the lease sent so far (store.Renewal
	// Seq: Redis applies none older than one it applied), and reckoned is
	// the number of the one whose answer leaseEnd was last reckoned from:
	// an answer read after a later renewal's does not set it back
	renewals, reckoned int64
	// An ExtendLease under way (beginExtend): extending, one that shortens
	// the lease, and renewalsDone, when not nil, closed once no renewal is
	// in flight; lengthening, one that does not, and overlapped, a renewal
	// was in flight beside it, the earliest end one of them would give
	// being overlapEnd. oldestRenewal: when the oldest renewal in flight
	// started. extendBusy: an ExtendLease has the turn (takeExtendTurn),
	// and extendFree, when not nil, is closed when it gives the turn back.
	extending, lengthening, overlapped bool
	overlapEnd, oldestRenewal          time.Time
	renewalsDone                       chan struct{}
	extendBusy                         bool
	extendFree                         chan struct{}

	ctl  control // lease control, progress, tracked goroutines (control.go)
	host attemptHost
	vctx attemptCtx // the handler's context carries the attempt through it

	tel attemptTelemetry // its span (telemetry.go)
}

type attemptKey struct{}

// attemptCtx is the node of a handler's context that carries its attempt
// (AttemptFrom) and the attempt's step state (attempt.From): one node, a
// field of the Attempt, where two context.WithValue nodes cost two
// allocations per job.
type attemptCtx struct {
	context.Context
	a *Attempt
}

func (c *attemptCtx) Value(key any) any {
	switch {
	case key == attemptKey{}:
		return c.a
	case attempt.IsKey(key):
		return c.a.state
	}
	return c.Context.Value(key)
}

// AttemptFrom returns the attempt running in ctx, if any.
func AttemptFrom(ctx context.Context) (*Attempt, bool) {
	a, ok := ctx.Value(attemptKey{}).(*Attempt)
	return a, ok
}

func (a *Attempt) storeLease() store.Lease {
	return store.Lease{Local: a.ref.Local, LeaseID: a.LeaseID, Fence: a.Fence}
}

func newAttempt(p keys.Partition, j *store.Job, lease time.Duration) *Attempt {
	ref := keys.Ref{Partition: p, Local: j.Local}
	return &Attempt{
		ID: ref.String(), Queue: p.Queue, Kind: j.Kind, Payload: j.Payload, Headers: j.Headers,
		Priority: j.Priority, Attempt: j.Attempt, CrashAttempt: j.CrashAttempt,
		MaxAttempts: j.MaxAttempts, Fence: j.Fence, LeaseID: j.LeaseID,
		Created: j.Created, Claimed: j.LeaseExpiry.Add(-lease), Deadline: j.Deadline, Orphan: j.Orphan,
		ref: ref, lease: lease, timeout: j.Timeout, malformed: j.Malformed, redrives: j.Redrives,
	}
}
