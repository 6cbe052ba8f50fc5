package store_test

// The operations of TestModel (model_test.go): each draws its inputs from
// the run's random source, predicts on a copy of the model what the store
// must answer and do, runs, compares, and adopts the copy (or, when the
// call failed and its outcome is unknown, whichever of the two states
// Redis holds: modelRun.settle).

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// randomOp runs one operation, chosen at random.
func (r *modelRun) randomOp() {
	enq := 14
	switch live := len(r.m.jobs); {
	case live >= modelMaxJobs:
		enq = 0
	case live < 5:
		enq = 30
	}
	runWeighted(r.rng, r.counts, []weightedOp{
		{"enqueue", enq, r.opEnqueue},
		{"claim", 14, r.opClaim},
		{"offered", 6, r.opOffered},
		{"ack", 18, r.opAck},
		{"checkpoint", 10, r.opCheckpoint},
		{"renew", 5, r.opRenew},
		{"maintain", 8, r.opMaintain},
		{"cancel", 4, r.opCancel},
		{"delete", 3, r.opDelete},
		{"run-now", 3, r.opRunNow},
		{"redrive", 4, r.opRedrive},
		{"relay", 5, func() { r.opRelay([]int{1, 3, 100}[r.rng.IntN(3)]) }},
		{"resend", 6, r.opResend},
		{"tick", 12, r.opTick},
	})
}

func (r *modelRun) ref(id string) string { return keys.Ref{Partition: r.p, Local: id}.String() }

// commitName names a commit of job local as the runtime does
// (attempt.State.CommitName): its ID and creation time, so that a job
// enqueued again under a deleted job's ID commits apart from it.
func (r *modelRun) commitName(local, what string) string {
	var created int64
	if j := r.m.jobs[local]; j != nil {
		created = j.created
	}
	return r.ref(local) + "@" + strconv.FormatInt(created, 36) + ":" + what
}

func msOf(d time.Duration) int64 { return d.Milliseconds() }

// ---- transitions of the model (lua/lib.lua) ----

func (r *modelRun) retention(state string) int64 {
	switch state {
	case "completed":
		return r.retainCompleted
	case "cancelled":
		return msOf(modelRetainCancelled)
	}
	return msOf(modelRetainArchived)
}

// finish moves j to a terminal state, or deletes it when that state is
// not retained.
func (r *modelRun) finish(m *model, j *mjob, state string) {
	ret := r.retention(state)
	if ret < 0 {
		r.remove(m, j.id)
		return
	}
	j.state, j.score = state, r.now()+ret
}

func (r *modelRun) remove(m *model, id string) {
	delete(m.jobs, id)
	m.gone[id] = r.step
}

func available(j *mjob) { j.state, j.score = "available", 0 }

// crash charges a crash: quarantined at the limit, else retryable after
// the crash delay (doubling with each crash, at most a minute or the
// delay if longer; lib_lifecycle.lua crash), or available at once without one.
func (r *modelRun) crash(m *model, j *mjob) string {
	j.crash++
	if j.crash >= modelCrashLimit {
		r.finish(m, j, "quarantined")
		return "quarantined"
	}
	if r.crashDelay <= 0 {
		available(j)
		return "available"
	}
	j.state, j.score = "retryable", r.now()+min(r.crashDelay<<(j.crash-1), max(r.crashDelay, 60000))
	return "retryable"
}

