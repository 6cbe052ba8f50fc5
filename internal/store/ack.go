package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// Code names an attempt's outcome; lua/ack.lua documents each transition.
type Code string

// Outcome codes.
const (
	CodeOK       Code = "ok"
	CodeRetry    Code = "retry"
	CodeFree     Code = "free"
	CodeSnooze   Code = "snooze"
	CodeSkip     Code = "skip"
	CodeRevoke   Code = "revoke"
	CodeDeadline Code = "deadline"
	CodeCrash    Code = "crash"
	CodeRelease  Code = "release"
	CodePark     Code = "park"
	// CodeSuspend suspends a workflow on its waits (Ack.Data, built by
	// SuspendSpec) until a timer or a signal wakes it (lua/lib_waits.lua).
	CodeSuspend Code = "suspend"
	CodeWait    Code = "wait"
)

// Ack is the outcome of one attempt.
type Ack struct {
	Lease
	Code    Code
	Delay   time.Duration // retry backoff, snooze, rate-limit wait
	Message string        // error text
	Data    []byte        // result (ok) or stack (retry, crash)
	Reason  string        // error class (retry, crash) or archive reason (park)
	// Effects commit with an ok outcome, all or nothing; Commit names the
	// commit uniquely for relayed effects.
	Effects []sluicetype.Effect
	Commit  string
}

// AckResult is what one ack did: the job's new state, or ErrStale.
type AckResult struct {
	State string
	Err   error
}

// Ack records outcomes of one partition in one round trip. It also
// returns how many outbox entries the outcomes wrote. Each outcome stands
// alone: a completion whose effects are invalid fails its own attempt
// (a retry, reason "effect", as when Redis finds them unable to apply)
// and no other outcome of the call. A retry of the same acks is the same
// call (contentID): a reply lost the first time is answered, not
// applied again.
//
// Acks with more than maxCallBytes of data go in consecutive calls, each
// with its own content ID. When a call fails, the results of the calls
// before it stand, the others carry its error, and so does the return:
// a caller retries only those (runtime's flushAcks).
func (s *Store) Ack(ctx context.Context, p keys.Partition, acks []Ack) ([]AckResult, int, error) {
	res, outboxed, _, err := s.AckClaim(ctx, p, acks, nil)
	return res, outboxed, err
}

// AckClaim is Ack, and when claim is not nil, a claim (Claim) in the
// same round trip, run after the outcomes (lua/ack.lua): a worker acks
// the jobs of slots it freed and claims for those slots in one call
// (docs/design/ack-claims.md). The claim needs an ID (ClaimRequest.ID):
// the same acks and claim sent again, after an error, are the same call,
// answered the jobs its first run leased. With acks of more than one
// call, the claim rides the last; an error means it may not have run,
// and the caller sends again the acks it failed with the same claim.
// An error with every ack's result set (none carrying it) is the claim's
// alone: the outcomes were written, and the claim's reply could not be
// read (ErrMalformed), as Claim would answer it.
func (s *Store) AckClaim(ctx context.Context, p keys.Partition, acks []Ack, claim *ClaimRequest) ([]AckResult, int, ClaimResult, error) {
	if claim != nil && claim.ID == "" {
		return nil, 0, ClaimResult{}, errClaimWithoutID
	}
	cut := func() int { return callCut(len(acks), len(acks), func(i int) int { return acks[i].size() }) }
	n := cut()
	if n == len(acks) {
		return s.ack(ctx, p, acks, claim) // the common case: one call
	}
	out := make([]AckResult, 0, len(acks))
	outboxed := 0
	for ; len(acks) > 0; n = cut() {
		var c *ClaimRequest
		if n == len(acks) {
			c = claim
		}
		res, ob, cr, err := s.ack(ctx, p, acks[:n], c)
		if res == nil { // the call failed: it and the ones after it carry its error
			for range acks {
				out = append(out, AckResult{Err: err})
			}
			return out, outboxed, ClaimResult{}, err
		}
		out, outboxed, acks = append(out, res...), outboxed+ob, acks[n:]
		if c != nil {
			return out, outboxed, cr, err
		}
	}
	return out, outboxed, ClaimResult{}, nil
}

