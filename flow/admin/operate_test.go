package admin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// claimAll claims every available job of queue's partitions, writes a
// step checkpoint for each, and acks each with ack (nil: leaves them
// running).
func (a *fixture) claimAll(queue string, partitions int, ack *store.Ack) {
	a.t.Helper()
	for i := range partitions {
		p := keys.Partition{NS: a.ns, Queue: queue, Index: i}
		res, err := a.st.Claim(a.ctx, p, store.ClaimRequest{N: 1000, Lease: time.Minute, Worker: "w", Nonce: fmt.Sprint("c", i, time.Now().UnixNano())})
		if err != nil {
			a.t.Fatal(err)
		}
		for _, j := range res.Jobs {
			l := store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}
			cs, _ := a.st.Checkpoints(a.ctx, p, []store.Checkpoint{{Lease: l, Field: "s1", Record: []byte("r"), Mode: store.ModeOnce, Commit: j.Local + ":s1"}})
			if cs[0].Err != nil {
				a.t.Fatal(cs[0].Err)
			}
			if ack == nil {
				continue
			}
			k := *ack
			k.Lease = l
			if _, _, err := a.st.Ack(a.ctx, p, []store.Ack{k}); err != nil {
				a.t.Fatal(err)
			}
		}
	}
}

// keysOf scans the namespace and returns the keys that belong to job id
// (its hash, errors, steps, body, ...: every key named after it) or to
// the unique key "u-" + its local ID.
func (a *fixture) keysOf(all []string, id string) []string {
	ref, ok := keys.ParseRef(a.ns, id)
	if !ok {
		a.t.Fatalf("bad ID %s", id)
	}
	var out []string
	for _, k := range all {
		if strings.HasPrefix(k, ref.Prefix()) && (strings.HasSuffix(k, ":"+ref.Local) || strings.HasSuffix(k, ":u-"+ref.Local)) {
			out = append(out, k)
		}
	}
	return out
}

func (a *fixture) scanAll() []string {
	a.t.Helper()
	var all []string
	iter := env.Client(a.t).Scan(a.ctx, 0, "{"+a.ns+":*", 1000).Iterator()
	for iter.Next(a.ctx) {
		all = append(all, iter.Val())
	}
	if err := iter.Err(); err != nil {
		a.t.Fatal(err)
	}
	return all
}