// due lists the jobs in states whose score has come, in zset order
// (score, then member), at most limit of them.
func (r *modelRun) due(m *model, limit int, states ...string) []*mjob {
	now := r.now()
	var out []*mjob
	for _, j := range m.inState(states...) {
		if j.score <= now {
			out = append(out, j)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].score != out[b].score {
			return out[a].score < out[b].score
		}
		return out[a].id < out[b].id
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func (r *modelRun) promote(m *model, limit int) int {
	due := r.due(m, limit, "scheduled", "retryable")
	for _, j := range due {
		available(j)
	}
	return len(due)
}

func (r *modelRun) reap(m *model, limit int) []store.Reaped {
	var out []store.Reaped
	for _, j := range r.due(m, limit, "running") {
		j.lease = "" // the reaper ends the attempt: a late ack of it is stale
		out = append(out, store.Reaped{Local: j.id, Holder: j.worker, State: r.crash(m, j)})
	}
	return out
}

func (r *modelRun) sweep(m *model, limit int) int {
	n := 0
	for _, s := range []string{"completed", "archived", "quarantined", "cancelled"} {
		for _, j := range r.due(m, limit, s) {
			r.remove(m, j.id)
			n++
		}
	}
	return n
}

// ---- choices ----

func (r *modelRun) pick(n int) int { return r.rng.IntN(n) }

func (r *modelRun) chance(num, den int) bool { return r.rng.IntN(den) < num }

func (r *modelRun) delay(maxMS int) time.Duration {
	return time.Duration(r.rng.IntN(maxMS+1)) * time.Millisecond
}

// pickID is a job to aim an operator call at: mostly a live one (of
// states, when given and there is one), else a deleted or unknown one.
func (r *modelRun) pickID(states ...string) string {
	x := r.pick(10)
	if x < 8 && len(r.m.jobs) > 0 {
		if len(states) > 0 && r.chance(2, 3) {
			if c := r.m.inState(states...); len(c) > 0 {
				return c[r.pick(len(c))].id
			}
		}
		ids := r.m.ids()
		return ids[r.pick(len(ids))]
	}
	if x < 9 && len(r.m.gone) > 0 {
		var gone []string
		for id := range r.m.gone {
			gone = append(gone, id)
		}
		sort.Strings(gone)
		return gone[r.pick(len(gone))]
	}
	return fmt.Sprintf("c%02d", r.pick(modelCallerIDs))
}

// staleLease is a lease handed out before that is no longer held, or nil.
func (r *modelRun) staleLease() *store.Lease {
	var c []store.Lease
	for _, l := range r.leases {
		if !r.m.current(l, r.now()) {
			c = append(c, l)
		}
	}
	if len(c) == 0 {
		return nil
	}
	// the recent ones more often: the reaped, cancelled, just acked
	i := len(c) - 1 - min(r.pick(len(c)), r.pick(len(c)))
	return &c[i]
}

// runningLeases picks up to n distinct running jobs' leases.
func (r *modelRun) runningLeases(n int) []store.Lease {
	running := r.m.inState("running")
	if len(running) == 0 || n == 0 {
		return nil
	}
	k := 1 + r.pick(min(n, len(running)))
	var out []store.Lease
	for _, i := range r.rng.Perm(len(running))[:k] {
		j := running[i]
		out = append(out, store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence})
	}
	return out
}

func (r *modelRun) addLease(l store.Lease) {
	r.leases = append(r.leases, l)
	if len(r.leases) > 60 {
		r.leases = r.leases[len(r.leases)-60:]
	}
}

// effects draws in-slot (and sometimes foreign) INCRBYs, adding their
// deltas to deltas.
func (r *modelRun) effects(deltas map[string]int64, foreign bool) []sluicetype.Effect {
	var fx []sluicetype.Effect
	for range r.pick(3) {
		k := r.inKeys[r.pick(len(r.inKeys))]
		d := int64(1 + r.pick(100))
		fx = append(fx, sluicetype.Effect{Op: "INCRBY", Key: k, Args: []string{strconv.FormatInt(d, 10)}})
		deltas[k] += d
	}
	if foreign && r.chance(1, 4) {
		k := r.foreignKeys[r.pick(len(r.foreignKeys))]
		d := int64(1 + r.pick(100))
		fx = append(fx, sluicetype.Effect{Op: "INCRBY", Key: k, Args: []string{strconv.FormatInt(d, 10)}})
		deltas[k] += d
	}
	return fx
}

// invalidEffect is an effect that cannot apply: Go refuses it ("go": a
// NaN score), or only the script can tell ("script": the key holds a
// list).
func (r *modelRun) invalidEffect() (sluicetype.Effect, string) {
	if r.chance(1, 2) {
		return sluicetype.Effect{Op: "ZADD", Key: r.p.Tag() + ":fx:z", Args: []string{"NaN", "m"}}, "go"
	}
	return sluicetype.Effect{Op: "INCRBY", Key: r.listKey, Args: []string{"1"}}, "script"
}

func fxString(deltas map[string]int64) string {
	var ks []string
	for k := range deltas {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, " %s+%d", k[strings.LastIndex(k, ":")+1:], deltas[k])
	}
	return b.String()
}

// ---- enqueue ----

