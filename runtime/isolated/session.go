package isolated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// session is one attempt's child process, seen from the worker.
type session struct {
	h       *handler
	st      *attempt.State
	cmd     *exec.Cmd
	begin   startMsg
	stdin   *os.File // our ends of the child's stdin and stdout
	stdout  *os.File
	stderr  *capture
	wmu     sync.Mutex     // one frame at a time on stdin
	pending sync.WaitGroup // frames being written to stdin, checkpoints being committed
	exited  chan struct{}  // closed once the child has exited (see awaitExit)
	// done is the attempt's context while run serves the child; quit is
	// set once run gives up on the child (killed or exited): checkpoints
	// and confirmations read after either are refused as stale.
	done context.Context
	quit atomic.Bool
	// failed holds the errors of the calls made for the child (commit,
	// confirm) that failed on Redis, the last maxFailed of them: a child's
	// error that quotes one carries it (failedIn, ChildError.Cause)
	failedMu sync.Mutex
	failed   []error

	reapOnce sync.Once
	state    *os.ProcessState
}

// readResult is how the child's stdout ended: with its reply, or err.
type readResult struct {
	reply *replyMsg
	err   error
}

// start starts the child of one attempt, in a process group of its own.
func (h *handler) start(a *runtime.Attempt, st *attempt.State) (*session, error) {
	var files []*os.File // the child's ends, then ours
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: h.cmd.Path, Args: append([]string{h.cmd.Path}, h.cmd.Args...), Dir: h.cmd.Dir, Env: h.cmd.Env,
		Stdin: inR, Stdout: outW, Stderr: errW, SysProcAttr: procAttr(),
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	for _, f := range []*os.File{inR, outW, errW} {
		_ = f.Close()
	}
	s := &session{
		h: h, st: st, cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}),
		stderr: newCapture(errR, h.opts.MaxStderr, h.opts.Stderr),
		begin: startMsg{
			ID: a.ID, Queue: a.Queue, Kind: a.Kind, Payload: a.Payload, Headers: a.Headers,
			Priority: a.Priority, Attempt: a.Attempt, CrashAttempt: a.CrashAttempt, MaxAttempts: a.MaxAttempts,
			Fence: a.Fence, LeaseID: a.LeaseID, Created: a.Created, Claimed: a.Claimed, Deadline: a.Deadline,
			Orphan: a.Orphan, Partitions: st.Layouts.Counts(), Steps: st.Checkpoints(),
		},
	}
	if st.Store != nil {
		s.begin.NS = st.Store.NS()
	}
	go func() {
		awaitExit(s)
		close(s.exited)
	}()
	return s, nil
}