// errClaimWithoutID refuses a claim sent with acks without an ID: a
// re-send of the call could not be answered the jobs it leased.
var errClaimWithoutID = errors.New("sluice: a claim sent with acks needs an ID (ClaimRequest.ID)")

// size is about how many bytes a's fields take in an ack call.
func (a *Ack) size() int {
	return len(a.Local) + len(a.LeaseID) + len(a.Message) + len(a.Data) + len(a.Reason) + 64
}

func (s *Store) ack(ctx context.Context, p keys.Partition, acks []Ack, claim *ClaimRequest) ([]AckResult, int, ClaimResult, error) {
	fields := newArgList(48 * len(acks)) // a plain completion: ID, lease ID, fence, 'k'
	var effects []any
	id := newContentID()
	for _, a := range acks {
		id.add(a.Local)
		id.add(a.LeaseID)
		id.addInt(a.Fence)
		id.add(string(a.Code))
		id.add(a.Message)
		fields.str(a.Local)
		fields.str(a.LeaseID)
		fields.int(a.Fence)
		if a.Code == CodeOK && len(a.Data) == 0 && len(a.Effects) == 0 {
			fields.str("k") // a plain completion (lua/ack.lua)
			continue
		}
		fx, err := s.appendEffects(effects, p, a.Local, a.Commit, a.Effects)
		if err != nil && a.Code == CodeOK {
			a.Code, a.Reason, a.Message, a.Data = CodeRetry, "effect", "completion effects failed: "+err.Error(), nil
		}
		if err != nil { // effects commit only with a completion
			fx = append(effects, 0)
		}
		effects = fx
		delay := a.Delay
		if a.Code == CodeCrash {
			delay = s.cfg.CrashDelay
		}
		fields.str(string(a.Code))
		fields.int(ms(delay))
		fields.str(a.Message)
		fields.bytes(a.Data)
		fields.str(a.Reason)
	}
	var claimArgs []any
	if claim != nil {
		// its call ID first, as it would be sent alone: its record is kept
		// under it (lua/ack.lua), the outcomes' under this call's, which
		// is the same acks' alone
		claimArgs = append([]any{claim.call() + s.keep}, claim.args()...)
	}
	args := append(s.callArgs(p, 3+len(claimArgs)+len(effects)), len(acks), fields.done(), len(claimArgs))
	args = append(append(args, claimArgs...), effects...)
	v, err := s.send(ctx, lua.Ack, id.call(), args).Result()
	if err != nil {
		return nil, 0, ClaimResult{}, err
	}
	var cr ClaimResult
	if claim != nil {
		both, ok := v.([]any)
		if !ok || len(both) != 2 {
			return nil, 0, ClaimResult{}, fmt.Errorf("%w: ack and claim reply %T", ErrMalformed, v)
		}
		v = both[0]
		// a claim that cannot be read leased its jobs all the same: the
		// outcomes stand, the error says the claim's jobs are lost to
		// this worker (its caller's, as Claim's)
		cr, err = claimReply(both[1], claim)
	}
	out, outboxed, aerr := ackReply(v, len(acks))
	if aerr != nil {
		return nil, 0, ClaimResult{}, aerr
	}
	return out, outboxed, cr, err
}

// ackReply reads the outcomes part of an ack's reply (lua/ack.lua).
func ackReply(v any, n int) ([]AckResult, int, error) {
	if outboxed, ok := v.(int64); ok { // every outcome completed its job
		out := make([]AckResult, n)
		for i := range out {
			out[i].State = "completed"
		}
		return out, int(outboxed), nil
	}
	answers, err := strs(v)
	if err != nil || len(answers) != n+1 {
		return nil, 0, fmt.Errorf("%w: ack reply %v", ErrMalformed, v)
	}
	out := make([]AckResult, n)
	for i, a := range answers[:n] {
		out[i].State, out[i].Err = ackState(a)
	}
	outboxed, _ := strconv.Atoi(answers[n])
	return out, outboxed, nil
}