func (r *modelRun) opEnqueue() {
	n := r.pick(4)
	var jobs []store.NewJob
	for i := range n {
		if i > 0 && r.chance(1, 6) {
			if prev := jobs[r.pick(len(jobs))]; !prev.Generated {
				jobs = append(jobs, prev) // the same caller ID twice in one call
				continue
			}
		}
		nj := store.NewJob{Kind: "k"}
		if r.chance(1, 4) {
			nj.Local, nj.Generated = fmt.Sprintf("g%06d", r.nextGen), true
			r.nextGen++
		} else {
			nj.Local = fmt.Sprintf("c%02d", r.pick(modelCallerIDs))
		}
		payload := "p-" + nj.Local
		switch x := r.pick(20); {
		case x < 2:
			payload = strings.Repeat(payload+".", 20) // chunked in the hash
		case x < 3:
			payload = strings.Repeat(payload+".", 150) // a key of its own
		case x < 5 && !nj.Generated:
			payload = "other-" + nj.Local // a conflict, if the ID is taken
		}
		nj.Payload = []byte(payload)
		if !nj.Generated && r.chance(1, 12) {
			nj.Kind = "k2"
		}
		if r.chance(1, 5) || (r.offering && r.chance(3, 4)) {
			nj.MaxAttempts = store.DefaultMaxAttempts // a plain job
		} else {
			nj.MaxAttempts = 1 + r.pick(4)
			nj.Priority = r.pick(3)
			if r.chance(1, 4) {
				nj.Delay = time.Duration(1+r.pick(60000)) * time.Millisecond
			}
		}
		jobs = append(jobs, nj)
	}
	pre := r.m
	post := pre.clone()
	want := make([]store.EnqueueStatus, len(jobs))
	var desc, pushed []string
	offer := r.readOffer()
	for i, nj := range jobs {
		desc = append(desc, fmt.Sprintf("%s(p%d ma%d delay%s %dB)", nj.Local, nj.Priority, nj.MaxAttempts, nj.Delay, len(nj.Payload)))
		if j := post.jobs[nj.Local]; j != nil {
			want[i] = store.Conflicted
			if j.kind == nj.Kind && j.payload == string(nj.Payload) {
				want[i] = store.Duplicate
			}
			continue
		}
		j := &mjob{id: nj.Local, kind: nj.Kind, payload: string(nj.Payload), maxAttempts: nj.MaxAttempts,
			prio: nj.Priority, steps: map[string]string{}, created: r.now()}
		available(j)
		if nj.Delay > 0 {
			j.state, j.score = "scheduled", r.now()+msOf(nj.Delay)
		}
		// a plain job with its payload in its hash (lua/lib_chunks.lua
		// BODY_MIN) is pushed under an offer
		plain := nj.MaxAttempts == store.DefaultMaxAttempts && nj.Priority == 0 && nj.Delay == 0 && len(nj.Payload) <= 832
		if plain && offer.take(j, r.now()) {
			pushed = append(pushed, j.id)
		} else {
			offer = nil // listed (or scheduled): no job after it is pushed
		}
		post.jobs[j.id] = j
		delete(post.gone, j.id)
		want[i] = store.Added
	}
	res, err := r.st.Enqueue(r.ctx, r.p, jobs)
	r.logf("enqueue %v -> %v %v", desc, res, err)
	if err == nil {
		if len(res) != len(jobs) {
			r.fail("enqueue: %d results for %d jobs", len(res), len(jobs))
		}
		for i, got := range res {
			if got.Status != want[i] || got.Local != "" || (got.Status == store.Conflicted) != errors.Is(got.Err, store.ErrConflict) {
				r.fail("enqueue %s: %+v, want status %v", jobs[i].Local, got, want[i])
			}
		}
	}
	if len(pushed) > 0 {
		r.logf("enqueue pushed %v", pushed)
		r.counts["pushed"] += len(pushed)
	}
	if r.settle(pre, post, err, "enqueue") {
		for _, id := range pushed {
			j := r.m.jobs[id]
			r.addLease(store.Lease{Local: id, LeaseID: j.lease, Fence: j.fence})
		}
	}
}

// ---- claim ----

