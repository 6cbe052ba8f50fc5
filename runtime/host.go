package runtime

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// attemptHost is the worker's side of an attempt's step state
// (attempt.Host): what a step boundary asks of the lease, and where a
// commit goes. It lives in the Attempt, so that giving the state its host
// allocates nothing.
type attemptHost struct{ a *Attempt }

func (h *attemptHost) Known(kind string) bool { return h.a.ctl.w.known(kind) }

// Send batches the checkpoint with others of its partition. While Redis
// does not answer, it is sent again until the attempt's lease could have
// run out, reckoned now: its call may wait behind the partition's
// earlier one, itself sent again.
func (h *attemptHost) Send(c store.Checkpoint) store.CheckpointResult {
	w := h.a.ctl.w
	c.GiveUp = w.leaseGiveUp(h.a)
	return w.checkpoints.do(h.a.ref.Partition, c)
}

func (h *attemptHost) Lose() { h.a.lose() }

// Committed counts a commit as progress, and has effects on other slots
// relayed.
func (h *attemptHost) Committed(_ string, outboxed int) {
	h.a.ctl.progressed()
	if outboxed > 0 {
		h.a.ctl.w.kickRelay()
	}
}

// Lost is what this worker knows of the lease, locally.
func (h *attemptHost) Lost() error { return h.a.lostCause() }

// Expired reports that the lease may have run out by this worker's clock.
func (h *attemptHost) Expired() bool {
	now := h.a.ctl.w.clk.Now()
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	return now.After(h.a.leaseEnd)
}

// LeaseLeft is how long the lease has left by this worker's clock, and a
// channel closed when that changes (a renewal's answer moves it). A
// worker on another clock than the wall clock (a test's) says nothing:
// an isolated child counts the time left in real time.
func (h *attemptHost) LeaseLeft() (time.Duration, <-chan struct{}) {
	if _, wall := h.a.ctl.w.clk.(wallClock); !wall {
		return 0, nil
	}
	now := h.a.ctl.w.clk.Now()
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	if h.a.leaseMoved == nil {
		h.a.leaseMoved = make(chan struct{})
	}
	return h.a.leaseEnd.Sub(now), h.a.leaseMoved
}

// Confirm is lease control's renewal.
func (h *attemptHost) Confirm(ctx context.Context) error { return h.a.ExtendLease(ctx, 0) }

// Relay relays the outboxes of parts (flow.Join's children's partitions,
// which this worker may not serve) as the relay loop does its own.
func (h *attemptHost) Relay(ctx context.Context, parts []keys.Partition) bool {
	read := false
	for _, p := range parts {
		read = h.a.ctl.w.relayPartition(ctx, p) || read
	}
	return read
}
