package flow_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestTriggerOnceAcrossGrowth: TriggerScheduleOnce's same call made
// again (a form posted twice, a retry after an error) adds nothing while
// the job it added is kept, also after the schedule's queue grew from 1 to
// 4 partitions: the retry finds the job where the first call put it. A
// helper's audit found the retry placed by the new count, which for most
// keys is another partition than the first call's, where it added a
// second job under the same key.
func TestTriggerOnceAcrossGrowth(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	c := e.client()
	if _, err := c.Enqueue(ctx, report{}); err != nil { // registers "default", 1 partition
		t.Fatal(err)
	}
	e.run(e.newScheduler(flow.Schedule{Name: "nightly", Cron: "0 3 * * *", Args: report{}}))
	e.wait("nightly", 1) // published
	ad := admin.New(c)
	first := map[string]string{}
	var used []string
	for i := range 8 {
		k := fmt.Sprint("confirm-", i)
		r, err := ad.TriggerScheduleOnce(ctx, "nightly", k)
		testkit.Must(t, err)
		used = append(used, k)
		first[k] = r.ID
	}
	testkit.Must(t, ad.PauseQueue(ctx, "default"))
	testkit.Must(t, ad.ResizeQueue(ctx, "default", 4))
	var again []string
	for _, k := range used {
		r, err := admin.New(e.client()).TriggerScheduleOnce(ctx, "nightly", k) // the retry
		if err != nil {
			t.Fatalf("retry of trigger %s: %v", k, err)
		}
		if !r.Duplicate || r.ID != first[k] {
			again = append(again, fmt.Sprintf("%s: first %s, retry %+v", k, first[k], r))
		}
	}
	if len(again) > 0 {
		t.Fatalf("%d of %d trigger keys were not answered as the first call's job after the queue grew:\n%s",
			len(again), len(used), strings.Join(again, "\n"))
	}
	// a new key is placed by the new count as before
	r, err := ad.TriggerScheduleOnce(ctx, "nightly", "fresh")
	testkit.Must(t, err)
	if r.Duplicate {
		t.Fatalf("a new key answered a duplicate: %+v", r)
	}
}
