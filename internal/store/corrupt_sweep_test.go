package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestCorruptDataIsItsJobsAlone is the class-level test of two lessons:
// Redis does not roll a script back (a script validates, then writes), and
// one job's failure is that job's alone, even inside a batched call.
//
// Each subtest damages one thing, from one point of a fixed scenario on
// (re-damaging it before every later step, as a script may set the
// damage aside): a key of the partition that the bad jobs own or name
// (their pin list, wait lists, rate bucket, bucket of later jobs, unique
// key, hold lists, checkpoints, body, error list, children, their very
// hash) replaced by a value of another type; a field of the bad jobs'
// hashes read as a number or a name set to 'x', '1.5', 'nan', 'inf',
// '-1', '1e400', the empty string (or, in the full sweep, megabytes of digits); a field
// of their rate bucket likewise; or a key every job shares (an index, the
// stats, the priority mask) replaced. The
// scenario, healthy jobs of every shape side by side with bad ones of the
// same shapes, runs batched calls that mix them: enqueues, claims by
// three workers (one the bad jobs' pinned worker), checkpoints,
// renewals, one ack of every outcome, a delete by selector, cancel, run
// now, reroute, signal, maintenance past due times and leases, a
// redrive, then rounds of claims and completions until every healthy
// job is done. After every step:
//
//   - (a) each healthy job is in exactly the index its state names (one
//     ready or pin list, or a wait list, when available), and the state
//     counts agree with the jobs; at the end each healthy job completed
//     (or was cancelled, as asked);
//   - (b) no bad job is lost: one with a hash is in an index its state
//     names (the test's own overwrites excepted);
//   - (c) a call that returned an error changed no key of the partition.
//
// A damaged shared key (shared) spares no job: (a) is not asked there.
//
// The full sweep (SLUICE_SWEEP=full, make sweep: about 600 cases per
// backend, minutes under -race) damages each key with every other type
// and each field with every value, on every backend. By default the
// sweep is cut to what make test can afford: each key with one other
// type, each field with two of the values (the fields together meet all
// of them), on redis-server; miniredis and the cluster take the damaged
// keys only, each from one of its phases (the keys in turn start from
// every phase). A field is read by the same script on each, but in another
// Lua under miniredis (gopher-lua reads numbers and matches patterns
// apart from Redis's: TestScoreOKAsRedis, TestValuesOfMegabytes); its
// field cases cost make test a minute under -race, and make sweep runs
// them.
func TestCorruptDataIsItsJobsAlone(t *testing.T) {
	t.Parallel()
	full := os.Getenv("SLUICE_SWEEP") == "full"
	cases := corruptions(full)
	for _, b := range backends(t) {
		if testing.Short() && b.name == "cluster" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for i, c := range cases {
				phases := c.phases
				if !full && b.name != "redis" {
					if strings.HasPrefix(c.name, "field ") {
						continue
					}
					// one phase of each damaged key, the keys in turn
					// starting from every phase
					phases = phases[i%len(phases):][:1]
				}
				for _, ph := range phases {
					t.Run(c.name+"/from "+phaseNames[ph], func(t *testing.T) {
						t.Parallel()
						runSweep(t, b, c, ph)
					})
				}
			}
		})
	}
}

// The points of the scenario a damage starts at (step indexes; steps
// counts them).
const (
	phaseStart   = iota // before anything is enqueued
	phaseQueued         // once the jobs are enqueued, before the claims
	phaseRunning        // once the jobs are claimed, before their acks
	phaseDone           // once the acks are in, before the operator's calls and maintenance
)

var phaseNames = []string{"start", "queued", "running", "done"}

// corruption is one kind of damage.
type corruption struct {
	name   string
	phases []int
	// damage (re)applies it.
	damage func(s *sweep)
	// seed, when set, changes the bad jobs' options as they are enqueued.
	seed func(j *store.NewJob)
	// shared says it damages what every job needs: the healthy jobs are
	// held to (b) and (c) only.
	shared bool
	// noStats says the test itself takes jobs from the state counts (it
	// overwrites job keys).
	noStats bool
}

// tBad is when the bad far job is due: in a bucket of later jobs of its
// own (five seconds wide), ten minutes on.
var tBad = epoch.Add(10*time.Minute + 2500*time.Millisecond)

// badBucket is the name of tBad's bucket of later jobs (lib_ready.lua).
func badBucket() string { return strconv.FormatInt(tBad.UnixMilli()/5000, 10) }

