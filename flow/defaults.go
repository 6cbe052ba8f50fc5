package flow

import "fmt"

// ArgsWithDefaults is implemented by a job type that declares its enqueue
// defaults once instead of at every call site: its queue, max attempts,
// timeout, priority, rate class, concurrency key, unique policy, ...
//
//	func (SendEmail) Defaults() []flow.EnqueueOption {
//		return []flow.EnqueueOption{
//			flow.WithQueue("email"),
//			flow.WithMaxAttempts(5),
//			flow.WithRateLimit("smtp", flow.RateLimit{Jobs: 100, Per: time.Second}),
//		}
//	}
//
// Defaults is called for every job of the type that is enqueued, spawned
// (Spawn) or committed as a follow-up (FollowUp), and may depend on the
// arguments. Its options apply first; options given with the job apply
// after them and so override them. A default that fails (an invalid
// value) fails the enqueue with an error naming the kind. Defaults may not
// set an ID (WithID): that is per job.
type ArgsWithDefaults interface {
	Args
	Defaults() []EnqueueOption
}

// applyDefaults applies the defaults of args, if its type declares any, to o.
func applyDefaults(args Args, o *enqueueOptions) error {
	d, ok := args.(ArgsWithDefaults)
	if !ok {
		return nil
	}
	for _, opt := range d.Defaults() {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return fmt.Errorf("defaults of kind %s: %w", args.Kind(), err)
		}
	}
	if o.id != "" {
		return fmt.Errorf("%w: defaults of kind %s set an ID; give IDs per job (WithID)", ErrInvalid, args.Kind())
	}
	return nil
}
