package isolated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// Main is the main function of a child program: it runs Serve and ends
// the process. Once the reply is written it waits for its stdin to end
// (the worker closes it once it has read the reply, or has died), or for
// the attempt's lease to run out with no word from the worker (stopped
// or hung), then kills its process group (itself included) if it leads
// one, as it does when a worker started it, and otherwise exits with
// status 0: what the handler started ends with the attempt even when the
// worker could not kill the group. On an error it prints it to stderr and
// exits with status 1, having killed its group first when the parent
// worker went away or fell silent past the lease before the reply.
// It is Exit(Serve(h)).
func Main(h runtime.Handlers) { Exit(Serve(h)) }

// Exit ends a child program whose own main called Serve, as Main ends
// its process: err is what Serve returned. After a reply (nil) it waits
// for the worker to close the child's stdin, or for the attempt's lease
// to run out with no renewal heard of (the worker stopped or hung, and
// the job may go to another attempt), then kills the child's process
// group if it leads one and exits with status 0; so what the handler
// started ends with the attempt, as under Main. On an error it prints it
// to stderr and exits with status 1, killing the group first when the
// parent went away or fell silent past the lease. Release what the main
// set up before calling it: it does not return.
func Exit(err error) {
	if err == nil {
		if sv := lastServed.Load(); sv != nil {
			select {
			case <-sv.gone:
			case <-sv.expired:
			}
		}
		killOwnGroup() // the child with it, when it leads the group
		os.Exit(0)
	}
	if errors.Is(err, ErrParentGone) || errors.Is(err, ErrLeaseExpired) {
		killOwnGroup()
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// Serve runs the one attempt a child process is started for: it reads the
// attempt from stdin, runs the handler of its kind from h (typically a
// *flow.Registry, with handlers registered as for a worker) and writes the
// outcome to stdout. Call it once per process.
//
// The handler's step calls (step.Run, step.Do, step.Commit, cursors,
// step.OnComplete, with their effects, flow.FollowUp included) work as in
// a worker: each checkpoint is committed by the parent worker, fenced by
// its lease, before the call returns. The child has no Redis connection of
// its own: flow.Spawn and flow.Join fail, and the lease-control calls of
// package runtime find no attempt; use them in the worker.
//
// Serve keeps stdout for the protocol: it moves the process's file
// descriptor 1 to stderr, so that stray prints, of Go code or of C
// libraries, cannot corrupt the reply. If the parent goes away (stdin ends
// before the reply) Serve cancels the handler's context and returns
// ErrParentGone without waiting for the handler: the caller should exit.
// So it does, with ErrLeaseExpired, when the attempt's lease runs out by
// the child's clock with no word from the parent of a renewal (the
// worker is stopped or hung, and the job may go to another attempt): the
// caller should end what the handler started as well, as Main does.
// If the parent sends what is not an answer (a garbled frame), Serve
// likewise returns a protocol error naming it, for Main to print.
// So that the child lives to see it, a write to its stderr once the
// parent is gone fails (EPIPE) instead of killing the process (SIGPIPE).
// A panic of the handler is reported to the parent, which counts it as a
// crash. Serve returns once the reply is written; a main of its own then
// calls Exit, which waits for the attempt to end as Main does (a main
// that exits at once leaves what the handler started running, even after
// the job went to another attempt).
func Serve(h runtime.Handlers) error {
	survivePipes()
	sv, err := serve(context.Background(), h, os.Stdin, protocolOut())
	if err == nil {
		lastServed.Store(&sv)
	}
	return err
}

// served is what a serve that wrote its reply leaves to wait for: the end
// of the parent's stream, and the lease's running out (nil: never).
type served struct {
	gone, expired <-chan struct{}
}

// lastServed is what the process's Serve left to wait for, for Exit.
var lastServed atomic.Pointer[served]

func serve(ctx context.Context, h runtime.Handlers, in io.Reader, out io.Writer) (served, error) {
	_, body, err := readFrame(in, maxFrameIn, string(rune(frameStart)))
	var m startMsg
	if err == nil {
		err = decode(body, &m)
	}
	if err != nil {
		return served{}, fmt.Errorf("isolated: reading the attempt: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &proxy{out: out, waiting: map[uint64]chan answerMsg{}, gone: make(chan struct{}), lease: make(chan time.Duration, 1)}
	if f, ok := in.(*os.File); ok {
		p.unread = func() bool { return unread(f) }
	}
	var expired <-chan struct{}
	if m.LeaseMS > 0 { // a parent of a build before it says nothing of the lease
		expired = p.watchLease(time.Duration(m.LeaseMS) * time.Millisecond)
	}
	go p.readAnswers(in, cancel)
	rdb := noRedis()
	defer func() { _ = rdb.Close() }()
	a, st, err := m.attempt(rdb, p, func() { cancel(runtime.ErrLeaseLost) })
	if err != nil {
		return served{}, err
	}
	hctx := attempt.With(ctx, st)
	if !m.Ends.IsZero() {
		hctx = ends{hctx, m.Ends}
	}
	replies := make(chan replyMsg, 1)
	go func() {
		var r replyMsg
		// sent from a defer: a handler that calls runtime.Goexit (t.FailNow
		// in it) unwinds through work's return, with its reply set by
		// work's recovery, and a send after the call would never happen:
		// the worker waited for a reply (renewing the lease) for ever
		defer func() { replies <- r }()
		workInto(hctx, h, a, st, &r)
	}()
	var r replyMsg
	select {
	case r = <-replies:
	case <-p.gone:
		return served{}, p.goneErr()
	case <-expired:
		cancel(runtime.ErrLeaseLost)
		return served{}, ErrLeaseExpired
	}
	select {
	case <-p.gone: // the handler saw its context cancelled for it
		return served{}, p.goneErr()
	default:
	}
	// a reply longer than the pipe holds waits for the parent to read it:
	// a parent that stopped never does, and the lease runs out meanwhile
	sent := make(chan error, 1)
	go func() { sent <- p.send(frameReply, r) }()
	select {
	case err := <-sent:
		if err != nil {
			return served{}, fmt.Errorf("%w: writing the reply: %v", ErrParentGone, err)
		}
	case <-expired:
		return served{}, ErrLeaseExpired
	}
	return served{gone: p.gone, expired: expired}, nil
}

// attempt builds the handler's view of the attempt and the step state
// whose checkpoints go to the parent.
func (m *startMsg) attempt(rdb *redis.Client, p *proxy, lose func()) (*runtime.Attempt, *attempt.State, error) {
	ref, ok := keys.ParseRef(m.NS, m.ID)
	if !ok {
		return nil, nil, fmt.Errorf("%w: job ID %q", errProtocol, m.ID)
	}
	lease := store.Lease{Local: ref.Local, LeaseID: m.LeaseID, Fence: m.Fence}
	rs := store.New(rdb, store.Config{NS: m.NS})
	st := attempt.New(rs, ref, lease, m.Steps)
	st.Layouts, st.Created, st.Claimed = store.FixedLayouts(rs, m.Partitions), m.Created, m.Claimed
	st.Host = &childHost{p: p, lose: lose}
	a := &runtime.Attempt{
		ID: m.ID, Queue: m.Queue, Kind: m.Kind, Payload: m.Payload, Headers: m.Headers,
		Priority: m.Priority, Attempt: m.Attempt, CrashAttempt: m.CrashAttempt, MaxAttempts: m.MaxAttempts,
		Fence: m.Fence, LeaseID: m.LeaseID, Created: m.Created, Claimed: m.Claimed, Deadline: m.Deadline,
		Orphan: m.Orphan,
	}
	return a, st, nil
}

// ends is the handler's context in the child when the worker will end the
// attempt at a known time: it reports that time as its deadline, as the
// handler's context in a worker does, and is cancelled by the worker
// (which kills the child then), not by a timer of its own: a reply the
// child sent on its own timer, just ahead of the worker's, would be read
// as the handler's error rather than as the timeout it is.
type ends struct {
	context.Context
	at time.Time
}

func (c ends) Deadline() (time.Time, bool) { return c.at, true }

// work runs the handler and turns what it did into a reply.
func work(ctx context.Context, h runtime.Handlers, a *runtime.Attempt, st *attempt.State) (r replyMsg) {
	workInto(ctx, h, a, st, &r)
	return r
}

// workInto is work, setting *r: also when the handler ends its goroutine
// with runtime.Goexit, where nothing after the call runs but the
// deferred functions.
//
// The handler is looked up inside the recovery: a Handlers of the
// caller's whose lookup panics crashes the attempt with a panic reply, as
// it does in a worker, rather than ending the child (a child_crash).
func workInto(ctx context.Context, h runtime.Handlers, a *runtime.Attempt, st *attempt.State, r *replyMsg) {
	normal := false
	defer func() {
		if p := recover(); p != nil {
			*r = replyMsg{Outcome: outcomePanic, Message: fmt.Sprint(p), Stack: debug.Stack()}
		} else if !normal {
			*r = replyMsg{Outcome: outcomePanic, Message: "handler called runtime.Goexit", Stack: debug.Stack()}
		}
	}()
	hd, ok := h.Handler(a.Kind)
	if !ok {
		normal = true
		*r = replyMsg{Outcome: outcomePark, Reason: "unknown_kind", Message: fmt.Sprintf("no handler registered for kind %q in the isolated child", a.Kind)}
		return
	}
	data, err := hd.Work(ctx, a)
	normal = true
	*r = reply(data, err, st)
	if p, ok := hd.(runtime.RetryPolicy); ok && r.Outcome == outcomeError {
		r.RetryMS = retryMS(p, a, err)
	}
}

// retryMS is the delay the handler's retry policy chose for the retry
// after err, for the worker to use as a worker uses a policy of the
// worker's (runtime.RetryPolicy); nil to leave it to the worker's Backoff
// (a negative delay, or a policy that panicked: logged to stderr, as a
// worker logs it).
func retryMS(p runtime.RetryPolicy, a *runtime.Attempt, err error) (ms *int64) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(os.Stderr, "isolated: retry policy panicked; using the worker's Backoff: %v\n%s", v, debug.Stack())
			ms = nil
		}
	}()
	d := p.RetryDelay(a.Attempt+1, err)
	if d < 0 {
		return nil
	}
	n := delayMS(d)
	return &n
}