func corruptions(full bool) []corruption {
	allPhases := []int{phaseStart, phaseRunning, phaseDone}
	fieldPhases := []int{phaseQueued, phaseRunning}
	// The control: the scenario with nothing damaged.
	out := []corruption{{name: "nothing damaged", phases: []int{phaseStart}, damage: func(*sweep) {}}}
	others := func(natural string) []string {
		var ts []string
		for _, t := range corruptTypes {
			if t != natural {
				ts = append(ts, t)
			}
		}
		return ts
	}
	// Keys the bad jobs own or name, by kind, with their natural type.
	perJob := func(of func(p keys.Partition, id string) string) func(s *sweep) []string {
		return func(s *sweep) []string {
			var ks []string
			for _, id := range s.bad {
				ks = append(ks, of(s.p, id))
			}
			return ks
		}
	}
	one := func(of func(p keys.Partition) string) func(s *sweep) []string {
		return func(s *sweep) []string { return []string{of(s.p)} }
	}
	owned := []struct {
		name    string
		typ     string
		keys    func(s *sweep) []string
		noStats bool
	}{
		{"pin list", "list", one(func(p keys.Partition) string { return p.Pinned("wb") }), false},
		{"concurrency wait list", "list", one(func(p keys.Partition) string { return p.ConcurrencyWait("kb") }), false},
		{"rate wait list", "list", one(func(p keys.Partition) string { return p.RateWait("rb") }), false},
		{"rate bucket", "hash", one(func(p keys.Partition) string { return p.RateBucket("rb") }), false},
		{"rate promises", "zset", one(func(p keys.Partition) string { return p.RateLetGo("rb") }), false},
		{"bucket of later jobs", "list", one(func(p keys.Partition) string { return p.LaterBucket(badBucket()) }), false},
		{"unique key", "string", one(func(p keys.Partition) string { return p.Unique("ub") }), false},
		{"quarantine hold", "string", one(func(p keys.Partition) string { return p.QuarantineHold("fpb") }), false},
		{"hold list", "list", one(func(p keys.Partition) string { return p.HeldOn("fpb") }), false},
		{"steps key", "hash", perJob(keys.Partition.Steps), false},
		{"body key", "string", perJob(keys.Partition.Body), false},
		{"error list", "list", perJob(keys.Partition.Errors), false},
		{"kids key", "hash", perJob(keys.Partition.Kids), false},
		{"kidcount key", "hash", perJob(keys.Partition.KidCount), false},
		{"job key", "hash", perJob(keys.Partition.Job), true},
	}
	for _, k := range owned {
		types := others(k.typ)
		if !full {
			types = types[:1]
		}
		for _, typ := range types {
			out = append(out, corruption{
				name: k.name + " is a " + typ, phases: allPhases, noStats: k.noStats,
				damage: func(s *sweep) {
					for _, key := range k.keys(s) {
						s.destroy(key, typ)
					}
				},
			})
		}
	}
	// Keys every job of the partition shares.
	shared := []struct {
		name string
		typ  string
		key  func(p keys.Partition) string
	}{
		{"sched zset", "zset", keys.Partition.Sched},
		{"run zset", "zset", keys.Partition.Running},
		{"later zset", "zset", keys.Partition.Later},
		{"completed zset", "zset", func(p keys.Partition) string { return p.Terminal("completed") }},
		{"archived zset", "zset", func(p keys.Partition) string { return p.Terminal("archived") }},
		{"cancelled zset", "zset", func(p keys.Partition) string { return p.Terminal("cancelled") }},
		{"stats hash", "hash", keys.Partition.Stats},
		{"priority mask", "string", keys.Partition.Priorities},
		{"ready list 0", "list", func(p keys.Partition) string { return p.Available(0) }},
		{"concurrency hash", "hash", keys.Partition.Concurrency},
		{"waiter counts", "hash", keys.Partition.ConcurrencyWaiting},
		{"rate wake zset", "zset", keys.Partition.RateWake},
		{"pin deadlines", "zset", keys.Partition.PinDeadlines},
		{"outbox", "stream", keys.Partition.Outbox},
		{"idle flag", "string", keys.Partition.Idle},
		{"paused flag", "string", keys.Partition.Paused},
		{"data model", "string", keys.Partition.DataModel},
		{"death reports", "zset", keys.Partition.Deaths},
		{"watch set", "set", keys.Partition.Watching},
	}
	for _, k := range shared {
		for _, typ := range others(k.typ)[:1] {
			out = append(out, corruption{
				name: "shared " + k.name + " is a " + typ, phases: []int{phaseStart, phaseRunning}, shared: true,
				damage: func(s *sweep) { s.destroy(k.key(s.p), typ) },
			})
		}
	}
	// Fields of what every job's calls count in: a state count that is no
	// integer (the count starts anew: noStats), the minute's tally of
	// another type, or with a field that is no integer. A tally or count
	// is no job's: every job is still held to (a).
	out = append(out,
		corruption{name: "stats field running is \"x\"", phases: []int{phaseQueued}, noStats: true,
			damage: func(s *sweep) {
				if k := s.p.Stats(); s.rdb.Type(s.ctx, k).Val() != "string" {
					s.rdb.HSet(s.ctx, k, "running", "x")
				}
			}},
		corruption{name: "minute tally is a string", phases: []int{phaseRunning},
			damage: func(s *sweep) { s.writeCorrupt(s.minute(), "string") }},
		corruption{name: "minute tally field completed is \"x\"", phases: []int{phaseRunning},
			damage: func(s *sweep) {
				if k := s.minute(); s.rdb.Type(s.ctx, k).Val() != "string" {
					s.rdb.HSet(s.ctx, k, "completed", "x")
				}
			}})
	// Fields of the bad jobs' hashes, read as numbers or names.
	values := []string{"x", "1.5", "nan", "inf", "-1", "1e400", "", fieldAbsent}
	if full {
		// past what gopher-lua's matcher, miniredis's, can take where a
		// pattern repeats an item (megabytes_test.go); minutes under -race
		// over every field, so in the full sweep only
		values = append(values, megabytes)
	}
	// done: also from once the acks are in (a redrive, a reap, a run now
	// meet the field then)
	fields := []struct {
		name, field string
		done        bool
	}{
		{"priority", keys.FieldPriority, true},
		{"attempt", keys.FieldAttempt, true},
		{"crash_attempt", keys.FieldCrashAttempt, true},
		{"max_attempts", keys.FieldMaxAttempts, false},
		{"run_at", keys.FieldRunAt, true},
		{"timeout", keys.FieldTimeout, false},
		{"deadline", keys.FieldDeadline, false},
		{"fence", keys.FieldFence, false},
		{"lease_id", keys.FieldLeaseID, false},
		{"worker", keys.FieldWorker, false},
		{"lease_start", keys.FieldLeaseStart, true},
		{"created", keys.FieldCreated, false},
		{"concurrency_key", keys.FieldConcurrencyKey, false},
		{"concurrency_limit", keys.FieldConcurrencyLimit, false},
		{"rate_class", keys.FieldRateClass, false},
		{"sticky_worker", keys.FieldStickyWorker, true},
		{"sticky_mode", keys.FieldStickyMode, false},
		{"sticky_delay", keys.FieldStickyDelay, false},
		{"orphan_count", keys.FieldOrphanCount, false},
		{"signal_seq", keys.FieldSignalSeq, false},
		{"redrives", keys.FieldRedrives, false},
		{"dead_effects", keys.FieldDeadEffects, false},
		{"payload_body", keys.FieldPayloadBody, false},
		{"has_steps", keys.FieldHasSteps, false},
		{"unique", keys.FieldUnique, false},
		{"parent_local", keys.FieldParentLocal, false},
		{"parent", keys.FieldParent, false},
		{"parent_prefix", keys.FieldParentPrefix, false},
		{"parent_step", keys.FieldParentStep, false},
		{"state", keys.FieldState, true},
	}
	for i, fl := range fields {
		phases := fieldPhases
		if fl.done {
			phases = append(slices.Clone(phases), phaseDone)
		}
		for _, v := range sample(values, i, full) {
			out = append(out, corruption{
				name: "field " + fl.name + " is " + strconv.Quote(v), phases: phases,
				// a state overwritten takes its job from the state counts
				noStats: fl.field == keys.FieldState,
				damage:  func(s *sweep) { s.setField(fl.field, v) },
			})
		}
	}
	// Fields of the bad jobs' rate bucket: tokens, updated, n, per, burst.
	for i, fl := range []string{"t", "u", "n", "p", "b"} {
		for _, v := range sample(values, i, full) {
			out = append(out, corruption{
				name: "rate bucket field " + fl + " is " + strconv.Quote(v), phases: []int{phaseQueued},
				damage: func(s *sweep) {
					if k := s.p.RateBucket("rb"); s.rdb.Type(s.ctx, k).Val() == "hash" {
						s.rdb.HSet(s.ctx, k, fl, v)
					}
				},
			})
		}
	}
	// Options no release refuses that the scripts must still carry.
	out = append(out, corruption{
		name: "huge rate limit", phases: []int{phaseStart}, damage: func(*sweep) {},
		seed: func(j *store.NewJob) {
			if j.Limits.RateClass != "" {
				j.Limits.RateJobs, j.Limits.RatePer, j.Limits.RateBurst = 1, 1000*time.Hour, 100_000_000
			}
		},
	})
	return out
}