// run sends the attempt, serves the child's checkpoints until its reply,
// and makes sure that nothing of the child's process group outlives the
// attempt: it is killed once the reply is in (after ExitGrace for the
// child to exit by itself), or at once when ctx ends or the child
// oversteps its output limits.
func (s *session) run(ctx context.Context) ([]byte, error) {
	s.done = ctx
	if d, ok := ctx.Deadline(); ok {
		s.begin.Ends = d
	}
	var moved <-chan struct{}
	if s.st.Host != nil {
		var left time.Duration
		left, moved = s.st.Host.LeaseLeft()
		if moved != nil {
			s.begin.LeaseMS = leaseMS(left)
		}
	}
	feeding := make(chan struct{}) // closed once the child is given up or done
	s.pending.Go(func() {
		s.send(frameStart, s.begin)
		s.feedLease(moved, feeding)
	})
	replies := make(chan readResult, 1)
	go func() { replies <- s.read() }()

	var r readResult
	var stopped error // why the child was stopped before its stdout ended
	// stderr over its limit: a child that is dying writes its last words
	// (a Go runtime's dump of every goroutine can pass a megabyte), and is
	// given ExitGrace to exit, a crash then; one still running after it is
	// stopped for its output
	full, overdue := s.stderr.full, (<-chan time.Time)(nil)
	held := false // the child exited, and a process it started kept its stdout open
	exited := s.exited
	var grace <-chan time.Time
wait:
	for {
		select {
		case r = <-replies:
			if r.err == nil {
				s.st.Decide() // what comes while the child exits changes nothing
			}
			break wait
		case <-ctx.Done():
			stopped = fmt.Errorf("isolated: child killed: %w", context.Cause(ctx))
			break wait
		case <-full:
			full = nil
			t := time.NewTimer(s.h.opts.ExitGrace)
			defer t.Stop()
			overdue = t.C
		case <-overdue:
			stopped = s.stderrOver()
			break wait
		case <-exited:
			// The child is gone. What it wrote is in the pipe, to be read
			// at once; if its stdout does not end within ExitGrace, a
			// process it started holds it open.
			exited = nil
			t := time.NewTimer(s.h.opts.ExitGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			held = true
			break wait
		}
	}
	close(feeding)
	if stopped != nil || held {
		s.quit.Store(true)
	}
	if stopped == nil && !held && (r.err == nil || errors.Is(r.err, io.EOF)) {
		s.awaitExit(ctx) // the child is done: let it exit by itself
	}
	killGroup(s.cmd.Process)
	ps := s.reap()
	_ = s.stdin.Close()
	_ = s.stdout.Close()
	if stopped != nil || held {
		r = <-replies
	}
	if held && errors.Is(r.err, os.ErrClosed) {
		r.err = io.EOF // the child exited without a reply; closing our end ended the read
	}
	s.pending.Wait()
	excerpt := s.stderr.finish(s.h.opts.ExitGrace)
	if stopped != nil {
		return nil, stopped
	}
	return s.verdict(r, ps, excerpt)
}

// verdict is the outcome of an attempt whose child ended its stdout by
// itself: with its reply, or with nothing valid, a crash.
func (s *session) verdict(r readResult, ps *os.ProcessState, excerpt []byte) ([]byte, error) {
	var long *tooLongError
	switch {
	case r.err == nil && s.stderr.over() && !crashed(r.reply):
		// written before the reply, read after it: the attempt fails for
		// it, unless the reply reports a crash, which the attempt is
		// whatever its child wrote before it
		return nil, s.stderrOver()
	case r.err == nil:
		return s.decide(r.reply)
	case errors.As(r.err, &long):
		return nil, fmt.Errorf("%w: stdout over %d bytes", ErrOutputLimit, s.h.opts.MaxStdout)
	}
	why := "exited without a reply"
	if !errors.Is(r.err, io.EOF) {
		why = "sent no valid reply (" + r.err.Error() + ")"
	}
	return nil, &sluicetype.CrashError{
		Reason:  "child_crash",
		Message: fmt.Sprintf("isolated child %s %s: %s", filepath.Base(s.h.cmd.Path), why, describe(ps)),
		Detail:  excerpt,
	}
}

func (s *session) stderrOver() error {
	return fmt.Errorf("%w: stderr over %d bytes", ErrOutputLimit, s.h.opts.MaxStderr)
}

// read reads the child's frames until its reply, serving its checkpoints
// and confirmations meanwhile. Everything the child writes counts against MaxStdout.
func (s *session) read() readResult {
	budget := s.h.opts.MaxStdout
	for {
		typ, body, err := readFrame(s.stdout, budget-headerLen, childFrames)
		if err != nil {
			return readResult{err: err}
		}
		budget -= headerLen + len(body)
		switch typ {
		case frameCheckpoint:
			var m checkpointMsg
			if err := decode(body, &m); err != nil {
				return readResult{err: err}
			}
			s.pending.Go(func() { s.send(frameAnswer, s.commit(m)) })
		case frameConfirm:
			var m confirmMsg
			if err := decode(body, &m); err != nil {
				return readResult{err: err}
			}
			s.pending.Go(func() { s.send(frameAnswer, s.confirm(m)) })
		case frameReply:
			var m replyMsg
			if err := decode(body, &m); err != nil {
				return readResult{err: err}
			}
			return readResult{reply: &m}
		}
	}
}

// commit commits a checkpoint of the child through the attempt's state:
// fenced by this worker's lease, and cancelling the attempt if it is lost.
func (s *session) commit(m checkpointMsg) answerMsg {
	a := answerMsg{Seq: m.Seq}
	if s.quit.Load() || s.done.Err() != nil {
		// The attempt is over for this worker (timeout, lost lease,
		// shutdown, output limit): the child is being killed, and what it
		// still sends must not take effect.
		a.Code, a.Error = answerStale, "isolated: the attempt was given up: "+describeStop(s.done)
		return a
	}
	err := s.st.Commit(m.Field, m.Record, m.Mode, m.Commit, m.Effects)
	var fx *sluicetype.EffectError
	switch {
	case err == nil:
	case errors.Is(err, store.ErrStale):
		a.Code, a.Error = answerStale, err.Error()
	case errors.As(err, &fx):
		a.Code, a.Error = answerEffect, fx.Msg
	case errors.Is(err, sluicetype.ErrInvalidEffect):
		// the handler's mistake, not Redis's: the child's step gets
		// ErrInvalidEffect, as a step in the worker does
		a.Code, a.Error = answerInvalid, err.Error()
	default:
		s.noteFailed(err)
		a.Code, a.Error = answerError, err.Error()
	}
	return a
}

// confirm confirms the attempt's lease with Redis for a strict step of the
// child (attempt.State.Check, strict): one fenced renewal, which cancels
// the attempt if the lease is gone.
func (s *session) confirm(m confirmMsg) answerMsg {
	a := answerMsg{Seq: m.Seq}
	if s.quit.Load() || s.done.Err() != nil {
		a.Code, a.Error = answerStale, "isolated: the attempt was given up: "+describeStop(s.done)
		return a
	}
	switch err := s.st.Check(s.done, true); {
	case err == nil:
	case errors.Is(err, store.ErrStale):
		a.Code, a.Error = answerStale, err.Error()
	default:
		s.noteFailed(err)
		a.Code, a.Error = answerError, err.Error()
	}
	return a
}

// feedLease tells the child how long the lease has left each time a
// renewal moves its end (an answer of seq 0), until stop is closed: a
// child whose worker stops (SIGSTOP, a hang) hears no more, and ends
// itself when the last end it heard of comes (serve), before another
// attempt can start.
func (s *session) feedLease(moved, stop <-chan struct{}) {
	for moved != nil {
		select {
		case <-stop:
			return
		case <-moved:
		}
		var left time.Duration
		left, moved = s.st.Host.LeaseLeft()
		s.send(frameAnswer, answerMsg{LeaseMS: leaseMS(left)})
	}
}

// leaseMS is a lease's time left in whole ms for the child, at least 1: 0
// would say nothing, where the lease has run out.
func leaseMS(left time.Duration) int64 { return max(left.Milliseconds(), 1) }

// send writes a frame to the child. An error means the child stopped
// reading: it is dead or about to be killed, and run sees to it.
func (s *session) send(typ byte, msg any) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = writeFrame(s.stdin, typ, msg)
}

