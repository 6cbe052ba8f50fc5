package admin_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// fixture is a client with a fake clock and the store under it, to move
// jobs through their lifecycle without a worker.
type fixture struct {
	t   *testing.T
	ctx context.Context
	c   *flow.Client
	ops *admin.Client
	st  *store.Store
	clk *runtime.FakeClock
	ns  string
}

func newAdmin(t *testing.T, rdb redis.UniversalClient, partitions map[string]int) *fixture {
	t.Helper()
	ns := redistest.NewNamespace(t)
	clk := runtime.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: partitions, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(rdb, store.Config{NS: ns, RetainCompleted: time.Hour, RetainArchived: time.Hour,
		RetainCancelled: time.Hour, CrashLimit: 3, Now: clk.Now})
	return &fixture{t: t, ctx: context.Background(), c: c, ops: admin.New(c), st: st, clk: clk, ns: ns}
}

func (a *fixture) enqueue(args flow.Args, opts ...flow.EnqueueOption) string {
	a.t.Helper()
	r, err := a.c.Enqueue(a.ctx, args, opts...)
	if err != nil {
		a.t.Fatal(err)
	}
	return r.ID
}

// finish claims every available job of queue's partitions and acks each
// with ack (after run of store time), in batches of 1000.
func (a *fixture) finish(queue string, partitions int, run time.Duration, ack store.Ack) int {
	a.t.Helper()
	n := 0
	for i := range partitions {
		p := keys.Partition{NS: a.ns, Queue: queue, Index: i}
		for {
			res, err := a.st.Claim(a.ctx, p, store.ClaimRequest{N: 1000, Lease: time.Minute, Worker: "w", Nonce: fmt.Sprint("n", n)})
			if err != nil {
				a.t.Fatal(err)
			}
			if len(res.Jobs) == 0 {
				break
			}
			a.clk.Advance(run)
			acks := make([]store.Ack, len(res.Jobs))
			for k, j := range res.Jobs {
				acks[k] = ack
				acks[k].Lease = store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}
			}
			if _, _, err := a.st.Ack(a.ctx, p, acks); err != nil {
				a.t.Fatal(err)
			}
			n += len(res.Jobs)
		}
	}
	return n
}

var failAck = store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"}

// TestRedriveSelected: 5,000 archived jobs over two partitions are
// redriven by selector in batches of at most 500; the dry run counts
// exactly what the real run then moves, and jobs of another kind stay.
func TestRedriveSelected(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"bulk": 2})
	var items []flow.Item
	for i := range 5050 {
		var args flow.Args = email{To: fmt.Sprint(i)}
		if i%101 == 0 {
			args = other{N: i}
		}
		items = append(items, flow.Item{Args: args, Opts: []flow.EnqueueOption{flow.WithQueue("bulk"), flow.WithMaxAttempts(1)}})
	}
	for i := 0; i < len(items); i += 1000 {
		if _, err := a.c.EnqueueMany(a.ctx, items[i:min(i+1000, len(items))]...); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.finish("bulk", 2, time.Millisecond, failAck); n != 5050 {
		t.Fatalf("archived %d", n)
	}
	sel := admin.Selector{Queue: "bulk", Kind: "email"}
	run := func(dry bool) (admin.RedriveProgress, []admin.RedriveProgress) {
		var seen []admin.RedriveProgress
		pr, err := a.ops.RedriveSelected(a.ctx, sel, admin.RedriveOptions{DryRun: dry, Progress: func(p admin.RedriveProgress) {
			seen = append(seen, p)
		}})
		if err != nil {
			t.Fatal(err)
		}
		return pr, seen
	}
	dry, seen := run(true)
	if dry.Matched != 5000 || dry.Examined != 5050 || dry.Total != 5050 || !dry.Done {
		t.Fatalf("dry run: %+v", dry)
	}
	for i := 1; i < len(seen)-1; i++ {
		if d := seen[i].Examined - seen[i-1].Examined; d > 500 || seen[i].Batches != seen[i-1].Batches+1 {
			t.Fatalf("batch %d examined %d (progress %+v)", i, d, seen[i])
		}
	}
	if last := seen[len(seen)-1]; !reflect.DeepEqual(last, dry) || dry.Batches < 11 {
		t.Fatalf("last progress %+v, result %+v", last, dry)
	}
	if st, _ := a.ops.QueueStats(a.ctx, "bulk", 0); st.Depth[flow.StateArchived] != 5050 {
		t.Fatalf("the dry run moved jobs: %v", st.Depth)
	}
	moved, _ := run(false)
	if moved.Matched != dry.Matched {
		t.Fatalf("moved %d, dry run counted %d", moved.Matched, dry.Matched)
	}
	st, err := a.ops.QueueStats(a.ctx, "bulk", 0)
	if err != nil || st.Depth[flow.StateAvailable] != 5000 || st.Depth[flow.StateArchived] != 50 {
		t.Fatalf("after redrive: %v, %v", st.Depth, err)
	}
	if again, _ := run(true); again.Matched != 0 {
		t.Fatalf("second dry run matched %d", again.Matched)
	}
	// a window with no time in it (after the 2nd hour, before the 1st) is a mistake, not 0 jobs
	empty := admin.Selector{Queue: "bulk", FinishedAfter: time.Unix(7200, 0), FinishedBefore: time.Unix(3600, 0)}
	if pr, err := a.ops.RedriveSelected(a.ctx, empty, admin.RedriveOptions{DryRun: true}); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("redrive of an empty window: %+v %v, want ErrInvalid", pr, err)
	}
	epoch := admin.Selector{Queue: "bulk", FinishedBefore: time.Unix(0, 0)} // no job finished before it
	if pr, err := a.ops.RedriveSelected(a.ctx, epoch, admin.RedriveOptions{}); !errors.Is(err, flow.ErrInvalid) || pr.Matched != 0 {
		t.Fatalf("redrive of jobs finished before the epoch: %+v %v, want ErrInvalid", pr, err)
	}
	// a kind no job can have ("email " from a variable with a trailing
	// space) is a mistake, not 0 jobs
	if pr, err := a.ops.RedriveSelected(a.ctx, admin.Selector{Queue: "bulk", Kind: "email "}, admin.RedriveOptions{}); !errors.Is(err, flow.ErrInvalid) || pr.Matched != 0 {
		t.Fatalf("redrive of a kind no job can have: %+v %v, want ErrInvalid", pr, err)
	}
	if _, err := a.ops.RedriveSelected(a.ctx, admin.Selector{Queue: "bulk", State: flow.StateCompleted}, admin.RedriveOptions{}); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("redrive completed: %v", err)
	}
}

