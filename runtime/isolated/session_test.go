package isolated

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// sendHost is an attempt host that records the checkpoints sent to it.
type sendHost struct {
	mu   sync.Mutex
	sent []string
}

func (h *sendHost) Known(string) bool { return true }
func (h *sendHost) Send(c store.Checkpoint) store.CheckpointResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent = append(h.sent, c.Field)
	return store.CheckpointResult{}
}
func (h *sendHost) Lose()                 {}
func (h *sendHost) Committed(string, int) {}
func (h *sendHost) Lost() error           { return nil }
func (h *sendHost) Expired() bool         { return false }
func (h *sendHost) LeaseLeft() (time.Duration, <-chan struct{}) {
	return 0, nil
}
func (h *sendHost) Confirm(context.Context) error                { return nil }
func (h *sendHost) Relay(context.Context, []keys.Partition) bool { return false }
func (h *sendHost) fields() []string                             { h.mu.Lock(); defer h.mu.Unlock(); return h.sent }

// TestCheckpointAfterGivingUp: a checkpoint the worker reads from the
// child after it gave up on the attempt (its context ended: a timeout, a
// lost lease, shutdown; or it stopped the child, over its output limits)
// is answered stale and not committed, while the child is being killed.
func TestCheckpointAfterGivingUp(t *testing.T) {
	for name, giveUp := range map[string]func(s *session, cancel context.CancelCauseFunc){
		"live":      func(*session, context.CancelCauseFunc) {},
		"cancelled": func(_ *session, cancel context.CancelCauseFunc) { cancel(errors.New("timeout")) },
		"stopped":   func(s *session, _ context.CancelCauseFunc) { s.quit.Store(true) },
	} {
		host := &sendHost{}
		st := attempt.New(nil, keys.Ref{}, store.Lease{}, nil)
		st.Host = host
		ctx, cancel := context.WithCancelCause(context.Background())
		s := &session{h: &handler{}, st: st, done: ctx}
		giveUp(s, cancel)
		a := s.commit(checkpointMsg{Seq: 7, Field: "step", Mode: store.ModeOnce})
		cancel(nil)
		if name == "live" {
			if a.Code != "" || len(host.fields()) != 1 {
				t.Errorf("%s: answer %+v, %d commits; want done and one", name, a, len(host.fields()))
			}
			continue
		}
		if a.Seq != 7 || a.Code != answerStale || len(host.fields()) != 0 {
			t.Errorf("%s: answer %+v, commits %q; want stale and none", name, a, host.fields())
		}
	}
}