// awaitExit closes the child's stdin and waits up to ExitGrace for it to
// exit.
func (s *session) awaitExit(ctx context.Context) {
	_ = s.stdin.Close()
	t := time.NewTimer(s.h.opts.ExitGrace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
	case <-ctx.Done():
	}
}

// reap waits for the child's exit and returns its status (nil if it cannot
// be had).
func (s *session) reap() *os.ProcessState {
	s.reapOnce.Do(func() { s.state, _ = s.cmd.Process.Wait() })
	return s.state
}

func describe(ps *os.ProcessState) string {
	if ps == nil {
		return "exit status unknown"
	}
	return ps.String()
}

// describeStop says why an attempt was given up.
func describeStop(ctx context.Context) string {
	if err := context.Cause(ctx); err != nil {
		return err.Error()
	}
	return "the child was stopped"
}

// maxFailed bounds the failed calls a session remembers.
const maxFailed = 16

// noteFailed remembers the error of a call made for the child that
// failed on Redis.
func (s *session) noteFailed(err error) {
	s.failedMu.Lock()
	defer s.failedMu.Unlock()
	if len(s.failed) == maxFailed {
		s.failed = s.failed[1:]
	}
	s.failed = append(s.failed, err)
}

// failedIn is the latest failed call whose error, as the child's proxy
// words it (answerMsg.result), is in msg: the child's error carries it.
func (s *session) failedIn(msg string) error {
	s.failedMu.Lock()
	defer s.failedMu.Unlock()
	for i := len(s.failed) - 1; i >= 0; i-- {
		if strings.Contains(msg, workerErrPrefix+s.failed[i].Error()) {
			return s.failed[i]
		}
	}
	return nil
}