// TestDeleteSelected: a delete by selector over two partitions counts in
// a dry run what it then deletes, reports each batch (at most BatchSize
// jobs examined), deletes each chosen job with every key it owns (scanned
// for afterwards: hash, errors, steps, body, unique key), and leaves jobs
// of another kind, of another state and a running job alone.
func TestDeleteSelected(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"del": 2})
	var gone, kept []string
	for i := range 50 {
		var args flow.Args = email{To: fmt.Sprint(i)}
		if i%5 == 0 {
			args = other{N: i}
		} else if i%7 == 1 {
			args = email{To: strings.Repeat("x", 2000)} // its payload is a key of its own
		}
		id := a.enqueue(args, flow.WithQueue("del"), flow.WithMaxAttempts(1), flow.WithID(fmt.Sprint("j", i)))
		if i%5 == 0 {
			kept = append(kept, id)
		} else {
			gone = append(gone, id)
		}
	}
	a.claimAll("del", 2, &failAck)
	for i := range 6 {
		gone = append(gone, a.enqueue(email{To: "s"}, flow.WithQueue("del"), flow.WithDelay(time.Hour),
			flow.WithID(fmt.Sprint("s", i)), flow.WithUnique(fmt.Sprint("u-s", i), 0, flow.KeepExisting)))
	}
	kept = append(kept, a.enqueue(email{To: "run"}, flow.WithQueue("del"), flow.WithID("run")))
	a.claimAll("del", 2, nil)
	before := a.scanAll()
	for _, id := range gone {
		if len(a.keysOf(before, id)) < 2 {
			t.Fatalf("%s owns %v before the delete; the test wants more than its hash", id, a.keysOf(before, id))
		}
	}

	sel := admin.Selector{Queue: "del", State: flow.StateArchived, Kind: "email"}
	run := func(sel admin.Selector, dry bool) (admin.DeleteProgress, []admin.DeleteProgress) {
		t.Helper()
		var seen []admin.DeleteProgress
		pr, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{DryRun: dry, BatchSize: 7, Progress: func(p admin.DeleteProgress) {
			seen = append(seen, p)
		}})
		if err != nil {
			t.Fatal(err)
		}
		return pr, seen
	}
	dry, seen := run(sel, true)
	if dry.Matched != 40 || dry.Examined != 50 || dry.Total != 50 || !dry.Done || len(dry.Unreadable) != 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	for i := 1; i < len(seen)-1; i++ {
		if d := seen[i].Examined - seen[i-1].Examined; d > 7 || seen[i].Batches != seen[i-1].Batches+1 {
			t.Fatalf("batch %d examined %d (progress %+v)", i, d, seen[i])
		}
	}
	if last := seen[len(seen)-1]; !last.Done || last.Matched != dry.Matched || dry.Batches < 8 {
		t.Fatalf("last progress %+v, result %+v", last, dry)
	}
	if st, _ := a.ops.QueueStats(a.ctx, "del", 0); st.Depth[flow.StateArchived] != 50 {
		t.Fatalf("the dry run deleted jobs: %v", st.Depth)
	}
	if del, _ := run(sel, false); del.Matched != dry.Matched {
		t.Fatalf("deleted %d, the dry run counted %d", del.Matched, dry.Matched)
	}
	if del, _ := run(admin.Selector{Queue: "del", State: flow.StateScheduled}, false); del.Matched != 6 || del.Total != 6 {
		t.Fatalf("scheduled: %+v, want 6 deleted", del)
	}
	st, err := a.ops.QueueStats(a.ctx, "del", 0)
	want := map[string]int64{flow.StateArchived: 10, flow.StateRunning: 1}
	if err != nil || !mapsMatch(st.Depth, want) {
		t.Fatalf("after the delete: %v, %v; want %v", st.Depth, err, want)
	}
	after := a.scanAll()
	for _, id := range gone {
		if left := a.keysOf(after, id); len(left) > 0 {
			t.Errorf("deleted job %s left keys %v", id, left)
		}
	}
	for _, id := range kept {
		if left := a.keysOf(after, id); !slices.ContainsFunc(left, func(k string) bool { return strings.Contains(k, ":j:") }) {
			t.Errorf("kept job %s has no hash (keys %v)", id, left)
		}
	}
}

// TestDeleteSelectedRefuses: bad selectors are refused before anything
// is read: no state, a state that is not deleted by selector (running,
// available), a reason or finish time for jobs that have not finished,
// a bad queue, kind or batch size.
func TestDeleteSelectedRefuses(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	bad := []struct {
		sel admin.Selector
		o   admin.DeleteOptions
	}{
		{admin.Selector{Queue: "q"}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "q", State: flow.StateRunning}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "q", State: flow.StateAvailable}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "q", State: flow.StateScheduled, Reason: "x"}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "q", State: flow.StateRetryable, FinishedBefore: time.Now()}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "bad queue", State: flow.StateArchived}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "q", State: flow.StateArchived, Kind: "-email"}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "q", State: flow.StateArchived}, admin.DeleteOptions{BatchSize: 5001}},
		{admin.Selector{Queue: "q", State: flow.StateArchived, FinishedAfter: time.Unix(7200, 0), FinishedBefore: time.Unix(3600, 0)}, admin.DeleteOptions{DryRun: true}},
		// no job finished before the epoch (the first millisecond's bound
		// went to the script as none, and selected every job)
		{admin.Selector{Queue: "q", State: flow.StateArchived, FinishedBefore: time.Unix(0, 500_000)}, admin.DeleteOptions{}},
		{admin.Selector{Queue: "q", State: flow.StateCompleted, FinishedBefore: time.Unix(-60, 0)}, admin.DeleteOptions{DryRun: true}},
	}
	for _, c := range bad {
		if pr, err := a.ops.DeleteSelected(a.ctx, c.sel, c.o); !errors.Is(err, flow.ErrInvalid) || pr.Batches != 0 {
			t.Errorf("DeleteSelected(%+v, %+v): %+v %v, want ErrInvalid", c.sel, c.o, pr, err)
		}
	}
}

