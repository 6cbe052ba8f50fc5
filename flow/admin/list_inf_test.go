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