// minute is the partition's tally of the current minute.
func (s *sweep) minute() string { return s.p.Minute(s.clk.Now().UnixMilli() / 60000) }

// sample is the values a field is set to: all of them in a full sweep,
// else two, chosen by the field's index i so that the fields together
// still meet every value.
func sample(values []string, i int, full bool) []string {
	if full {
		return values
	}
	return []string{values[2*i%len(values)], values[(2*i+1)%len(values)]}
}

// sweep is one run of the scenario under one damage.
type sweep struct {
	*fixture
	c       corruption
	from    int
	healthy []string
	bad     []string
	want    map[string]string // a healthy job's end state
	gone    map[string]bool   // healthy jobs deleted as asked
	// destroyed are the jobs whose place the test's overwrites took.
	destroyed map[string]bool
	held      map[string]store.Lease
	dump      bool            // snapshots by DUMP (miniredis dumps strings only)
	born      map[string]bool // jobs whose enqueue ran
	nonce     int
	step      string
	fails     int
	reported  map[string]bool // audit problems reported
}

// maxSweepFails bounds what one case reports; a problem the audit finds
// again at later steps is reported once.
const maxSweepFails = 20

// callFailed reports a batched call's error, which no damage to one job
// excuses; a damaged shared key may fail any call (cleanly: (c)).
func (s *sweep) callFailed(what string, err error) {
	s.t.Helper()
	if err != nil && !s.c.shared {
		s.failf("%s: %v", what, err)
	}
}

