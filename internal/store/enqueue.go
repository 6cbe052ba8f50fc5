package store

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// NewJob is a job to add. Validation is the caller's; the store writes
// what it is given.
type NewJob struct {
	Local string
	// Generated: Local is a fresh random ID, so no existing job needs to be
	// looked for.
	Generated   bool
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
}

// ParentRef ties a spawned job to the parent waiting for it.
type ParentRef struct {
	Ref  keys.Ref // the parent
	Step string   // the step that spawned the job
}

// Enqueue adds jobs to one partition in one round trip. It returns one
// status per job; a Conflicted job's status comes with ErrConflict in errs.
func (s *Store) Enqueue(ctx context.Context, p keys.Partition, jobs []NewJob) ([]EnqueueStatus, []error, error) {
	args := make([]any, 0, 1+len(jobs)*15)
	args = append(args, len(jobs))
	for _, j := range jobs {
		chosen := "1"
		if j.Generated {
			chosen = "0"
		}
		args = append(args, j.Local, j.Kind, j.Payload, unixMS(j.RunAt), ms(j.Delay),
			j.MaxAttempts, ms(j.Timeout), unixMS(j.Deadline), j.Priority, j.Headers, chosen)
		if pa := j.Parent; pa != nil {
			args = append(args, pa.Ref.String(), pa.Ref.Prefix(), pa.Step, pa.Ref.Local)
		} else {
			args = append(args, "", "", "", "")
		}
	}
	v, err := s.run(ctx, lua.Enqueue, p, args...).Result()
	if err != nil {
		return nil, nil, err
	}
	answers, err := strs(v)
	if err != nil {
		return nil, nil, err
	}
	sts := make([]EnqueueStatus, len(answers))
	errs := make([]error, len(answers))
	for i, a := range answers {
		sts[i], errs[i] = enqueueStatus(a)
	}
	return sts, errs, nil
}
