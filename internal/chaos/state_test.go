package chaos

// The final checks on the stored state, read straight from Redis: every
// job hash in exactly the index its state names and nothing else in the
// indexes, the stats counters equal to the real counts, and quarantine for
// the culprits alone.

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// terminalStates are the states whose jobs sit in a zset of their own
// (keys.Partition.Terminal).
var terminalStates = []string{"completed", "archived", "quarantined", "cancelled"}

// partitionState is what checkPartition found in one partition.
type partitionState struct {
	Jobs        int              // job hashes
	ByState     map[string]int64 // job hashes per state
	Stats       map[string]int64 // the stats hash, fields that are not 0
	Quarantined []string         // job IDs (queue:partition:local) in the quarantined zset
	Problems    []string
}

// checkPartition reads every job hash of part (SCAN over its j: keys) and
// every index (the available lists, the running, scheduled and terminal
// zsets), and lists as Problems:
//   - a job whose state names no known index, or which is not exactly once
//     in the index its state names (available: the list of its priority;
//     running: run; scheduled and retryable: sched; a terminal state: that
//     state's zset), or which is also in another index;
//   - an index member that has no job hash;
//   - a stats counter (keys.Partition.Stats) that differs from the number
//     of job hashes in its state.
//
// Nothing may change part meanwhile: every worker has ended. The error is
// Redis's, when it could not be read.
func checkPartition(ctx context.Context, rdb redis.UniversalClient, part keys.Partition) (partitionState, error) {
	st := partitionState{ByState: map[string]int64{}, Stats: map[string]int64{}}
	bad := func(format string, a ...any) { st.Problems = append(st.Problems, fmt.Sprintf(format, a...)) }

	// The job hashes.
	jobPrefix := part.Prefix() + "j:"
	var jobKeys []string
	iter := rdb.Scan(ctx, 0, globEscape(jobPrefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		jobKeys = append(jobKeys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return st, fmt.Errorf("SCAN %s*: %w", jobPrefix, err)
	}
	sort.Strings(jobKeys)
	jobKeys = slices.Compact(jobKeys) // SCAN may return a key twice
	want := map[string]string{}       // local ID -> the index its state names
	states := map[string]string{}
	cmds := make([]*redis.SliceCmd, len(jobKeys))
	// Each command's error (WRONGTYPE: a job key that is not a hash) is
	// read from it below.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range jobKeys {
			cmds[i] = p.HMGet(ctx, k, keys.FieldState, keys.FieldPriority)
		}
		return nil
	})
	for i, k := range jobKeys {
		id := strings.TrimPrefix(k, jobPrefix)
		v, err := cmds[i].Result()
		if err != nil {
			bad("job key %s: %v", k, err)
			continue
		}
		st.Jobs++
		s, _ := v[0].(string)
		state := store.StateName(s)
		states[id] = state
		st.ByState[state]++
		pr, _ := v[1].(string)
		idx, ok := indexFor(state, priorityOf(pr))
		if !ok {
			bad("job %s: state %q (stored %q) names no index", id, state, s)
			continue
		}
		want[id] = idx
	}

	// The indexes: index name -> members, one entry per occurrence.
	members := map[string][]string{}
	for prio := range keys.Priorities {
		l, err := rdb.LRange(ctx, part.Available(prio), 0, -1).Result()
		if err != nil {
			return st, fmt.Errorf("LRANGE %s: %w", part.Available(prio), err)
		}
		members[availIndex(prio)] = l
	}
	// The scheduled index: the sched zset and the buckets of later jobs,
	// less the entries the scripts skip as stale (store.SchedIndex), and
	// with every sched entry whose job is not scheduled or retryable.
	idx, err := store.SchedIndex(ctx, rdb, part)
	if err != nil {
		return st, fmt.Errorf("scheduled index: %w", err)
	}
	sched, err := rdb.ZRange(ctx, part.Sched(), 0, -1).Result()
	if err != nil {
		return st, fmt.Errorf("ZRANGE %s: %w", part.Sched(), err)
	}
	for _, id := range sched {
		if _, ok := idx[id]; !ok && states[id] != "scheduled" && states[id] != "retryable" {
			members["sched"] = append(members["sched"], id)
		}
	}
	members["sched"] = append(members["sched"], slices.Sorted(maps.Keys(idx))...)
	zsets := map[string]string{"run": part.Running()}
	for _, s := range terminalStates {
		zsets[s] = part.Terminal(s)
	}
	for name, key := range zsets {
		z, err := rdb.ZRange(ctx, key, 0, -1).Result()
		if err != nil {
			return st, fmt.Errorf("ZRANGE %s: %w", key, err)
		}
		if name == "run" && slices.Contains(z, keys.RunAnchor) {
			// no job: the member that keeps the index a skiplist
			if sc, err := rdb.ZScore(ctx, key, keys.RunAnchor).Result(); err != nil || !math.IsInf(sc, 1) {
				bad("%s holds its anchor at %v (%v), want +inf", key, sc, err)
			}
			z = slices.DeleteFunc(z, func(id string) bool { return id == keys.RunAnchor })
		}
		members[name] = z
	}
	in := map[string][]string{} // local ID -> the indexes it is in, once per occurrence
	for _, name := range slices.Sorted(maps.Keys(members)) {
		for _, id := range members[name] {
			in[id] = append(in[id], name)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if got := in[id]; len(got) != 1 || got[0] != want[id] {
			bad("job %s (%s): in indexes %v, want exactly [%s]", id, states[id], got, want[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(in)) {
		if _, ok := states[id]; !ok {
			bad("index member %s (in %v) has no job hash", id, in[id])
		}
	}
	for _, id := range members["quarantined"] {
		st.Quarantined = append(st.Quarantined, keys.Ref{Partition: part, Local: id}.String())
	}

	// The counters.
	raw, err := rdb.HGetAll(ctx, part.Stats()).Result()
	if err != nil {
		return st, fmt.Errorf("HGETALL %s: %w", part.Stats(), err)
	}
	for f, v := range raw {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad("stats field %s = %q is not a number", f, v)
			continue
		}
		if n != 0 {
			st.Stats[f] = n
		}
	}
	for _, s := range slices.Sorted(maps.Keys(unionKeys(st.Stats, st.ByState))) {
		if st.Stats[s] != st.ByState[s] {
			bad("stats counter %s = %d, but %d job hashes are %s", s, st.Stats[s], st.ByState[s], s)
		}
	}
	return st, nil
}

// report fails t with st's problems, if it has any.
func (st partitionState) report(t *testing.T, part keys.Partition) {
	t.Helper()
	if len(st.Problems) > 0 {
		t.Errorf("partition %s: %d job hashes %v, stats %v; %d problems:\n  %s", part.Tag(), st.Jobs, st.ByState, st.Stats,
			len(st.Problems), strings.Join(firstN(st.Problems, 20), "\n  "))
	}
}

// partitionsOf lists the partitions that have any key in namespace ns
// (SCAN), with those given.
func partitionsOf(ctx context.Context, t *testing.T, rdb redis.UniversalClient, ns string, known ...keys.Partition) []keys.Partition {
	t.Helper()
	found := map[keys.Partition]bool{}
	for _, p := range known {
		found[p] = true
	}
	iter := rdb.Scan(ctx, 0, globEscape("{"+ns+":")+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		end := strings.IndexByte(k, '}')
		if end < 0 {
			continue
		}
		tag := k[len(ns)+2 : end] // queue:index
		i := strings.LastIndexByte(tag, ':')
		if i < 0 {
			continue
		}
		n, err := strconv.Atoi(tag[i+1:])
		if err != nil {
			continue // a key of another family, not a partition's
		}
		found[keys.Partition{NS: ns, Queue: tag[:i], Index: n}] = true
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN {%s:*: %v", ns, err)
	}
	out := slices.Collect(maps.Keys(found))
	slices.SortFunc(out, func(a, b keys.Partition) int { return strings.Compare(a.Tag(), b.Tag()) })
	return out
}

// indexFor names the index a job in state with priority prio belongs in.
func indexFor(state string, prio int) (string, bool) {
	switch state {
	case "available":
		return availIndex(prio), true
	case "running":
		return "run", true
	case "scheduled", "retryable":
		return "sched", true
	case "completed", "archived", "quarantined", "cancelled":
		return state, true
	}
	return "", false
}

func availIndex(prio int) string { return "avail:" + strconv.Itoa(prio) }

// priorityOf reads a job's 'pr' field as lua/lib_ready.lua's priority does: a
// missing or out-of-range one is 0.
func priorityOf(v string) int {
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p >= keys.Priorities {
		return 0
	}
	return p
}

// globEscape quotes the characters special to a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unionKeys(a, b map[string]int64) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... (%d in all)", len(s)))
	}
	return s
}

// TestCheckPartition: checkPartition finds nothing wrong with a consistent
// partition, and each kind of inconsistency in one that is not.
func TestCheckPartition(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := newClient(t, &redis.Options{Addr: startRedis(t).Addr()})
	part := keys.Partition{NS: "tcheck", Queue: "q"}
	job := func(id, state string, prio int) {
		code := map[string]string{"available": "1", "running": "3", "retryable": "4", "completed": "5", "quarantined": "7"}[state]
		if err := rdb.HSet(ctx, part.Job(id), keys.FieldState, code, keys.FieldPriority, prio, keys.FieldKind, "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	job("a", "available", 2)
	job("b", "running", 0)
	job("c", "retryable", 0)
	job("d", "completed", 0)
	rdb.RPush(ctx, part.Available(2), "a")
	rdb.ZAdd(ctx, part.Running(), redis.Z{Score: 1, Member: "b"})
	rdb.ZAdd(ctx, part.Sched(), redis.Z{Score: 1, Member: "c"})
	rdb.ZAdd(ctx, part.Terminal("completed"), redis.Z{Score: 1, Member: "d"})
	rdb.HSet(ctx, part.Stats(), "available", 1, "running", 1, "retryable", 1, "completed", 1, "archived", 0)
	st, err := checkPartition(ctx, rdb, part)
	if err != nil || len(st.Problems) > 0 || st.Jobs != 4 {
		t.Fatalf("a consistent partition: %d jobs, problems %q, %v", st.Jobs, st.Problems, err)
	}

	job("e", "quarantined", 0)                                    // in no index
	rdb.ZAdd(ctx, part.Sched(), redis.Z{Score: 1, Member: "f"})   // no hash
	rdb.ZAdd(ctx, part.Running(), redis.Z{Score: 1, Member: "d"}) // also in run
	rdb.RPush(ctx, part.Available(0), "a")                        // the wrong priority too
	rdb.HIncrBy(ctx, part.Stats(), "running", 1)                  // one too many
	st, err = checkPartition(ctx, rdb, part)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`job a (available): in indexes [avail:0 avail:2], want exactly [avail:2]`,
		`job d (completed): in indexes [completed run], want exactly [completed]`,
		`job e (quarantined): in indexes [], want exactly [quarantined]`,
		`index member f (in [sched]) has no job hash`,
		`stats counter quarantined = 0, but 1 job hashes are quarantined`,
		`stats counter running = 2, but 1 job hashes are running`,
	}
	if diff := cmp.Diff(want, st.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