func (s *sweep) failf(format string, a ...any) {
	s.t.Helper()
	s.fails++
	if s.fails <= maxSweepFails {
		s.t.Errorf("step %s: "+format, append([]any{s.step}, a...)...)
	}
}

// sweepStep is one step: it returns the error of the one store call it
// makes (nil when that call succeeded).
type sweepStep struct {
	name string
	run  func(s *sweep) error
}

func runSweep(t *testing.T, b backend, c corruption, from int) {
	f := newFixture(t, b)
	s := &sweep{fixture: f, c: c, from: from, want: map[string]string{}, gone: map[string]bool{},
		destroyed: map[string]bool{}, held: map[string]store.Lease{}, born: map[string]bool{}, reported: map[string]bool{}, dump: b.name != "miniredis"}
	for i := 1; i <= sweepHealthy; i++ {
		s.healthy = append(s.healthy, "h"+strconv.Itoa(i))
		s.want["h"+strconv.Itoa(i)] = "completed"
	}
	for i := 1; i <= sweepBad; i++ {
		s.bad = append(s.bad, "b"+strconv.Itoa(i))
	}
	// the partition's keys go when the case ends: the snapshots' KEYS
	// scans every key of the server, the other cases' too
	defer func() {
		c := s.node()
		if names := c.Keys(s.ctx, s.p.Prefix()+"*").Val(); len(names) > 0 {
			c.Del(s.ctx, names...)
		}
	}()
	steps := sweepSteps()
	for i, st := range steps {
		s.step = st.name
		if i >= s.phaseStep(from) {
			c.damage(s)
		}
		before := s.snapshot()
		err := st.run(s)
		if err != nil {
			if d := snapshotDiff(before, s.snapshot()); len(d) > 0 {
				s.failf("the call failed (%v) after it wrote:\n  %s", err, strings.Join(d[:min(len(d), 12)], "\n  "))
			}
		}
		s.check()
	}
	s.step = "drain"
	for round := 0; ; round++ {
		pending := s.pending()
		if len(pending) == 0 {
			break
		}
		if round == 12 {
			if !c.shared {
				s.failf("healthy jobs never finished: %v", pending)
			}
			break
		}
		for _, st := range drainSteps() {
			s.step = fmt.Sprintf("drain %d, %s", round, st.name)
			c.damage(s)
			before := s.snapshot()
			if err := st.run(s); err != nil {
				if d := snapshotDiff(before, s.snapshot()); len(d) > 0 {
					s.failf("the call failed (%v) after it wrote:\n  %s", err, strings.Join(d[:min(len(d), 12)], "\n  "))
				}
			}
			s.check()
		}
	}
	s.atRest()
	if s.fails > maxSweepFails {
		t.Errorf("... and %d more", s.fails-maxSweepFails)
	}
}

