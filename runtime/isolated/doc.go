// Package isolated runs a job's attempts in child OS processes: a process
// boundary for crash containment. A handler that segfaults, aborts, calls
// os.Exit or is killed by the OOM killer takes down its child, not the
// worker: the attempt counts as a crash (crash_attempt+1), like a panic, and
// a job that keeps killing its child is quarantined at the worker's crash
// limit while the worker's other jobs keep running.
//
// In the worker, Handler makes a runtime.Handler that starts a fixed
// command for each attempt (no shell; nothing of the job is put on its
// command line or in its environment, which is empty unless given), and
// Handlers routes the isolated kinds to such handlers:
//
//	resize, err := isolated.Handler(isolated.Command{Path: "/usr/local/bin/resizer"}, isolated.Options{})
//	handlers := isolated.Handlers{Kinds: map[string]runtime.Handler{"resize": resize}, Next: reg}
//	w, err := runtime.NewWorker(rdb, handlers, runtime.Options{})
//
// The child program registers ordinary flow handlers, durable steps
// included, and calls Main:
//
//	func main() {
//		reg := flow.NewRegistry()
//		_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[Resize]) error {
//			return step.Do(ctx, "thumbnail", func(ctx context.Context) error { return thumb(job.Args) })
//		})
//		isolated.Main(reg)
//	}
//
// # Lifetime of a child
//
// The child is started in a process group of its own. The worker kills
// the whole group (SIGKILL) when the attempt's context ends (timeout,
// deadline, lost lease, shutdown), when the child writes more than
// Options.MaxStdout or Options.MaxStderr (the attempt then fails with
// ErrOutputLimit; past MaxStderr the child is given Options.ExitGrace to
// exit first, a crash if it does, as a dying child writing its last
// words, or if its reply reports a panic or a crash), and in any case once the attempt is over, so that
// nothing the child started outlives its attempt (a process that leaves
// the group, with setsid, is beyond reach). A child that dies by a signal,
// exits, or closes its stdout without a valid reply is a crash: a
// *CrashError with the exit status and an excerpt of its stderr, recorded
// with error class "child_crash". So is a child that exits while a
// process it started still holds its stdout open, once Options.ExitGrace
// has passed. A panic in a Serve child is reported to
// the worker and recorded as a crash of class "panic", as in a worker (so
// is a *runtime.PanicError its handler returns), and a *CrashError its
// handler returns is a crash of the class it names.
// If the worker itself dies, a child running Main kills its process group
// as soon as its stdin ends, before or after its reply. If the worker is
// stopped (SIGSTOP) or hangs, nothing ends its stdin, and the reaper gives
// the job to another attempt once the lease is gone: the worker tells the
// child how long the lease has left, at the start and at each renewal, and
// a child running Main that hears of no renewal by then kills its process
// group when the lease runs out (ErrLeaseExpired from Serve). A child
// with a main of its own (set-up before the attempt) calls Serve and then
// Exit, which ends the process as Main does.
//
// Isolation contains crashes; it is not a security sandbox. The child runs
// as the worker's user, and its steps' effects write whatever Redis keys
// they name (through the worker).
//
// # Durable steps in the child
//
// The child has no Redis connection. Its step checkpoints (step.Run, Do,
// Commit, cursors, with their effects, flow.FollowUp's included) are sent
// to the worker, which commits each through the attempt's own state:
// fenced by the worker's lease, exactly as for an in-process handler,
// before the step call returns in the child. A checkpoint rejected as stale cancels the
// attempt on both sides. Effects staged with step.OnComplete travel with
// the reply and commit with the job's completion. A killed child's next
// attempt resumes after its last checkpoint. What needs Redis itself
// (flow.Spawn and flow.Join, lease control) belongs in the worker.
//
// # Protocol
//
// Handler and Serve speak it; a child in another language can too. Both
// directions carry frames: one byte of protocol version (Version, 1), one
// byte of frame type, the body's length (4 bytes, big endian) and the body,
// a msgpack map whose keys are the field names below.
//
//   - 'S' (worker to child, first): the attempt: ns, id, queue, kind,
//     payload, headers, priority, attempt, crash_attempt, max_attempts,
//     fence, lease_id, created, claimed, deadline, orphan, partitions,
//     steps (the checkpoints of earlier attempts, step name to record),
//     ends (when the worker will end the attempt, its timeout or the
//     job's deadline, whichever is first; absent or zero for neither: the
//     handler's ctx.Deadline in the child), lease_ms (how long the lease
//     has left, in ms; absent from a worker of a build before it).
//   - 'C' (child to worker): commit a checkpoint: seq (chosen by the child),
//     field, record, mode ("once" or "cursor"), commit, effects.
//   - 'K' (child to worker): confirm the lease with Redis before a strict
//     step's function runs: seq (from the checkpoints' sequence). The
//     worker makes one fenced renewal; a lease found gone cancels the
//     attempt. A worker of a build before this frame reads it as a
//     protocol error (a crash).
//   - 'A' (worker to child): the answer to checkpoint or confirmation seq:
//     code "" (done, or confirmed), "stale", "effect" or "error", with
//     error. An answer of seq 0 (no checkpoint's: the child numbers them
//     from 1) carries lease_ms, the lease's time left since a renewal
//     moved it; a child ends itself and its group once the last it heard
//     of runs out. A child of a build before it ignores it.
//   - 'R' (child to worker, last): the outcome: "ok" (with result and the
//     complete effects), "error" (message; retry_ms, when the kind's
//     retry policy in the child chose the delay before the retry: the
//     worker uses it as it would the policy of a handler of its own),
//     "snooze" and "rate_limited"
//     (delay_ms), "skip" and "revoke" (message: the reason), "park"
//     (reason, message; text: the returned error's, wrappers included,
//     which the worker records when present), "suspend" (the workflow's waits), "panic"
//     (message, stack) or "crash" (reason, message, stack: a *CrashError
//     returned; message is the returned error's, wrappers included).
//
// After its reply the child should exit; the worker closes its stdin,
// waits up to Options.ExitGrace and kills its process group.
package isolated
