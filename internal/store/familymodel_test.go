package store_test

// TestFamilyModel is a randomised model-based test of parents and their
// children (spawn and join) at the store level, which TestModel and
// TestFlowModel leave out. Parents live in partition q:0; each spawning
// step enqueues 1 to 5 children (Relayed, with a ParentRef), each in q:0
// (told at once by the script that finishes it) or in q:1 (told through
// q:1's outbox and the relay, lua/notify.lua), and checkpoints the list;
// the spawn is now and then run again (a step re-run after a crash, or a
// re-sent call), and now and then not checkpointed (a Spawn that failed
// part-way, and a handler that went on). A parent joins children of its steps (collect all, 'a',
// or fail fast, 'f') as flow.Join does: it reads its records
// (store.Kids) and waits (ack 'wait', WaitSpec) for those not finished.
// Children are claimed and acked (ok, retry, crash, skip to archived,
// revoke to cancelled), reaped, cancelled, deleted, redriven, released;
// parents likewise (half their completions through a store that deletes
// completed jobs at once), run now, and the clock moves. Operations are in
// familymodel_ops_test.go.
//
// After every step Redis is read with an unfaulted client and checked:
//
//   - no job is lost, none exists the model does not know (every 10
//     steps, by SCAN), each is in the state class the model says, and in
//     exactly the index its state names (sched or a later bucket, run,
//     its available list once, its terminal zset);
//   - every child is spawned exactly once: a spawn run again, or a call
//     re-sent, adds none a second time, even one deleted since;
//   - a parent's records of its children (k:<id>) hold exactly the
//     latest end of each finished child the model has told it of, and
//     its counts (kc:<id>) the number of them and of those failed: each
//     end counted once, whatever re-sends, relays and redrives did; a
//     child redriven or released is withdrawn (no record, not counted,
//     and a wait that counted it waits for it again) until it ends anew;
//   - a waiting parent is scheduled with the step and count of its wait
//     (children named and not yet told), and is woken (available, its
//     wait cleared) exactly when its policy is met: not before, not
//     after, once;
//   - a deleted job leaves none of its keys (hash, body, errors,
//     checkpoints, children's records and counts).
//
// It runs against miniredis and against the shared redis-server through
// the chaos proxy (dropped replies, duplicated requests).
//
// Environment:
//
//	SLUICE_FAMILYMODEL_SEED   the seed (default: from the time); logged
//	SLUICE_FAMILYMODEL_STEPS  steps per run (default 250)
//	SLUICE_FAMILYMODEL_LOG    how many of the last operations a failure
//	                          shows (default 30)

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

const (
	famDefaultSteps = 250
	famLease        = 30 * time.Second
	famLogKeep      = 30
	famMaxParents   = 12
	// famRecheck is a join's safety-net recheck: far beyond any run's
	// clock, so that only the children (or a run-now) wake a parent
	famRecheck = 1000 * time.Hour
)

func TestFamilyModel(t *testing.T) {
	t.Parallel()
	seed := envSeed(t, "SLUICE_FAMILYMODEL_SEED")
	steps := envSteps(t, "SLUICE_FAMILYMODEL_STEPS", famDefaultSteps)
	t.Logf("family model: seed %d, %d steps; reproduce with SLUICE_FAMILYMODEL_SEED=%d SLUICE_FAMILYMODEL_STEPS=%d go test -count=1 -run TestFamilyModel ./internal/store/",
		seed, steps, seed, steps)
	for _, lossy := range []bool{false, true} {
		name := "miniredis"
		if lossy {
			name = "redis-lossy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newFamRun(t, seed, steps, lossy)
			r.run()
		})
	}
}

// famWait is a parent's open join wait.
type famWait struct {
	step    string
	members []string // the children named, not told of when it began
	left    int
	policy  string // "a" or "f"
}