// atRest runs maintenance past every lease once the healthy jobs are
// done, then checks what jobs share: with no job running, no concurrency
// slot is held, and the unique keys name no job that has finished (the
// audit of 2026-12-05: the reaper kept the slot of a running job it could
// not read, stranding its key's waiters; a unique key stayed held by a
// job archived as malformed). A damaged key the jobs share spares none.
func (s *sweep) atRest() {
	s.t.Helper()
	s.step = "at rest"
	s.c.damage(s)
	s.clk.Advance(time.Hour)
	clear(s.held)
	if _, err := s.st.Maintain(s.ctx, s.p, 1000, 1000, 0); err != nil || s.c.shared {
		s.callFailed("maintain", err)
		return
	}
	if n := runningJobs(s.t, s.ctx, s.rdb, s.p); n > 0 {
		s.failf("%d jobs still run past every lease", n)
		return
	}
	if held, err := s.rdb.HGetAll(s.ctx, s.p.Concurrency()).Result(); err == nil {
		for key, n := range held {
			s.failf("concurrency key %s holds %s slots with no job running", key, n)
		}
	}
	// a job enqueued with each unique key is added, or held by a job that
	// has not finished
	for _, u := range []string{"u", "ub"} {
		res, err := s.st.Enqueue(s.ctx, s.p, []store.NewJob{{Local: "probe-" + u, Kind: "k", Payload: []byte("p"), MaxAttempts: 1, Unique: store.Unique{Key: u}}})
		if err != nil || res[0].Status == store.Added || res[0].Err != nil {
			continue // a damaged key refuses it
		}
		if st := s.rawState(res[0].Existing); st == "" || slices.Contains([]string{"completed", "archived", "quarantined", "cancelled"}, st) {
			s.failf("unique key %s is held by %s, which is %q", u, res[0].Existing, st)
		}
	}
}

// check reports the audit's problems not reported before.
func (s *sweep) check() {
	s.t.Helper()
	for _, p := range s.audit() {
		if !s.reported[p] {
			s.reported[p] = true
			s.failf("%s", p)
		}
	}
}

// phaseStep is the index of the step a phase starts at.
func (s *sweep) phaseStep(ph int) int {
	switch ph {
	case phaseQueued:
		return stepClaims
	case phaseRunning:
		return stepRunning
	case phaseDone:
		return stepDone
	}
	return 0
}

// pending lists the healthy jobs not yet in their end state.
func (s *sweep) pending() []string {
	var out []string
	for _, id := range s.healthy {
		if s.gone[id] {
			continue
		}
		if st := s.rawState(id); st != s.want[id] {
			out = append(out, id+":"+st)
		}
	}
	return out
}

// The scenario's jobs. Healthy jobs (kind k) and bad ones (kind bad) of
// the same shapes, named so that a batch interleaves them.
const (
	bigPayload   = 2048
	sweepHealthy = 18 // h1 ... h18
	sweepBad     = 17 // b1 ... b17
)

func (s *sweep) job(id string, j store.NewJob) store.NewJob {
	j.Local, j.Kind, j.MaxAttempts = id, "k", 5
	if !s.isHealthy(id) {
		j.Kind = "bad"
		if s.c.seed != nil {
			s.c.seed(&j)
		}
	}
	if j.Payload == nil {
		j.Payload = []byte("payload-" + id)
	}
	return j
}

// enqueueStep enqueues jobs in one call; each healthy job must be added.
func (s *sweep) enqueueJobs(jobs []store.NewJob) error {
	res, err := s.st.Enqueue(s.ctx, s.p, jobs)
	if err != nil {
		s.callFailed("enqueue", err)
		return err
	}
	for i, r := range res {
		id := jobs[i].Local
		if r.Status == store.Added && r.Err == nil {
			s.born[id] = true
		}
		if s.isHealthy(id) && (r.Status != store.Added || r.Err != nil) {
			s.failf("healthy %s not added: %+v", id, r)
		}
	}
	return nil
}

const (
	stepClaims  = 2 // the first claim
	stepRunning = 6 // the first step after the claims
	stepDone    = 9 // the first step after the ack
)

