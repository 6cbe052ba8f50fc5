package isolated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// proxy is the child's end of the protocol: it writes frames to the parent
// and sends each step checkpoint there, waiting for its answer.
type proxy struct {
	out io.Writer
	wmu sync.Mutex // one frame at a time

	mu      sync.Mutex
	seq     uint64
	waiting map[uint64]chan answerMsg
	ended   bool
	gone    chan struct{} // closed when the parent's stream ends
	garbled error         // why the stream was given up, if not for its end (set before gone is closed)
}

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
// commits go to the parent, which holds the lease. The child knows nothing
// of the lease itself (the parent's lease control cancels it when lost)
// and cannot confirm it with Redis; it spawns children of any valid kind
// (their kinds are not checked against a registry here).
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

func (h *childHost) Confirm(context.Context) error { return attempt.ErrNoConfirm }

// checkpoint sends a checkpoint to the parent, which commits it with its
// own lease, so it is fenced exactly as in a worker.
func (p *proxy) checkpoint(c store.Checkpoint) store.CheckpointResult {
	ch := make(chan answerMsg, 1)
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return store.CheckpointResult{Err: p.goneErr()}
	}
	p.seq++
	seq := p.seq
	p.waiting[seq] = ch
	p.mu.Unlock()
	m := checkpointMsg{Seq: seq, Field: c.Field, Record: c.Record, Mode: c.Mode, Commit: c.Commit, Effects: c.Effects}
	if err := p.send(frameCheckpoint, m); err != nil {
		p.mu.Lock()
		delete(p.waiting, seq)
		p.mu.Unlock()
		return store.CheckpointResult{Err: fmt.Errorf("isolated: sending a checkpoint: %w", err)}
	}
	select {
	case a := <-ch:
		return a.result()
	case <-p.gone:
		return store.CheckpointResult{Err: p.goneErr()}
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
		typ, body, err := readFrame(in, maxFrameIn)
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
		if typ != frameAnswer {
			p.garbled = fmt.Errorf("%w: unexpected frame type %q", errProtocol, typ)
			return
		}
		if err := decode(body, &a); err != nil {
			p.garbled = err
			return
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
	}
	return store.CheckpointResult{Err: errors.New("isolated: the parent could not commit the checkpoint: " + a.Error)}
}
