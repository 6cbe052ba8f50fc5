package store

import (
	"context"
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
	// CodeExpire is a crash the worker records for a lease it gave up by
	// its own clock (runtime giveBack): the reaper's work done first, with
	// the same orphan provenance (lua/lib_lifecycle.lua record_orphan).
	// A handler's outcome is never this code.
	CodeExpire  Code = "expire"
	CodeRelease Code = "release"
	CodePark    Code = "park"
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
	// Started is when the attempt's lease began, in store time (the
	// claim's reply gives it: the lease's first expiry less its length),
	// from which a completion tallies its run time; zero reads it from the
	// job, which costs the ack a field read.
	Started time.Time
	// Resend is how long after its first try the ack may be sent again
	// (runtime's flushAcks: until its attempt's lease runs out). The call's
	// record is kept that long and the store's keep more (the client's own
	// re-sends of the last try), so that a late try of a completion that
	// ran and deleted its job is answered completed, not stale. It is part
	// of the call's ID: every try of a call must give the same.
	Resend time.Duration
	// GiveUp, when set, is when the ack's tries stop (runtime's
	// flushAcks), by the caller's clock: Resend from when the outcome
	// was known, not from when its call started, which may be long after
	// (behind a partition's earlier acks, retried). Not sent.
	GiveUp time.Time
}

// AckResult is what one ack did: the job's new state, or ErrStale.
type AckResult struct {
	State string
	// Reason is "malformed" for a job the ack archived because its data
	// is corrupt (a counter it could not count), whatever its code asked:
	// else empty, the job's reason being the one its code gives.
	Reason string
	Err    error
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
	cut := func() (int, int) { return callCut(len(acks), len(acks), func(i int) int { return acks[i].size() }) }
	n, room := cut()
	if n == len(acks) {
		return s.ack(ctx, p, acks, room) // the common case: one call
	}
	out := make([]AckResult, 0, len(acks))
	outboxed := 0
	for ; len(acks) > 0; n, room = cut() {
		res, ob, err := s.ack(ctx, p, acks[:n], room)
		if err != nil {
			for range acks {
				out = append(out, AckResult{Err: err})
			}
			return out, outboxed, err
		}
		out, outboxed, acks = append(out, res...), outboxed+ob, acks[n:]
	}
	return out, outboxed, nil
}

// addStarted appends a's lease start (ms) to an ack call's fields: the empty
// string when not known.
func (a *Ack) addStarted(fields *argList) {
	if a.Started.IsZero() {
		fields.str("")
		return
	}
	fields.int(a.Started.UnixMilli())
}

// size is about how many bytes a's fields take in an ack call.
func (a *Ack) size() int {
	return len(a.Local) + len(a.LeaseID) + len(a.Message) + len(a.Data) + len(a.Reason) + 64
}

// ack sends acks in one call, its packed argument started with room
// bytes (callCut).
func (s *Store) ack(ctx context.Context, p keys.Partition, acks []Ack, room int) ([]AckResult, int, error) {
	fields := newArgList(room)
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
			a.addStarted(fields)
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
		if a.Code == CodeCrash || a.Code == CodeExpire {
			delay = s.cfg.CrashDelay
		}
		fields.str(string(a.Code))
		fields.int(ms(delay))
		fields.str(a.Message)
		fields.bytes(a.Data)
		fields.str(a.Reason)
		a.addStarted(fields)
	}
	args := append(s.callArgs(p, 2+len(effects)), len(acks), fields.done())
	args = append(args, effects...)
	keep, resend := s.keep, time.Duration(0)
	for _, a := range acks {
		resend = max(resend, a.Resend)
	}
	if resend > 0 {
		// the last try starts up to Resend after the first (and a retry's
		// pause later), and the client may re-send it for as long as the
		// store's keep after that
		keep = keepSuffix(resend + s.keepFor)
	}
	v, err := s.sendKept(ctx, lua.Ack, id.call()+keep, args).Result()
	if err != nil {
		return nil, 0, err
	}
	if outboxed, ok := v.(int64); ok { // every outcome completed its job
		out := make([]AckResult, len(acks))
		for i := range out {
			out[i].State = "completed"
		}
		return out, int(outboxed), nil
	}
	answers, err := strs(v)
	if err != nil || len(answers) != len(acks)+1 {
		return nil, 0, fmt.Errorf("%w: ack reply %v", ErrMalformed, v)
	}
	out := make([]AckResult, len(acks))
	for i, a := range answers[:len(acks)] {
		out[i] = ackResult(a)
	}
	outboxed, _ := strconv.Atoi(answers[len(acks)])
	return out, outboxed, nil
}