func sweepSteps() []sweepStep {
	lim := func(k string) store.Limits { return store.Limits{ConcurrencyKey: k, ConcurrencyLimit: 1} }
	rate := func(r string) store.Limits {
		return store.Limits{RateClass: r, RateJobs: 1, RatePer: time.Minute, RateBurst: 1}
	}
	big := []byte(strings.Repeat("B", bigPayload))
	steps := []sweepStep{
		{"enqueue the seed batch", func(s *sweep) error {
			var jobs []store.NewJob
			for _, pair := range [][2]store.NewJob{
				{{}, {}}, // 1: plain
				{{Delay: 2 * time.Second}, {Delay: 2 * time.Second}}, // 2: due soon (sched)
				{{Delay: time.Minute}, {RunAt: tBad}},                // 3: due later (a bucket)
				{{Priority: 5}, {Priority: 3}},                       // 4: a priority
				{{Sticky: store.Sticky{Worker: "wp", Mode: "w"}}, {Sticky: store.Sticky{Worker: "wb", Mode: "a", After: time.Hour}}}, // 5: pinned (the bad one with a fallback)
				{{Limits: lim("k")}, {Limits: lim("kb")}},   // 6: a concurrency key, runs
				{{Limits: lim("k")}, {Limits: lim("kb")}},   // 7: waits on it
				{{Limits: rate("r")}, {Limits: rate("rb")}}, // 8: a rate class, runs
				{{Limits: rate("r")}, {Limits: rate("rb")}}, // 9: waits on it
				{{Unique: store.Unique{Key: "u"}}, {Unique: store.Unique{Key: "ub"}, Sticky: store.Sticky{Worker: "wb", Mode: "w"}}}, // 10
				{{Payload: big}, {Payload: big}}, // 11: a body key
				{{Hold: "fp"}, {Hold: "fpb"}},    // 12: a quarantine hold fingerprint
				{{}, {}},                         // 13: a parent
				{{RunAt: epoch.Add(6 * time.Second)}, {RunAt: epoch.Add(6 * time.Second)}}, // 14: due soon, met by cancel / delete
			} {
				n := len(jobs)/2 + 1
				jobs = append(jobs, s.job("h"+strconv.Itoa(n), pair[0]), s.job("b"+strconv.Itoa(n), pair[1]))
			}
			return s.enqueueJobs(jobs)
		}},
		{"enqueue children, duplicates and more", func(s *sweep) error {
			jobs := []store.NewJob{
				s.job("h15", store.NewJob{Parent: &store.ParentRef{Ref: s.ref("h13"), Step: "s"}}),
				s.job("b15", store.NewJob{Parent: &store.ParentRef{Ref: s.ref("b13"), Step: "s"}}),
				s.job("h16", store.NewJob{}),
				// pinned to the bad worker, on the bad concurrency key:
				// waits there, then is let go to the front of its pin list
				s.job("b16", store.NewJob{Limits: lim("kb"), Sticky: store.Sticky{Worker: "wb", Mode: "w"}}),
				s.job("h17", store.NewJob{}),
			}
			// duplicates of the unique jobs: the bad one debounces its
			// (pinned) holder, which leaves its list
			jobs = append(jobs,
				store.NewJob{Local: "hdup", Kind: "k", Payload: []byte("d"), Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}, Delay: time.Second},
				store.NewJob{Local: "bdup", Kind: "bad", Payload: []byte("d"), Unique: store.Unique{Key: "ub", OnDuplicate: "debounce"}, Delay: time.Second},
				// a child of a job in another partition: told through
				// the outbox when it finishes
				s.job("h18", store.NewJob{Parent: &store.ParentRef{Ref: keys.Ref{Partition: s.st.Partition("elsewhere", 0), Local: "P"}, Step: "s"}}),
				s.job("b17", store.NewJob{Parent: &store.ParentRef{Ref: keys.Ref{Partition: s.st.Partition("elsewhere", 0), Local: "PB"}, Step: "s"}}))
			return s.enqueueJobs(jobs)
		}},
		{"claim by w", func(s *sweep) error { return s.claimBy("w") }},
		{"claim by wb (bad pinned jobs), past the due soon jobs", func(s *sweep) error {
			s.clk.Advance(3 * time.Second)
			return s.claimBy("wb")
		}},
		{"claim by wp", func(s *sweep) error { return s.claimBy("wp") }},
		{"claim by w again", func(s *sweep) error { return s.claimBy("w") }},
		// stepRunning
		{"checkpoint every running job", func(s *sweep) error {
			var cs []store.Checkpoint
			for _, id := range s.heldOrder() {
				cs = append(cs, store.Checkpoint{Lease: s.held[id], Field: "s", Record: []byte("r-" + id), Mode: store.ModeOnce})
			}
			res, err := s.st.Checkpoints(s.ctx, s.p, cs)
			s.callFailed("checkpoints", err)
			for i, r := range res {
				if id := cs[i].Local; err == nil && s.isHealthy(id) && r.Err != nil {
					s.failf("healthy %s's checkpoint: %v", id, r.Err)
				}
			}
			return err
		}},
		{"renew every lease", func(s *sweep) error {
			var rs []store.Renewal
			for _, id := range s.heldOrder() {
				rs = append(rs, store.Renewal{Lease: s.held[id], Duration: 30 * time.Second})
			}
			lost, _, err := s.st.Renew(s.ctx, s.p, rs)
			if err != nil {
				s.callFailed("renew", err)
			}
			for _, l := range lost {
				for _, r := range rs {
					if r.LeaseID == l.LeaseID && s.isHealthy(r.Local) {
						s.failf("healthy %s's lease lost: %+v", r.Local, l)
					}
				}
			}
			return err
		}},
		{"ack every outcome in one batch", func(s *sweep) error {
			var acks []store.Ack
			for _, id := range s.heldOrder() {
				a, ok := sweepOutcome(s, id)
				if !ok {
					continue // left to expire: the reaper's
				}
				a.Lease = s.held[id]
				acks = append(acks, a)
				delete(s.held, id)
			}
			res, _, err := s.st.Ack(s.ctx, s.p, acks)
			if err != nil {
				s.callFailed("ack", err)
				return err
			}
			for i, r := range res {
				if id := acks[i].Local; s.isHealthy(id) && r.Err != nil {
					s.failf("healthy %s's %s: %v", id, acks[i].Code, r.Err)
				}
			}
			return nil
		}},
		// stepDone
		{"delete the bad scheduled jobs by selector", func(s *sweep) error {
			var cur store.ScanCursor
			for range 10 {
				st, err := s.st.DeleteStep(s.ctx, s.p, store.Selector{State: "scheduled", Kind: "bad"}, cur, 10, false)
				if err != nil {
					s.callFailed("delete step", err)
					return err
				}
				if cur = st.Cursor; st.Done {
					break
				}
			}
			return nil
		}},
		{"cancel h14", func(s *sweep) error {
			s.want["h14"] = "cancelled"
			_, err := s.st.Cancel(s.ctx, s.ref("h14"), retainCancelled)
			if err != nil {
				s.callFailed("cancel h14", err)
			}
			return err
		}},
		{"cancel b14", func(s *sweep) error { _, err := s.st.Cancel(s.ctx, s.ref("b14"), retainCancelled); return err }},
		{"run b1 now", func(s *sweep) error { _, err := s.st.RunNow(s.ctx, s.ref("b1")); return err }},
		{"reroute b5", func(s *sweep) error {
			_, err := s.st.Reroute(s.ctx, s.ref("b5"), store.Sticky{Worker: "wb", Mode: "a", After: time.Second})
			return err
		}},
		{"signal b13", func(s *sweep) error { _, err := s.st.Signal(s.ctx, s.ref("b13"), "go", []byte("x"), "k1"); return err }},
		{"maintain, past every lease", func(s *sweep) error {
			s.clk.Advance(2 * time.Minute)
			clear(s.held)
			_, err := s.st.Maintain(s.ctx, s.p, 100, 100, 100)
			if err != nil {
				s.callFailed("maintain", err)
			}
			return err
		}},
		{"redrive every archived and cancelled job", func(s *sweep) error {
			var ids []string
			for _, st := range []string{"archived", "cancelled"} {
				ids = append(ids, s.rdb.ZRange(s.ctx, s.p.Terminal(st), 0, -1).Val()...)
			}
			ids = slices.DeleteFunc(ids, func(id string) bool { return id == "h14" || id == "overwritten" })
			ids = interleave(ids, s.isHealthy)
			errs, err := s.st.RedriveIDs(s.ctx, s.p, store.ActionRedrive, ids)
			if err != nil {
				s.callFailed("redrive", err)
				return err
			}
			for i, e := range errs {
				if s.isHealthy(ids[i]) && e != nil {
					s.failf("healthy %s's redrive: %v", ids[i], e)
				}
			}
			return nil
		}},
	}
	return steps
}