func (r *modelRun) opClaim() {
	n := 1 + r.pick(4)
	if r.offering {
		n = modelMaxJobs // claims all it can, so as to run dry and offer
	}
	worker := fmt.Sprintf("w%d", r.pick(2))
	nonce := fmt.Sprintf("n%d.%d", r.seg, r.step)
	// A worker that runs a suspect (a job with a crash on record) says so:
	// the claim then leases none; else it leases at most one.
	noSuspect := r.chance(1, 4)
	pre := r.m
	post := pre.clone()
	r.promote(post, 100)
	avail := post.inState("available")
	expiry := r.now() + msOf(modelLease)
	lists := r.describeLists(post) // for a failure's message
	// named by its nonce, as a worker names it: the same request sent
	// again (opResend) is answered from its record
	req := store.ClaimRequest{N: n, Lease: modelLease, Worker: worker, Nonce: nonce, ID: nonce, PromoteLimit: 100, NoSuspect: noSuspect}
	r.offer(&req)
	res, err := r.st.Claim(r.ctx, r.p, req)
	if err != nil {
		// Did it run? The jobs it leased are running under its nonce.
		for _, j := range avail {
			v, herr := r.direct.HMGet(r.ctx, r.p.Job(j.id), keys.FieldState, keys.FieldLeaseID, keys.FieldFence).Result()
			if herr != nil {
				r.fail("claim: reading %s: %v", j.id, herr)
			}
			l, _ := v[1].(string)
			if s, _ := v[0].(string); store.StateName(s) == "running" && store.LeaseNonce(l) == nonce {
				f, _ := v[2].(string)
				j.state, j.lease, j.score, j.worker, j.started = "running", l, expiry, worker, r.now()
				j.fence, _ = strconv.ParseInt(f, 10, 64)
			}
		}
		r.logf("claim %d for %s (nonce %s, no suspect %v)", n, worker, nonce, noSuspect)
		if r.settle(pre, post, err, "claim") {
			for _, j := range post.inState("running") {
				if store.LeaseNonce(j.lease) == nonce {
					r.addLease(store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence})
				}
			}
		}
		return
	}
	var got []string
	for _, cj := range res.Jobs {
		got = append(got, fmt.Sprintf("%s=%s/%d", cj.Local, cj.LeaseID, cj.Fence))
	}
	suspects := 0
	for _, j := range avail {
		if j.crash > 0 {
			suspects++
		}
	}
	r.logf("claim %d for %s (nonce %s, no suspect %v) of %d available (%d suspects) -> %v dry=%v next=%v",
		n, worker, nonce, noSuspect, len(avail), suspects, got, res.Dry, dueAt(res, time.UnixMilli(r.now())).UnixMilli())
	claimable := len(avail) - suspects
	if suspects > 0 && !noSuspect {
		claimable++
	}
	if want := min(n, claimable); len(res.Jobs) != want {
		r.fail("claim of %d leased %d jobs, want %d (available: %d, of them suspects: %d, no suspect: %v); before the claim:%s",
			n, len(res.Jobs), want, len(avail), suspects, noSuspect, lists)
	}
	if len(res.Parked) > 0 {
		r.fail("claim parked %v", res.Parked)
	}
	lowest := keys.Priorities
	tookSuspect := false
	for i, cj := range res.Jobs {
		j := post.jobs[cj.Local]
		if j == nil || j.state != "available" {
			r.fail("claim leased %s, which is not available (%+v)", cj.Local, j)
		}
		// the model's jobs have no parent, unique key or concurrency key:
		// their lease IDs carry the claim's mark of that (lua/claim.lua),
		// '=' when the payload is in the hash, '+' when it has a key of
		// its own (longer than BODY_MIN, lua/lib_chunks.lua)
		mark := "="
		if len(j.payload) > 832 {
			mark = "+"
		}
		// and name their worker and store time (store.LeaseHolder)
		want := fmt.Sprintf("%s/%d/%s.%d%s", worker, r.now(), nonce, i+1, mark)
		if cj.LeaseID != want || cj.Fence != j.fence+1 || cj.LeaseExpiry.UnixMilli() != expiry ||
			cj.State != "running" || cj.Worker != worker {
			r.fail("claim answered %s lease %s fence %d expiry %d state %s worker %s; want lease %s fence %d expiry %d",
				cj.Local, cj.LeaseID, cj.Fence, cj.LeaseExpiry.UnixMilli(), cj.State, cj.Worker, want, j.fence+1, expiry)
		}
		if cj.Attempt != j.attempt || cj.CrashAttempt != j.crash || cj.Kind != j.kind || string(cj.Payload) != j.payload ||
			cj.Priority != j.prio || cj.MaxAttempts != j.maxAttempts {
			r.fail("claim answered %s as %+v, want %+v", cj.Local, *cj, *j)
		}
		if len(cj.Steps) != len(j.steps) {
			r.fail("claim answered %s with steps %v, want %v", cj.Local, cj.Steps, j.steps)
		}
		for k, v := range j.steps {
			if string(cj.Steps[k]) != v {
				r.fail("claim answered %s with steps %v, want %v", cj.Local, cj.Steps, j.steps)
			}
		}
		if j.crash > 0 {
			if noSuspect || tookSuspect {
				r.fail("claim (no suspect %v) leased suspect %s (crash_attempt %d) beside another or for a worker that runs one", noSuspect, j.id, j.crash)
			}
			tookSuspect = true
		}
		lowest = min(lowest, j.prio)
		j.state, j.lease, j.fence, j.score, j.worker, j.started = "running", cj.LeaseID, cj.Fence, expiry, worker, r.now()
		r.addLease(store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence})
	}
	if len(res.Jobs) > 0 { // a claim that leased nothing may keep no record
		r.lastClaim = &claimCall{req: req, sent: time.Now()}
		for _, cj := range res.Jobs {
			r.lastClaim.leased = append(r.lastClaim.leased, store.Lease{Local: cj.Local, LeaseID: cj.LeaseID, Fence: cj.Fence})
		}
	}
	// Higher priorities first: what it left above the lowest priority it
	// took can only be suspects it may not take.
	held := 0
	for _, j := range post.inState("available") {
		if j.crash > 0 {
			held++
		}
		if j.prio > lowest && (j.crash == 0 || !(noSuspect || tookSuspect)) {
			r.fail("claim left %s (priority %d, crash_attempt %d) and took a job of priority %d; before the claim:%s", j.id, j.prio, j.crash, lowest, lists)
		}
	}
	// nextDue is the wake-up the model expects. After the clock went back,
	// a bucket that a claim at a later time moved into sched is there
	// still: its jobs then call for their own due time, up to lastDue.
	var nextDue, lastDue time.Time
	if res.Dry {
		var nd, ld int64 = -1, -1
		for _, j := range post.inState("scheduled", "retryable") {
			if at := r.wakeFor(j.score, r.now()); nd < 0 || at < nd {
				nd = at
			}
			if at := r.wakeFor(j.score, r.highWater); ld < 0 || at < ld {
				ld = at
			}
		}
		// suspects passed over: look again soon, by the worker's clock
		// (claim.lua answers -3, HeldSuspects)
		if nd >= 0 && held == 0 {
			nextDue = time.UnixMilli(max(nd, r.now())) // a delay of 0 when due already
			lastDue = time.UnixMilli(max(ld, r.now()))
		}
	}
	// A bucket of later jobs whose jobs all left it early (stale entries)
	// still calls for a claim when it would have moved: a wake-up early
	// (or with nothing due), never late.
	// (NextDue is a delay from the claim's store time: r.now().)
	resDue := dueAt(res, time.UnixMilli(r.now()))
	early := !resDue.IsZero() && (nextDue.IsZero() || resDue.Before(nextDue)) && resDue.UnixMilli()%store.LaterBucketMS == 0 &&
		!resDue.Before(time.UnixMilli(r.now()))
	moved := !nextDue.IsZero() && !resDue.Before(nextDue) && !resDue.After(lastDue)
	if res.Dry != (len(res.Jobs) < n) || (!resDue.Equal(nextDue) && !early && !moved) || res.HeldSuspects != (res.Dry && held > 0) {
		r.fail("claim: dry %v next due %v held suspects %v, want dry %v next due %v held %v",
			res.Dry, resDue, res.HeldSuspects, len(res.Jobs) < n, nextDue, res.Dry && held > 0)
	}
	r.m = post
}