// famJob is the model of one job, parent or child.
type famJob struct {
	id   string
	part int // partition index: 0 or 1
	// state: "pending" (available, scheduled, retryable), "running", or a
	// terminal state
	state   string
	lease   string
	fence   int64
	started int64
	// a child's parent and step ("" for a parent)
	parent, step string
	// a parent's: its steps' children, in order; the latest end of each
	// child it was told of; its open wait
	steps    map[string][]string
	stepList []string
	kids     map[string]string
	kidStep  map[string]string
	created  int64 // a parent's enqueue time (ms): its children's IDs carry it
	wait     *famWait
	// woken: a wait ended by its children (or a run-now): the parent must
	// be available with no wait fields until it is claimed
	woken bool
}

func (j *famJob) isParent() bool { return j.parent == "" }

// famNote is a child's end, or its withdrawal (a redrive), told through
// q:1's outbox, not yet relayed.
type famNote struct {
	parent, step, child, state string
	stale                      bool // a stale entry put back (opStaleNote): delivers nothing
	withdraw                   bool // the child was redriven: its parent forgets its end
}

type famRun struct {
	t     *testing.T
	ctx   context.Context
	name  string
	seed  uint64
	steps int
	rng   *rand.Rand
	st    *store.Store
	// discard is st with completed jobs deleted at once: the store some
	// parents' completions are acked through
	discard *store.Store
	direct  redis.UniversalClient
	proxy   *chaos.Proxy
	clk     *testClock
	parts   [2]keys.Partition
	epoch   time.Time

	jobs map[string]*famJob
	// gone: deleted jobs (ID -> partition), checked absent with all their
	// keys; spawned: every child ever spawned (ID -> partition), so that
	// a spawn run again is checked to add none of them again
	gone    map[string]int
	spawned map[string]int
	notes   []famNote
	// goneCreated: a deleted parent's creation time (its children's IDs
	// carry it): its ID may be enqueued again at another time
	goneCreated map[string]int64
	// relayedEntries: q:1's outbox entries seen before a relay
	relayedEntries []redis.XMessage
	step           int
	tries          int // of the last call retry sent
	nextID         int
	nonce          int
	log            []string
	counts         map[string]int
	snap           *famSnap
}

func newFamRun(t *testing.T, seed uint64, steps int, lossy bool) *famRun {
	t.Helper()
	r := &famRun{
		t: t, ctx: context.Background(), seed: seed, steps: steps,
		rng:     rand.New(rand.NewPCG(seed, 0xfa311)),
		clk:     &testClock{now: time.Now().Truncate(time.Millisecond)},
		jobs:    map[string]*famJob{},
		gone:    map[string]int{},
		spawned: map[string]int{},

		goneCreated: map[string]int64{},
		counts:      map[string]int{},
	}
	var rdb redis.UniversalClient
	r.name, rdb, r.direct, r.proxy = modelRedis(t, lossy, seed, lua.Enqueue, lua.Claim, lua.Ack, lua.Step, lua.Cancel,
		lua.Delete, lua.Redrive, lua.Maintain, lua.RunNow, lua.Notify, lua.Relay)
	cfg := store.Config{
		NS: redistest.NewNamespace(t), RetainCompleted: time.Hour, RetainArchived: 6 * time.Hour,
		RetainCancelled: 2 * time.Hour, CrashLimit: 3, CrashDelay: time.Second, Now: r.clk.Now,
	}
	r.st = store.New(rdb, cfg)
	cfg.RetainCompleted = -1
	r.discard = store.New(rdb, cfg)
	r.parts = [2]keys.Partition{r.st.Partition("q", 0), r.st.Partition("q", 1)}
	r.epoch = r.clk.Now()
	return r
}

func (r *famRun) now() int64 { return r.clk.Now().UnixMilli() }

func (r *famRun) logf(format string, a ...any) {
	r.log = keepLast(r.log, fmt.Sprintf("step %d [t%+v]: ", r.step, r.clk.Now().Sub(r.epoch))+fmt.Sprintf(format, a...),
		"SLUICE_FAMILYMODEL_LOG", famLogKeep)
}