// drainSteps is one round that drives the jobs to their end: a minute on,
// maintenance, claims by every worker, and one ack that completes them
// all.
func drainSteps() []sweepStep {
	return []sweepStep{
		{"maintain", func(s *sweep) error {
			s.clk.Advance(time.Minute)
			clear(s.held)
			_, err := s.st.Maintain(s.ctx, s.p, 100, 100, 100)
			s.callFailed("maintain", err)
			return err
		}},
		{"claim by w", func(s *sweep) error { return s.claimBy("w") }},
		{"claim by wp", func(s *sweep) error { return s.claimBy("wp") }},
		{"claim by wb", func(s *sweep) error { return s.claimBy("wb") }},
		{"complete them all", func(s *sweep) error {
			var acks []store.Ack
			for _, id := range s.heldOrder() {
				acks = append(acks, store.Ack{Lease: s.held[id], Code: store.CodeOK})
			}
			clear(s.held)
			if len(acks) == 0 {
				return nil
			}
			res, _, err := s.st.Ack(s.ctx, s.p, acks)
			s.callFailed("ack", err)
			for i, r := range res {
				if id := acks[i].Local; err == nil && s.isHealthy(id) && r.Err != nil {
					s.failf("healthy %s's completion: %v", id, r.Err)
				}
			}
			return err
		}},
	}
}

