package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestCommandsFindQueuePastListing: with more queues registered than
// store.MaxQueuesListed (a listing's bound), a command about a queue the
// listing leaves out finds it, as admin.Client does: it reads the queue's
// own entry. A helper's audit found every command that checks its queue
// (queues pause, resume, resize and stats, jobs list, redrive and delete
// by selector, effects list, --partitions) read the bounded listing and
// said "not found" (exit 3) of a registered queue, and whether it was
// paused from the listing too.
func TestCommandsFindQueuePastListing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	args := []any{}
	for i := 0; i <= store.MaxQueuesListed; i++ {
		args = append(args, "q"+strconv.Itoa(100000+i), "1:1:1767225600000:1767225600000")
	}
	if err := f.st.Client().HSet(f.ctx, keys.Queues(f.ns), args...).Err(); err != nil {
		t.Fatal(err)
	}
	out := f.must("--json", "queues", "list")
	var listed []queueJSON
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, q := range listed {
		seen[q.Name] = true
	}
	missing := ""
	for i := 0; i <= store.MaxQueuesListed && missing == ""; i++ {
		if q := "q" + strconv.Itoa(100000+i); !seen[q] {
			missing = q
		}
	}
	if missing == "" {
		t.Fatalf("queues list listed all %d queues", store.MaxQueuesListed+1)
	}
	// the API finds it
	if err := admin.New(f.c).PauseQueue(f.ctx, missing); err != nil {
		t.Fatalf("admin PauseQueue(%s): %v", missing, err)
	}
	// and reads whether it was paused from its own flags: a queue past
	// the listing read as not paused, so its resume said "(it was not
	// paused)", and a second pause did not say it was paused already
	// (found by another audit)
	for _, c := range []struct {
		verb      string
		unchanged bool
	}{{"resume", false}, {"pause", false}, {"pause", true}} {
		out := f.must("--json", "queues", c.verb, missing)
		var res pauseJSON
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if slices.Contains(res.Unchanged, missing) != c.unchanged {
			t.Errorf("queues %s %s (past the listing): %s; want unchanged %v", c.verb, missing, out, c.unchanged)
		}
	}
	for _, cmd := range [][]string{{"queues", "resume", missing}, {"jobs", "list", "--state", "archived", "--queue", missing},
		{"queues", "stats", missing}, {"--partitions", missing + "=1", "queues", "resume", missing}} {
		o, e, code := f.sluice(cmd...)
		if code != exitOK {
			t.Errorf("sluice %q on registered queue %s: exit %d\nstdout: %s\nstderr: %s", cmd, missing, code, o, e)
		}
	}
}
