package isolated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// proxy is the child's end of the protocol: it writes frames to the parent
// and sends each step checkpoint and lease confirmation there, waiting for
// its answer.
type proxy struct {
	out io.Writer
	wmu sync.Mutex // one frame at a time

	mu      sync.Mutex
	seq     uint64
	waiting map[uint64]chan answerMsg
	ended   bool
	gone    chan struct{} // closed when the parent's stream ends
	// lease takes the lease's time left from the parent's answers of
	// seq 0, the latest only (watchLease)
	lease   chan time.Duration
	garbled error // why the stream was given up, if not for its end (set before gone is closed)
	// unread, when set, reports whether the parent's frames wait unread
	// in the pipe (watchLease)
	unread func() bool
}

// unreadRecheck is how soon watchLease looks again at a lease that ran
// out with frames of the parent still unread: readAnswers reads them
// meanwhile, and a renewal among them resets the watch.
const unreadRecheck = 10 * time.Millisecond

// goneErr is why the parent's stream ended, once gone is closed: the
// parent went away (ErrParentGone), or it sent what the child cannot
// read, a protocol error.
func (p *proxy) goneErr() error {
	if p.garbled != nil {
		return fmt.Errorf("isolated: reading from the parent: %w", p.garbled)
	}
	return ErrParentGone
}

// send writes one frame to the parent.
func (p *proxy) send(typ byte, msg any) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return writeFrame(p.out, typ, msg)
}

// childHost is the host of the child's step state (attempt.Host): its
// commits and a strict step's confirmation go to the parent, which holds
// the lease. The child knows nothing of the lease itself (the parent's
// lease control cancels it when lost); it spawns children of any valid
// kind (their kinds are not checked against a registry here).
type childHost struct {
	p    *proxy
	lose func()
}

func (h *childHost) Known(string) bool { return true }

func (h *childHost) Send(c store.Checkpoint) store.CheckpointResult { return h.p.checkpoint(c) }

func (h *childHost) Lose() { h.lose() }

func (h *childHost) Committed(string, int) {}

func (h *childHost) Lost() error { return nil }

func (h *childHost) Expired() bool { return false }

// LeaseLeft: the child's host does not reckon the lease (its parent does,
// and tells serve's watch).
func (h *childHost) LeaseLeft() (time.Duration, <-chan struct{}) { return 0, nil }

func (h *childHost) Confirm(ctx context.Context) error { return h.p.confirm(ctx) }

// Relay: a child has no Redis connection (flow.Join, which asks it, fails
// in a child before).
func (h *childHost) Relay(context.Context, []keys.Partition) bool { return false }

// checkpoint sends a checkpoint to the parent, which commits it with its
// own lease, so it is fenced exactly as in a worker.
func (p *proxy) checkpoint(c store.Checkpoint) store.CheckpointResult {
	a, err := p.ask(context.Background(), "a checkpoint", frameCheckpoint, func(seq uint64) any {
		return checkpointMsg{Seq: seq, Field: c.Field, Record: c.Record, Mode: c.Mode, Commit: c.Commit, Effects: c.Effects}
	})
	if err != nil {
		return store.CheckpointResult{Err: err}
	}
	return a.result()
}

// confirm asks the parent to confirm its lease with Redis (one fenced
// renewal there, as a strict step in a worker makes): nil when the
// attempt still holds the job, store.ErrStale when it does not (the
// parent then cancels the attempt and kills this process).
func (p *proxy) confirm(ctx context.Context) error {
	a, err := p.ask(ctx, "a lease confirmation", frameConfirm, func(seq uint64) any { return confirmMsg{Seq: seq} })
	if err != nil {
		return err
	}
	return a.result().Err
}

