package admin_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// TestListPagesPastInfiniteScores: scheduled jobs whose due time is
// corrupt ('inf', held at +inf in the scheduled index; lua/lib_ready.lua
// lists them as due at the entry's time) are listed, and a page that
// stops among them gives a cursor ("finf:N") the next ListJobs takes
// back. A helper's review found it refused as ErrInvalid: the cursor's
// form did not accept the "inf" Redis writes for an infinite score.
func TestListPagesPastInfiniteScores(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"inf": 1})
	for i := range 3 {
		a.enqueue(email{To: fmt.Sprint(i)}, flow.WithQueue("inf"), flow.WithDelay(2*time.Second))
	}
	p := a.st.Partition("inf", 0)
	ids, err := env.Client(t).ZRange(a.ctx, p.Sched(), 0, -1).Result()
	if err != nil || len(ids) != 3 {
		t.Fatalf("sched: %v %v", ids, err)
	}
	rdb := env.Client(t)
	for _, id := range ids[:2] { // corrupt data: due 'inf', indexed at +inf
		rdb.HSet(a.ctx, p.Job(id), "rt", "inf")
		rdb.ZAdd(a.ctx, p.Sched(), redis.Z{Score: math.Inf(1), Member: id})
	}
	seen, cursor := map[string]bool{}, ""
	for pages := 0; ; pages++ {
		page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "inf", State: flow.StateScheduled, Limit: 1, Cursor: cursor})
		if err != nil || pages > 10 {
			t.Fatalf("page %d (cursor %q): %v", pages, cursor, err)
		}
		for _, j := range page.Jobs {
			seen[j.ID] = true
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if len(seen) != 3 {
		t.Errorf("listed %d jobs, want 3", len(seen))
	}
}

// TestListPagesPastEmptyMember: an index entry whose member is empty
// (corrupt data: no job has that ID) where a page stops gives a cursor
// the next ListJobs takes. A review found the cursor named the empty
// member as "score:ties:", which the cursor form refused (ErrInvalid).
func TestListPagesPastEmptyMember(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{"emp": 1})
	for i := range 2 {
		a.enqueue(email{To: fmt.Sprint(i)}, flow.WithQueue("emp"), flow.WithMaxAttempts(1))
	}
	a.finish("emp", 1, 0, failAck)
	p := a.st.Partition("emp", 0)
	zk := p.Terminal(flow.StateArchived)
	locals, err := rdb.ZRange(a.ctx, zk, 0, -1).Result()
	if err != nil || len(locals) != 2 {
		t.Fatalf("archived index: %v %v", locals, err)
	}
	// highest first: job, 999 stale entries, job, 998 stale entries, "":
	// with Limit 2 (budget 1000) the first call stops after the 999, the
	// second at "" with one job listed, and the page of 2 is full
	zs := []redis.Z{{Score: 40, Member: locals[0]}, {Score: 20, Member: locals[1]}, {Score: 5, Member: ""}}
	for i := range 999 {
		zs = append(zs, redis.Z{Score: 30, Member: fmt.Sprintf("stale-a%03d", i)})
	}
	for i := range 998 {
		zs = append(zs, redis.Z{Score: 10, Member: fmt.Sprintf("stale-b%03d", i)})
	}
	if err := rdb.ZAdd(a.ctx, zk, zs...).Err(); err != nil {
		t.Fatal(err)
	}
	page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "emp", State: flow.StateArchived, Limit: 2})
	if err != nil || len(page.Jobs) != 2 || page.Next == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	if _, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "emp", State: flow.StateArchived, Limit: 2, Cursor: page.Next}); err != nil {
		t.Fatalf("page after %q: %v", page.Next, err)
	}
}