func (r *famRun) fail(format string, a ...any) {
	r.t.Helper()
	r.t.Fatalf("family model %s: %s\n\nseed %d, step %d; reproduce with\n  SLUICE_FAMILYMODEL_SEED=%d SLUICE_FAMILYMODEL_STEPS=%d go test -count=1 -run 'TestFamilyModel/%s' ./internal/store/\n(SLUICE_FAMILYMODEL_LOG=n shows the last n operations)\nlast operations:\n  %s",
		r.name, fmt.Sprintf(format, a...), r.seed, r.step, r.seed, r.steps, r.name, strings.Join(r.log, "\n  "))
}

func (r *famRun) run() {
	r.t.Helper()
	start := time.Now()
	r.check(true)
	for r.step = 1; r.step <= r.steps; r.step++ {
		r.randomOp()
		r.check(r.step%10 == 0)
	}
	var fired string
	if r.proxy != nil {
		d, u := r.proxy.Fired()
		fired = fmt.Sprintf("; proxy faults: %d replies dropped, %d requests duplicated", d, u)
	}
	var ks []string
	for k, v := range r.counts {
		ks = append(ks, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ks)
	r.t.Logf("family model %s: %d steps in %v, %d jobs at the end%s; %s", r.name, r.steps, time.Since(start).Round(time.Millisecond),
		len(r.jobs), fired, strings.Join(ks, " "))
}

func (r *famRun) ids() []string { return slices.Sorted(maps.Keys(r.jobs)) }

// inState lists the jobs in one of states (parents, children or both).
func (r *famRun) inState(parents, children bool, states ...string) []*famJob {
	var out []*famJob
	for _, id := range r.ids() {
		j := r.jobs[id]
		if (j.isParent() && !parents) || (!j.isParent() && !children) {
			continue
		}
		if slices.Contains(states, j.state) {
			out = append(out, j)
		}
	}
	return out
}

// ---- the snapshot ----

type famState struct {
	exists        bool
	state         string
	lease         string
	fence         int64
	ws, wc, wp    string
	parent, pstep string
	keysLeft      []string // of a gone job: its keys that exist
	kids          map[string]string
	kc            map[string]string
	termScore     int64 // deletion time, in its terminal zset
	indexes       []string
	availListings int
}

type famSnap struct {
	jobs    map[string]famState
	scanned map[string]int
	outbox  [2]int64
}

var famTerminal = []string{"completed", "archived", "cancelled", "quarantined"}

func (r *famRun) read(full bool) *famSnap {
	ctx := r.ctx
	s := &famSnap{jobs: map[string]famState{}}
	type where struct {
		id   string
		part int
	}
	var all []where
	for _, id := range r.ids() {
		all = append(all, where{id, r.jobs[id].part})
	}
	for id, p := range r.gone {
		all = append(all, where{id, p})
	}
	hc := make([]*redis.SliceCmd, len(all))
	kidc := make([]*redis.MapStringStringCmd, len(all))
	kcc := make([]*redis.MapStringStringCmd, len(all))
	exc := make([][]*redis.IntCmd, len(all))
	var runc, availc [2]*redis.StringSliceCmd
	var termc [2][]*redis.ZSliceCmd
	var obc [2]*redis.IntCmd
	_, err := r.direct.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, w := range all {
			p := r.parts[w.part]
			hc[i] = pl.HMGet(ctx, p.Job(w.id), keys.FieldState, keys.FieldLeaseID, keys.FieldFence, keys.FieldWaitStep,
				keys.FieldWaitCount, keys.FieldWaitPolicy, keys.FieldParent, keys.FieldParentStep)
			kidc[i] = pl.HGetAll(ctx, p.Kids(w.id))
			kcc[i] = pl.HGetAll(ctx, p.KidCount(w.id))
			for _, k := range []string{p.Job(w.id), p.Body(w.id), p.Errors(w.id), p.Steps(w.id), p.Kids(w.id), p.KidCount(w.id)} {
				exc[i] = append(exc[i], pl.Exists(ctx, k))
			}
		}
		for k, p := range r.parts {
			runc[k] = pl.ZRange(ctx, p.Running(), 0, -1)
			availc[k] = pl.LRange(ctx, p.Available(0), 0, -1)
			for _, st := range famTerminal {
				termc[k] = append(termc[k], pl.ZRangeWithScores(ctx, p.Terminal(st), 0, -1))
			}
			obc[k] = pl.XLen(ctx, p.Outbox())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		r.fail("reading Redis: %v", err)
	}
	// the indexes, per partition: ID -> the indexes that list it
	var idx [2]map[string][]string
	var avail [2]map[string]int
	var term [2]map[string]int64
	for k, p := range r.parts {
		idx[k], avail[k], term[k] = map[string][]string{}, map[string]int{}, map[string]int64{}
		sched, err := store.SchedIndex(ctx, r.direct, p)
		if err != nil {
			r.fail("reading the scheduled index: %v", err)
		}
		for id := range sched {
			idx[k][id] = append(idx[k][id], "sched")
		}
		for _, id := range runc[k].Val() {
			if id != keys.RunAnchor {
				idx[k][id] = append(idx[k][id], "run")
			}
		}
		for _, id := range availc[k].Val() {
			if avail[k][id] == 0 {
				idx[k][id] = append(idx[k][id], "available")
			}
			avail[k][id]++
		}
		for i, st := range famTerminal {
			for _, z := range termc[k][i].Val() {
				id := z.Member.(string)
				idx[k][id] = append(idx[k][id], st)
				term[k][id] = int64(z.Score)
			}
		}
		s.outbox[k] = obc[k].Val()
	}
	for i, w := range all {
		v := hc[i].Val()
		str := func(k int) string { x, _ := v[k].(string); return x }
		g := famState{kids: kidc[i].Val(), kc: kcc[i].Val(), indexes: idx[w.part][w.id], availListings: avail[w.part][w.id],
			termScore: term[w.part][w.id]}
		for k, c := range exc[i] {
			if c.Val() > 0 {
				g.keysLeft = append(g.keysLeft, []string{"job", "body", "errors", "steps", "kids", "kidcount"}[k])
			}
		}
		if v[0] != nil {
			f, _ := strconv.ParseInt(str(2), 10, 64)
			g.exists, g.state, g.lease, g.fence = true, store.StateName(str(0)), str(1), f
			g.ws, g.wc, g.wp, g.parent, g.pstep = str(3), str(4), str(5), str(6), str(7)
		}
		s.jobs[w.id] = g
	}
	if full {
		s.scanned = map[string]int{}
		for k, p := range r.parts {
			iter := r.direct.Scan(ctx, 0, p.Job("*"), 1000).Iterator()
			for iter.Next(ctx) {
				s.scanned[strings.TrimPrefix(iter.Val(), p.Job(""))] = k
			}
			if err := iter.Err(); err != nil {
				r.fail("SCAN: %v", err)
			}
		}
		for k := range r.parts {
			for id := range idx[k] {
				if r.jobs[id] == nil || r.jobs[id].part != k {
					s.scanned["index:"+id] = k
				}
			}
		}
	}
	return s
}

// wantIndex is the index a job in Redis state state must be in.
func wantIndex(state string) string {
	switch state {
	case "scheduled", "retryable":
		return "sched"
	case "running":
		return "run"
	}
	return state
}

// check reads Redis and fails the run unless it keeps the invariants.
func (r *famRun) check(full bool) {
	r.t.Helper()
	s := r.read(full)
	r.snap = s
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	for _, id := range r.ids() {
		j, g := r.jobs[id], s.jobs[id]
		if !g.exists {
			add("job %s (%s) is lost: no hash", id, j.state)
			continue
		}
		if coarse(g.state) != j.state {
			add("job %s is %s, the model says %s", id, g.state, j.state)
		}
		if j.state == "running" && (g.lease != j.lease || g.fence != j.fence) {
			add("running job %s holds lease %s/%d, the model says %s/%d", id, g.lease, g.fence, j.lease, j.fence)
		}
		if w := wantIndex(g.state); len(g.indexes) != 1 || g.indexes[0] != w {
			add("job %s (%s) is in the indexes %v, want exactly %s", id, g.state, g.indexes, w)
		}
		if g.state == "available" && g.availListings != 1 {
			add("available job %s is listed %d times", id, g.availListings)
		}
		if !j.isParent() {
			if g.parent != r.ref(j.parent).String() || g.pstep != j.step {
				add("child %s names parent %q step %q, want %q %q", id, g.parent, g.pstep, r.ref(j.parent).String(), j.step)
			}
			continue
		}
		// the parent's records: the latest end of each child told
		rec := map[string]string{}
		for c, v := range g.kids {
			st, _, _ := strings.Cut(v, "\n")
			rec[c] = st
		}
		if !maps.Equal(rec, j.kids) {
			add("parent %s records children %v, the model told it %v", id, rec, j.kids)
		}
		want := map[string]string{}
		for c, st := range j.kids {
			step := j.kidStep[c]
			n, _ := strconv.Atoi(want[step])
			want[step] = strconv.Itoa(n + 1)
			if st != "completed" {
				n, _ := strconv.Atoi(want[step+":f"])
				want[step+":f"] = strconv.Itoa(n + 1)
			}
		}
		got := map[string]string{}
		for k, v := range g.kc {
			if strings.HasPrefix(k, "w:") || strings.HasPrefix(k, "d:") {
				if j.kidStep[k[2:]] == "" && strings.HasPrefix(k, "w:") {
					add("parent %s marks %s for a wait, not a child of it", id, k[2:])
				}
				continue
			}
			if v == "0" { // a count withdrawn to none (a redrive), or no failure
				continue
			}
			got[k] = v
		}
		if !maps.Equal(got, want) {
			add("parent %s counts its children %v, want %v (told %v)", id, got, want, j.kids)
		}
		// its wait
		switch {
		case j.wait != nil:
			if g.state != "scheduled" || g.ws != j.wait.step || g.wc != strconv.Itoa(j.wait.left) || g.wp != j.wait.policy {
				add("waiting parent %s is %s with wait step %q count %q policy %q, want scheduled %q %d %q (members %v, told %v)",
					id, g.state, g.ws, g.wc, g.wp, j.wait.step, j.wait.left, j.wait.policy, j.wait.members, j.kids)
			}
		case g.ws != "" || g.wc != "" || g.wp != "":
			add("parent %s (%s) keeps wait step %q count %q policy %q, the model has no wait", id, g.state, g.ws, g.wc, g.wp)
		}
		if j.woken && g.state != "available" {
			add("parent %s woken by its children is %s, want available", id, g.state)
		}
	}
	for id := range r.gone {
		if g := s.jobs[id]; len(g.keysLeft) > 0 || len(g.indexes) > 0 {
			add("deleted job %s left keys %v, indexes %v", id, g.keysLeft, g.indexes)
		}
	}
	if full {
		for id, k := range s.scanned {
			if j := r.jobs[id]; j == nil || j.part != k {
				add("job %s exists in partition %d, which the model does not know", id, k)
			}
		}
	}
	if s.outbox[0] != 0 {
		add("partition 0's outbox holds %d entries, want none", s.outbox[0])
	}
	if int(s.outbox[1]) != len(r.notes) {
		add("partition 1's outbox holds %d entries, the model %d notifications", s.outbox[1], len(r.notes))
	}
	if len(bad) > 0 {
		r.fail("invariants broken:\n  %s", strings.Join(bad, "\n  "))
	}
}