// describeLists shows the available lists of the priorities the model
// uses, and the priority mask, each entry with what m says of its job.
func (r *modelRun) describeLists(m *model) string {
	var b strings.Builder
	for p := range 3 {
		l, _ := r.direct.LRange(r.ctx, r.p.Available(p), 0, -1).Result()
		fmt.Fprintf(&b, "\n  list %d:", p)
		for _, id := range l {
			if j := m.jobs[id]; j != nil {
				fmt.Fprintf(&b, " %s(%s p%d c%d)", id, j.state, j.prio, j.crash)
			} else {
				fmt.Fprintf(&b, " %s(gone)", id)
			}
		}
	}
	pm, _ := r.direct.Get(r.ctx, r.p.Priorities()).Bytes()
	fmt.Fprintf(&b, "\n  priority mask %08b", pm)
	return b.String()
}

// ---- ack ----

type ackSpec struct {
	ack     store.Ack
	deltas  map[string]int64 // the effects' deltas, by key
	invalid string           // "go" or "script": one effect cannot apply
}

// wakeFor is when a claim asks to be called again for a job due at due:
// its due time when it is in the sched zset, or when its bucket of later
// jobs moves into sched (store.LaterBucketMS before the bucket's start).
// After a claim at time at, the buckets within that horizon have moved,
// and a job in another was put there when it was due further ahead
// still.
func (r *modelRun) wakeFor(due, at int64) int64 {
	start := due / store.LaterBucketMS * store.LaterBucketMS
	if due >= store.NeverDue || start <= at+store.LaterBucketMS {
		return due
	}
	return start - store.LaterBucketMS
}
