// Package flow is the entry point of Sluice: typed job definitions,
// handler registration, the client that enqueues and inspects jobs, and the
// outcome errors a handler returns to decide what happens next.
//
// A job type is any struct with a stable Kind:
//
//	type SendEmail struct{ To string }
//	func (SendEmail) Kind() string { return "send_email" }
//
// Register a handler for it, enqueue it with a Client, and run a
// runtime.Worker with the same Registry:
//
//	reg := flow.NewRegistry()
//	err := flow.Register(reg, func(ctx context.Context, job *flow.Job[SendEmail]) error {
//		return send(ctx, job.Args.To)
//	})
//	client, err := flow.NewClient(rdb, flow.ClientOptions{Registry: reg})
//	res, err := client.Enqueue(ctx, SendEmail{To: "a@example.com"})
//
// What a handler returns decides the job's fate: nil completes it; Snooze,
// RateLimited, Skip and Revoke are the control-flow outcomes; any other
// error spends an attempt and retries with backoff until MaxAttempts, then
// archives the job. A panic counts as a crash (crash_attempt), like a lost
// worker, and a job that keeps crashing is quarantined.
package flow
