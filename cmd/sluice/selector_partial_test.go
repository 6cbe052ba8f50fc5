package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// archiveTwo makes queue "two" with 2 partitions and archived jobs on
// both, and returns the IDs of the jobs of each partition.
func (f *fixture) archiveTwo() [2][]string {
	f.t.Helper()
	if _, _, err := f.st.RegisterLayout(f.ctx, "two", 2); err != nil {
		f.t.Fatal(err)
	}
	var ids [2][]string
	for i := 0; len(ids[0]) < 3 || len(ids[1]) < 3; i++ {
		k := fmt.Sprint("k", i)
		e, err := f.c.Enqueue(f.ctx, email{To: k}, flow.WithQueue("two"), flow.WithMaxAttempts(1), flow.WithPartitionKey(k))
		if err != nil || i > 100 {
			f.t.Fatal(e, err)
		}
		ref, _ := keys.ParseRef(f.ns, e.ID)
		ids[ref.Index] = append(ids[ref.Index], e.ID)
	}
	for i := range 2 {
		p := keys.Partition{NS: f.ns, Queue: "two", Index: i}
		res, err := f.st.Claim(f.ctx, p, store.ClaimRequest{N: 100, Lease: time.Minute, Worker: "w", Nonce: "n"})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, j := range res.Jobs {
			a := fail
			a.Lease = store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}
			if _, _, err := f.st.Ack(f.ctx, p, []store.Ack{a}); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	return ids
}

// inState counts the jobs of ids in state (a deleted one is in none).
func (f *fixture) inState(ids []string, state string) int {
	f.t.Helper()
	n := 0
	for _, id := range ids {
		j, err := f.c.Job(f.ctx, id)
		if sluicetype.IsNotFound(err) { // deleted
			continue
		}
		if err != nil {
			f.t.Fatal(err)
		}
		if j.State == state {
			n++
		}
	}
	return n
}

// TestSelectorStoppedSaysWhatItDid: a redrive or delete by selector that
// an error stops part way (here partition 1 of the queue is at a newer
// data model, which its scripts refuse) leaves what the batches before it
// did done. It printed only the error, on stdout nothing, with --json
// too, so a script concluded nothing had changed. With --json it now
// prints the counts of what was done and "error", then the error, exit 1.
func TestSelectorStoppedSaysWhatItDid(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"redrive", "--queue", "two"}, {"jobs", "delete", "--queue", "two", "--state", "archived"}} {
		f := newFixture(t)
		ids := f.archiveTwo()
		p1 := keys.Partition{NS: f.ns, Queue: "two", Index: 1}
		if err := f.st.Client().Set(f.ctx, p1.DataModel(), store.DataModel+1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		out, errs, code := f.sluice(append([]string{"--json"}, args...)...)
		var got selectJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%q --json: stdout %q, stderr %q (exit %d): not JSON: %v", args, out, errs, code, err)
		}
		if code != exitError || got.Error == "" || !strings.Contains(errs, "newer data model") {
			t.Errorf("%q --json stopped part way: exit %d, %s, stderr %q; want exit 1 with the error in JSON and on stderr", args, code, out, errs)
		}
		// the jobs of partition 0 were done (scanned first), and the JSON
		// counts them
		left := f.inState(ids[0], flow.StateArchived)
		if done := len(ids[0]) - left; got.Matched != done || done == 0 {
			t.Errorf("%q --json: %s; %d of partition 0's %d jobs were done before the error", args, out, done, len(ids[0]))
		}
	}
}

// cancelOnWrite cancels its context once something is written: a Ctrl-C
// while the first progress bar is drawn.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

// TestSelectorInterruptedSaysWhatItDid: a redrive by selector stopped by
// Ctrl-C after its first batch says, on stdout, what the batches before
// did (they stay done) and that running it again goes on, then exits 1
// with the error.
func TestSelectorInterruptedSaysWhatItDid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.archiveTwo()
	f.stderrTTY = true // the progress bar is drawn after each batch
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	var out bytes.Buffer
	errb := &cancelOnWrite{cancel: cancel}
	code := f.runCtx(ctx, &out, errb, "redrive", "--queue", "two", "--batch", "1")
	want := `redrove 1 job of queue "two" (1 examined in 1 batch) before an error stopped it; run it again to go on`
	if code != exitError || !strings.Contains(out.String(), want) || !strings.Contains(errb.String(), "context canceled") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 saying %q", code, out.String(), errb.String(), want)
	}
}

// TestRedriveSelectorNotesPausedQueue: a redrive by selector into a
// paused queue says, as a redrive by ID does, that its jobs wait until
// the queue is resumed; a dry run, which moves nothing, does not.
func TestRedriveSelectorNotesPausedQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // two archived jobs in queue "default"
	f.must("queues", "pause", "default")
	note := `note: queue "default" is paused (1 of 1 partitions): its jobs wait until it is resumed`
	if out := f.must("redrive", "--queue", "default", "--dry-run"); strings.Contains(out, "note:") {
		t.Errorf("dry run: %q; want no note", out)
	}
	if out := f.must("redrive", "--queue", "default"); !strings.Contains(out, "redrove 2 jobs") || !strings.Contains(out, note) {
		t.Errorf("redrive --queue default, paused: %q; want the note %q", out, note)
	}
}
