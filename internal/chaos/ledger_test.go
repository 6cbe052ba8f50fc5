package chaos

// The ledger checks: every effect of every ledger job applied exactly
// once, none of a bad-effect job's.

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
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

// checkLedger reads the hash at key and expects exactly the fields of
// want, each at 1: those of ledger jobs (expectedFields) and of workflows
// (checkWorkflows, checkNaps).
func checkLedger(t *testing.T, rdb redis.UniversalClient, key string, want map[string]bool) ledgerReport {
	t.Helper()
	got, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("reading ledger %s: %v", key, err)
	}
	var r ledgerReport
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
		addLedgerFields(want, n)
	}
	return want
}

// addLedgerFields adds ledger job n's effects to want.
func addLedgerFields(want map[string]bool, n int) {
	for i := 1; i <= ledgerSteps; i++ {
		want[ledgerField(n, stepName(i))] = true
	}
	want[ledgerField(n, "done")] = true
}

// ledgerStats sums up the crashes and attempts of the ledger jobs checked.
type ledgerStats struct {
	Crashes  int // crashes charged
	Crashed  int // jobs charged at least one
	MaxCrash int // the most charged to one job
	Attempts int // attempts spent
}

// checkLedgerJob checks that ledger job n (ID id) completed with its
// checkpoints, read back as itself with its padding, and adds it to st.
func checkLedgerJob(ctx context.Context, t *testing.T, c *flow.Client, n int, id string, st *ledgerStats) {
	t.Helper()
	info, err := c.Job(ctx, id)
	if err != nil {
		t.Errorf("job %d (%s) lost: %v", n, id, err)
		return
	}
	if info.State != flow.StateCompleted {
		t.Errorf("job %d: %s (%s), crash_attempt %d attempt %d, errors %+v; want completed", n, info.State, info.Reason, info.CrashAttempt, info.Attempt, info.Errors)
	}
	var args ledgerJob
	if err := info.DecodeArgs(&args); err != nil || args.N != n || !bytes.Equal(args.Pad, padFor(n)) {
		t.Errorf("job %d read back as job %d with %d bytes of padding (%v), want %d", n, args.N, len(args.Pad), err, len(padFor(n)))
	}
	var steps []string
	for _, s := range info.Steps {
		steps = append(steps, fmt.Sprintf("%s@%d", s.Name, s.Index))
	}
	want := make([]string, ledgerSteps)
	for i := range want {
		want[i] = fmt.Sprintf("%s@%d", stepName(i+1), i)
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("job %d checkpoints (-want +got):\n%s", n, diff)
	}
	st.Crashes += info.CrashAttempt
	st.MaxCrash = max(st.MaxCrash, info.CrashAttempt)
	st.Attempts += info.Attempt
	if info.CrashAttempt > 0 {
		st.Crashed++
	}
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

// checkBadEffects checks the bad-effect jobs (IDs, job k at index k): each
// is archived, its attempts spent (attempts_exhausted) on refused commits
// that recorded errors of the class badClass gives, naming the invalid
// effect; and no effect of any of them applied: its ledger field is absent
// from both ledgers (in the jobs' slot and relayed through the outbox).
// It returns the errors of each class the jobs recorded.
func checkBadEffects(ctx context.Context, t *testing.T, c *flow.Client, rdb redis.UniversalClient, part keys.Partition, ids []string) map[string]int {
	t.Helper()
	classes := map[string]int{}
	for k, id := range ids {
		mode := k % badModes
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Errorf("bad-effect job %s lost: %v", id, err)
			continue
		}
		want, text := badClass(mode), "holds a list"
		if mode == badStepNaN || mode == badDoneNaN {
			text = "NaN"
		}
		refused := 0
		for _, e := range info.Errors {
			classes[e.Class]++
			switch {
			case e.Class == want && strings.Contains(e.Message, text):
				refused++
			case e.Class == "error" || e.Class == "effect":
				t.Errorf("bad-effect job %s (mode %d): error %q of class %s, want class %s naming the invalid effect (%q)", id, mode, e.Message, e.Class, want, text)
			}
		}
		if info.State != flow.StateArchived || info.Reason != "attempts_exhausted" || info.Attempt != badMaxAttempts || refused == 0 {
			t.Errorf("bad-effect job %s (mode %d): %s (%s), attempt %d, crash_attempt %d, errors %+v; want archived (attempts_exhausted) after %d attempts refused with class %s",
				id, mode, info.State, info.Reason, info.Attempt, info.CrashAttempt, info.Errors, badMaxAttempts, want)
		}
	}
	fields := make([]string, len(ids))
	for k := range ids {
		fields[k] = badField(k)
	}
	if len(fields) > 0 {
		for _, ledger := range []string{part.Tag() + ":u:ledger", foreignLedger(part.NS)} {
			got, err := rdb.HMGet(ctx, ledger, fields...).Result()
			if err != nil {
				t.Fatalf("reading ledger %s: %v", ledger, err)
			}
			for k, v := range got {
				if v != nil {
					t.Errorf("ledger %s: the refused effect of bad-effect job %s applied: %s = %v", ledger, ids[k], fields[k], v)
				}
			}
		}
	}
	if typ, err := rdb.Type(ctx, part.Tag()+":u:"+badList).Result(); err != nil || typ != "list" {
		t.Errorf("%s holds a %s (%v), want the list the bad INCRBYs hit", part.Tag()+":u:"+badList, typ, err)
	}
	if n, err := rdb.Exists(ctx, part.Tag()+":u:badz").Result(); err != nil || n != 0 {
		t.Errorf("the NaN ZADDs' key exists (%d, %v)", n, err)
	}
	return classes
}