// ask sends the parent the frame msg makes of its sequence number, and
// waits for the answer (or for ctx's end, or the parent's).
func (p *proxy) ask(ctx context.Context, what string, typ byte, msg func(seq uint64) any) (answerMsg, error) {
	ch := make(chan answerMsg, 1)
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return answerMsg{}, p.goneErr()
	}
	p.seq++
	seq := p.seq
	p.waiting[seq] = ch
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		delete(p.waiting, seq)
		p.mu.Unlock()
	}
	if err := p.send(typ, msg(seq)); err != nil {
		forget()
		return answerMsg{}, fmt.Errorf("isolated: sending %s: %w", what, err)
	}
	select {
	case a := <-ch:
		return a, nil
	case <-p.gone:
		return answerMsg{}, p.goneErr()
	case <-ctx.Done():
		forget()
		return answerMsg{}, context.Cause(ctx)
	}
}

// readAnswers delivers the parent's answers to the checkpoints waiting for
// them until the parent's stream ends, then cancels the attempt.
func (p *proxy) readAnswers(in io.Reader, cancel context.CancelCauseFunc) {
	defer func() {
		p.mu.Lock()
		p.ended = true
		p.mu.Unlock()
		close(p.gone)
		cancel(p.goneErr())
	}()
	for {
		_, body, err := readFrame(in, maxFrameIn, string(rune(frameAnswer)))
		if err != nil {
			// The end of the stream, even in a frame, is the parent's
			// going away; anything else it sent is garbled.
			var long *tooLongError
			if errors.As(err, &long) || errors.Is(err, errProtocol) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				p.garbled = err
			}
			return
		}
		var a answerMsg
		if err := decode(body, &a); err != nil {
			p.garbled = err
			return
		}
		if a.Seq == 0 { // no checkpoint's: the lease moved
			if a.LeaseMS > 0 {
				p.leaseLeft(time.Duration(a.LeaseMS) * time.Millisecond)
			}
			continue
		}
		p.mu.Lock()
		ch := p.waiting[a.Seq]
		delete(p.waiting, a.Seq)
		p.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// result is the checkpoint result an answer stands for.
func (a answerMsg) result() store.CheckpointResult {
	switch a.Code {
	case "":
		return store.CheckpointResult{}
	case answerStale:
		return store.CheckpointResult{Err: store.ErrStale}
	case answerEffect:
		return store.CheckpointResult{Err: &sluicetype.EffectError{Msg: a.Error}}
	case answerInvalid:
		// the worker's words, matching ErrInvalidEffect
		msg, ok := strings.CutPrefix(a.Error, sluicetype.ErrInvalidEffect.Error())
		if !ok {
			msg = ": " + a.Error
		}
		return store.CheckpointResult{Err: fmt.Errorf("%w%s", sluicetype.ErrInvalidEffect, msg)}
	}
	return store.CheckpointResult{Err: errors.New(workerErrPrefix + a.Error)}
}

// leaseLeft hands the lease's new time left to watchLease, replacing one
// it has not taken yet.
func (p *proxy) leaseLeft(d time.Duration) {
	for {
		select {
		case p.lease <- d:
			return
		default:
		}
		select {
		case <-p.lease:
		default:
		}
	}
}

// watchLease returns a channel closed when the lease, d from now, runs out
// with no later word from the parent (leaseLeft): the parent stopped or
// hung, and the reaper may give the job to another attempt.
func (p *proxy) watchLease(d time.Duration) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case d := <-p.lease:
				t.Reset(d)
			case <-t.C:
				// A renewal read meanwhile, or one still queued in
				// the pipe (this process was stopped while its parent
				// went on renewing): the lease did not run out.
				select {
				case d := <-p.lease:
					t.Reset(d)
					continue
				default:
				}
				if p.unread != nil && p.unread() {
					t.Reset(unreadRecheck)
					continue
				}
				close(out)
				return
			}
		}
	}()
	return out
}

// workerErrPrefix starts the error a child's call gets for one the worker
// made and Redis failed (session.failedIn looks for it).
const workerErrPrefix = "isolated: in the worker: "
