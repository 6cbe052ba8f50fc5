package store

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
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
)

// Ack is the outcome of one attempt.
type Ack struct {
	Lease
	Code    Code
	Delay   time.Duration // retry backoff, snooze, rate-limit wait
	Message string        // error text
	Data    []byte        // result (ok) or stack (retry, crash)
	Reason  string        // error class (retry, crash) or archive reason (park)
}

// AckResult is what one ack did: the job's new state, or ErrStale.
type AckResult struct {
	State string
	Err   error
}

// Ack records outcomes of one partition in one round trip.
func (s *Store) Ack(ctx context.Context, p keys.Partition, acks []Ack) ([]AckResult, error) {
	args := make([]any, 0, 1+8*len(acks))
	args = append(args, len(acks))
	for _, a := range acks {
		args = append(args, a.Local, a.LeaseID, a.Fence, string(a.Code), ms(a.Delay), a.Message, a.Data, a.Reason)
	}
	v, err := s.run(ctx, lua.Ack, p, args...).Result()
	if err != nil {
		return nil, err
	}
	answers, err := strs(v)
	if err != nil {
		return nil, err
	}
	out := make([]AckResult, len(answers))
	for i, a := range answers {
		out[i].State, out[i].Err = ackState(a)
	}
	return out, nil
}