type other struct{ N int }

func (other) Kind() string { return "other" }

// TestListJobs: a listing merges a queue's partitions newest first, page
// by page, and ends with an empty cursor.
func TestListJobs(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"lst": 3})
	var want []string
	for i := range 25 {
		id := a.enqueue(email{To: fmt.Sprint(i)}, flow.WithQueue("lst"), flow.WithMaxAttempts(1), flow.WithID(fmt.Sprint("j", i)))
		a.clk.Advance(time.Second)
		a.finish("lst", 3, 0, failAck)
		want = append([]string{id}, want...)
	}
	var got []string
	cursor, pages := "", 0
	for {
		page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "lst", State: flow.StateArchived, Limit: 7, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, j := range page.Jobs {
			got = append(got, j.ID)
			if j.State != flow.StateArchived || j.Kind != "email" || j.Attempt != 1 || j.Reason != "attempts_exhausted" {
				t.Fatalf("listed %+v", j)
			}
		}
		if cursor = page.Next; cursor == "" || pages > 10 {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || pages != 4 {
		t.Fatalf("listed in %d pages:\n got %v\nwant %v", pages, got, want)
	}
	bad := []admin.ListOptions{
		{Queue: "lst", State: "nope"},
		{Queue: "bad queue", State: flow.StateArchived},
		{Queue: "lst", State: flow.StateArchived, Cursor: "1,2"},
		// cursors of the right count but not one a listing gives: they
		// listed from the start, or nothing, or failed in the script
		{Queue: "lst", State: flow.StateArchived, Cursor: "a,b,c"},
		{Queue: "lst", State: flow.StateScheduled, Cursor: "zz,zz,zz"},
		{Queue: "lst", State: flow.StateAvailable, Cursor: "a,b,c"},
		{Queue: "lst", State: flow.StateAvailable, Cursor: "1,2,3"},
		// a last member that is no hex, or longer than an ID may be
		{Queue: "lst", State: flow.StateArchived, Cursor: "5:1:6g,-,-"},
		{Queue: "lst", State: flow.StateArchived, Cursor: "5:1:" + strings.Repeat("ab", 129) + ",-,-"},
		// every partition done: the last page gives "", not this
		{Queue: "lst", State: flow.StateArchived, Cursor: "-,-,-"},
		{Queue: "lst", State: flow.StateArchived, Limit: admin.MaxListLimit + 1},
		// a kind no job can have: a typo, listed as "no such jobs"
		{Queue: "lst", State: flow.StateArchived, Kind: "email "},
	}
	for _, o := range bad {
		if _, err := a.ops.ListJobs(a.ctx, o); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("ListJobs(%+v): %v, want ErrInvalid", o, err)
		}
	}
	// a cursor of an earlier version (no last member) still pages on
	// from its score; got[6] is the last of the first page of 7
	first, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "lst", State: flow.StateArchived, Limit: 7})
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`:[0-9a-f]+(,|$)`).ReplaceAllString(first.Next, "$1")
	page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "lst", State: flow.StateArchived, Limit: 1, Cursor: old})
	if err != nil || old == first.Next || len(page.Jobs) != 1 || page.Jobs[0].ID != want[7] {
		t.Fatalf("page after the earlier cursor %q (from %q): %+v %v, want %s", old, first.Next, page.Jobs, err, want[7])
	}
}

// TestListJobsPagesEveryState: the cursors a listing gives page through
// every job of the states with cursors of their own (scheduled, with due
// times in the near index and in buckets of later jobs; available, at
// several priorities), and are accepted back: ListJobs refuses a cursor
// that is not one of its own.
func TestListJobsPagesEveryState(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"pg": 3})
	for i := range 24 {
		a.enqueue(email{To: fmt.Sprint("s", i)}, flow.WithQueue("pg"), flow.WithDelay(time.Duration(1+i*i)*time.Hour))
		a.enqueue(email{To: fmt.Sprint("a", i)}, flow.WithQueue("pg"), flow.WithPriority(i%4))
	}
	for _, state := range []string{flow.StateScheduled, flow.StateAvailable} {
		seen, cursor := map[string]bool{}, ""
		for pages := 0; ; pages++ {
			page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "pg", State: state, Limit: 5, Cursor: cursor})
			if err != nil || pages > 20 {
				t.Fatalf("%s, page %d (cursor %q): %v", state, pages, cursor, err)
			}
			for _, j := range page.Jobs {
				seen[j.ID] = true
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if len(seen) != 24 {
			t.Errorf("%s: paged through %d jobs, want 24", state, len(seen))
		}
	}
}
