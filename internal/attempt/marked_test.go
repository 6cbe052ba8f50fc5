package attempt

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// sentHost records the modes of the checkpoints sent, answering each as
// answer says.
type sentHost struct {
	toldHost
	modes  []string
	answer store.CheckpointResult
}

func (h *sentHost) Send(c store.Checkpoint) store.CheckpointResult {
	h.modes = append(h.modes, c.Mode)
	return h.answer
}

// TestCommitSaysTheJobIsMarked: a step commit tells the script that the
// job is marked as having checkpoints (store.ModeOnceMarked) only once
// that is known: its claim answered checkpoints (Marked), or a commit of
// this attempt went through. A commit refused, or of a cursor or a taken
// signal, keeps its own mode. Sent wrongly, the script would skip the
// mark, and the job's checkpoints would outlive it.
func TestCommitSaysTheJobIsMarked(t *testing.T) {
	var confirms int
	h := &sentHost{toldHost: toldHost{confirms: &confirms}, answer: store.CheckpointResult{Err: errNet}}
	s := &State{Host: h}
	if err := s.Commit("a", nil, store.ModeOnce, "", nil); err == nil {
		t.Fatal("a commit that failed went through")
	}
	h.answer = store.CheckpointResult{}
	for _, name := range []string{"a", "b"} {
		if err := s.Commit(name, nil, store.ModeOnce, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit("c", nil, store.ModeCursor, "", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{store.ModeOnce, store.ModeOnce, store.ModeOnceMarked, store.ModeCursor}
	if len(h.modes) != len(want) {
		t.Fatalf("sent %v, want %v", h.modes, want)
	}
	for i := range want {
		if h.modes[i] != want[i] {
			t.Fatalf("sent %v, want %v", h.modes, want)
		}
	}

	// its claim answered checkpoints: marked from the first commit
	h2 := &sentHost{toldHost: toldHost{confirms: &confirms}}
	s2 := &State{Host: h2}
	s2.Marked()
	if err := s2.Commit("a", nil, store.ModeOnce, "", nil); err != nil || len(h2.modes) != 1 || h2.modes[0] != store.ModeOnceMarked {
		t.Fatalf("sent %v (%v), want %s", h2.modes, err, store.ModeOnceMarked)
	}
}