func mapsMatch(got, want map[string]int64) bool {
	for s, n := range got {
		if want[s] != n {
			return false
		}
	}
	for s, n := range want {
		if got[s] != n {
			return false
		}
	}
	return true
}

// TestRunNow: through the operator API, a scheduled and a retryable job
// run now; an unknown, a running and a completed job are refused with
// errors that name the job and its state; a bad ID is ErrInvalid.
func TestRunNow(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	later := a.enqueue(email{To: "later"}, flow.WithDelay(24*time.Hour), flow.WithPriority(3))
	if err := a.ops.RunNow(a.ctx, later); err != nil {
		t.Fatal(err)
	}
	j, err := a.ops.Job(a.ctx, later)
	if err != nil || j.State != flow.StateAvailable || j.Priority != 3 {
		t.Fatalf("after run now: %+v, %v", j, err)
	}
	a.finish("default", 1, 0, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom", Delay: time.Hour})
	if j, _ := a.ops.Job(a.ctx, later); j.State != flow.StateRetryable {
		t.Fatalf("after a failed attempt: %s", j.State)
	}
	if err := a.ops.RunNow(a.ctx, later); err != nil {
		t.Fatalf("run now of a retryable job: %v", err)
	}
	if j, _ := a.ops.Job(a.ctx, later); j.State != flow.StateAvailable || j.Attempt != 1 || len(j.Errors) != 1 {
		t.Fatalf("retried job: %s, attempt %d, %d errors", j.State, j.Attempt, len(j.Errors))
	}
	err = a.ops.RunNow(a.ctx, later)
	if want := "sluice: cannot run now job " + later + ": it is available"; err == nil || err.Error() != want {
		t.Fatalf("second run now: %v, want %q", err, want)
	}
	if err := a.ops.RunNow(a.ctx, "default:0:nope"); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("unknown job: %v, want ErrNotFound", err)
	}
	if err := a.ops.RunNow(a.ctx, "nope"); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("bad ID: %v, want ErrInvalid", err)
	}
	a.claimAll("default", 1, nil)
	var se *sluicetype.StateError
	if err := a.ops.RunNow(a.ctx, later); !errors.As(err, &se) || se.ID != later || se.State != flow.StateRunning ||
		!errors.Is(err, admin.ErrWrongState) {
		t.Fatalf("running job: %v", err)
	}
	done := a.enqueue(email{To: "done"})
	a.finish("default", 1, 0, store.Ack{Code: store.CodeOK})
	if err := a.ops.RunNow(a.ctx, done); !errors.As(err, &se) || se.ID != done || se.State != flow.StateCompleted {
		t.Fatalf("completed job: %v", err)
	}
}

// TestDeleteSelectedResumes: a delete cut short (its context cancelled
// after the first batch) keeps what it deleted, and a second run with the
// same selector deletes the rest.
func TestDeleteSelectedResumes(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	for i := range 12 {
		a.enqueue(email{To: fmt.Sprint(i)}, flow.WithMaxAttempts(1))
	}
	a.finish("default", 1, 0, failAck)
	sel := admin.Selector{Queue: "default", State: flow.StateArchived}
	ctx, cancel := context.WithCancel(a.ctx)
	first, err := a.ops.DeleteSelected(ctx, sel, admin.DeleteOptions{BatchSize: 5, Progress: func(admin.DeleteProgress) { cancel() }})
	if !errors.Is(err, context.Canceled) || first.Matched != 5 || first.Done {
		t.Fatalf("cut short: %+v %v, want 5 deleted and context.Canceled", first, err)
	}
	rest, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{BatchSize: 5})
	if err != nil || rest.Matched != 7 || rest.Total != 7 || !rest.Done {
		t.Fatalf("second run: %+v %v, want the other 7", rest, err)
	}
	if st, _ := a.ops.QueueStats(a.ctx, "default", 0); st.Depth[flow.StateArchived] != 0 {
		t.Fatalf("left: %v", st.Depth)
	}
}
