package chaos

// The ledger check: every effect of every job applied exactly once.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ledgerReport sums up one ledger against the effects expected.
type ledgerReport struct {
	Fields    int      // fields expected
	Missing   []string // expected fields absent
	Twice     []string // fields applied more than once (field=count)
	Unplanned []string // fields no counted job explains
}

func (r ledgerReport) ok() bool {
	return len(r.Missing) == 0 && len(r.Twice) == 0 && len(r.Unplanned) == 0
}

// checkLedger reads the hash at key and expects exactly the fields of jobs
// 0..jobs-1 (every step and the completion), each at 1.
func checkLedger(t *testing.T, rdb redis.UniversalClient, key string, jobs int) ledgerReport {
	t.Helper()
	got, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("reading ledger %s: %v", key, err)
	}
	var r ledgerReport
	want := expectedFields(jobs)
	r.Fields = len(want)
	for f := range want {
		v, ok := got[f]
		switch {
		case !ok:
			r.Missing = append(r.Missing, f)
		case v != "1":
			r.Twice = append(r.Twice, f+"="+v)
		}
	}
	for f := range got {
		if !want[f] {
			r.Unplanned = append(r.Unplanned, f+"="+got[f])
		}
	}
	sort.Strings(r.Missing)
	sort.Strings(r.Twice)
	sort.Strings(r.Unplanned)
	if !r.ok() {
		t.Errorf("ledger %s: %d fields expected; missing %s; applied more than once %s; unexplained %s",
			key, r.Fields, first(r.Missing), first(r.Twice), first(r.Unplanned))
	}
	return r
}

// expectedFields are the effects of jobs 0..jobs-1.
func expectedFields(jobs int) map[string]bool {
	want := make(map[string]bool, jobs*(ledgerSteps+1))
	for n := range jobs {
		for i := 1; i <= ledgerSteps; i++ {
			want[ledgerField(n, stepName(i))] = true
		}
		want[ledgerField(n, "done")] = true
	}
	return want
}

// reruns counts the step executions beyond the first of each step, from
// the handler's own counter (stepRuns, a statistic: its writes are not
// fenced and may fail while Redis restarts).
func reruns(t *testing.T, rdb redis.UniversalClient, ns string, jobs int) (again int) {
	t.Helper()
	runs, err := rdb.HGetAll(context.Background(), stepRuns(ns)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for n := range jobs {
		for i := 1; i <= ledgerSteps; i++ {
			k, _ := strconv.Atoi(runs[ledgerField(n, stepName(i))])
			again += max(k-1, 0)
		}
	}
	return again
}

// first is the first few of a sorted list, for a readable failure.
func first(s []string) string {
	if len(s) > 10 {
		return fmt.Sprintf("%v ... (%d in all)", s[:10], len(s))
	}
	return fmt.Sprint(s)
}