// sweepOutcome is the outcome the scenario's ack gives job id, or false
// when its lease is left to expire.
func sweepOutcome(s *sweep, id string) (store.Ack, bool) {
	retry := store.Ack{Code: store.CodeRetry, Delay: time.Second, Message: "boom", Reason: "error", Data: []byte("stack")}
	switch id {
	case "h1", "b2":
		return store.Ack{}, false
	case "b1":
		// due in the bad jobs' bucket of later jobs
		retry.Delay = tBad.Sub(s.clk.Now())
		return retry, true
	case "h2", "b13":
		return retry, true
	case "h4", "b4":
		return store.Ack{Code: store.CodeCrash, Message: "panic", Reason: "panic", Data: []byte("stack")}, true
	case "h5", "b5":
		return store.Ack{Code: store.CodeRelease}, true
	case "h6", "b6":
		// an effect here, and one on a key of another slot (the outbox's)
		return store.Ack{Code: store.CodeOK, Commit: id + ":c", Effects: []sluicetype.Effect{fx("INCRBY", s.key("bal"), "1"),
			fx("INCRBY", "{sweep-elsewhere}:bal", "1")}}, true
	case "h8", "b8":
		return store.Ack{Code: store.CodeSnooze, Delay: time.Second}, true
	case "h10", "b10":
		return store.Ack{Code: store.CodePark, Message: "bad payload", Reason: "bad_payload"}, true
	case "h11", "b11":
		return store.Ack{Code: store.CodeFree}, true
	case "h12", "b12":
		return store.Ack{Code: store.CodeSkip}, true
	case "h16", "b16":
		return store.Ack{Code: store.CodeRevoke}, true
	case "h17":
		return store.Ack{Code: store.CodeDeadline, Message: "late"}, true
	}
	return store.Ack{Code: store.CodeOK, Data: []byte("result")}, true
}

func (s *sweep) isHealthy(id string) bool { return slices.Contains(s.healthy, id) }

// heldOrder lists the held leases' jobs, healthy and bad interleaved.
func (s *sweep) heldOrder() []string {
	var ids []string
	for id := range s.held {
		ids = append(ids, id)
	}
	return interleave(ids, s.isHealthy)
}

// interleave sorts ids (by number) and alternates healthy and bad ones,
// a healthy one first.
func interleave(ids []string, healthy func(string) bool) []string {
	num := func(id string) int { n, _ := strconv.Atoi(strings.TrimLeft(id, "hbdup")); return n }
	sort.Slice(ids, func(i, j int) bool {
		if a, b := num(ids[i]), num(ids[j]); a != b {
			return a < b
		}
		return ids[i] < ids[j]
	})
	var h, b, out []string
	for _, id := range ids {
		if healthy(id) {
			h = append(h, id)
		} else {
			b = append(b, id)
		}
	}
	for len(h) > 0 || len(b) > 0 {
		if len(h) > 0 {
			out, h = append(out, h[0]), h[1:]
		}
		if len(b) > 0 {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// claimBy runs one claim by worker and keeps the leases it hands out.
func (s *sweep) claimBy(worker string) error {
	s.nonce++
	res, err := s.st.Claim(context.Background(), s.p, store.ClaimRequest{
		N: 50, Lease: 30 * time.Second, Worker: worker, Nonce: fmt.Sprintf("%s-%d", worker, s.nonce), PromoteLimit: 100,
	})
	if err != nil {
		s.callFailed("claim by "+worker, err)
		return err
	}
	for _, j := range res.Jobs {
		s.held[j.Local] = lease(j)
	}
	return nil
}
