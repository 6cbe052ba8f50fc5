package store_test

// The operations of TestFlowModel (flowmodel_test.go): each draws its
// inputs, predicts what it can from the model and the last snapshot of
// Redis, runs, compares, and updates the model; after a call whose
// outcome is unknown (the chaos proxy lost its reply twice), it adopts
// what Redis holds for the jobs the call touched.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

func (r *flowRun) pick(n int) int           { return r.rng.IntN(n) }
func (r *flowRun) chance(num, den int) bool { return r.rng.IntN(den) < num }

func (r *flowRun) ref(id string) keys.Ref { return keys.Ref{Partition: r.p, Local: id} }

func (r *flowRun) randomOp() {
	enq := 18
	switch n := len(r.jobs) - len(r.inState("completed", "archived", "cancelled")); {
	case n >= flowMaxJobs:
		enq = 0
	case n < 5:
		enq = 40
	}
	runWeighted(r.rng, r.counts, []weightedOp{
		{"enqueue", enq, r.opEnqueue},
		{"claim", 18, func() { r.claim(1 + r.pick(4)) }},
		{"ack", 22, r.opAck},
		{"cancel", 3, r.opCancel},
		{"delete", 4, r.opDelete},
		{"release", 5, r.opRelease},
		{"runnow", 3, r.opRunNow},
		{"tick", 14, r.opTick},
		{"maintain", 5, r.maintain},
		{"reroute", 6, r.opReroute},
		{"workers", 3, r.opWorkers},
		{"redrive", 3, r.opRedrive},
	})
}

// ---- enqueue ----

func (r *flowRun) opEnqueue() {
	n := 1 + r.pick(4)
	var jobs []store.NewJob
	var desc []string
	for range n {
		id := fmt.Sprintf("j%04d", r.nextID)
		r.nextID++
		nj := store.NewJob{Local: id, Kind: "k", Payload: []byte("p-" + id), MaxAttempts: 1 + r.pick(4), Priority: r.pick(3)}
		if r.chance(1, 4) {
			nj.Delay = time.Duration(1+r.pick(30000)) * time.Millisecond
		}
		var opts []string
		if r.chance(1, 2) {
			k := flowCKeys[r.pick(len(flowCKeys))]
			nj.Limits.ConcurrencyKey, nj.Limits.ConcurrencyLimit = k, flowCLimit[k]
			opts = append(opts, k)
		}
		if r.chance(1, 3) {
			c := flowRClass[r.pick(len(flowRClass))]
			rt := flowRate[c]
			nj.Limits.RateClass, nj.Limits.RateJobs, nj.Limits.RatePer, nj.Limits.RateBurst = c, rt[0], time.Duration(rt[1])*time.Millisecond, rt[2]
			opts = append(opts, c)
		}
		if r.chance(1, 3) {
			nj.Unique = store.Unique{Key: flowUKeys[r.pick(len(flowUKeys))], OnDuplicate: []string{"", "replace", "debounce"}[r.pick(3)]}
			opts = append(opts, nj.Unique.Key+"/"+nj.Unique.OnDuplicate)
		}
		if r.chance(1, 3) {
			nj.Hold = flowFPrints[r.pick(len(flowFPrints))]
			opts = append(opts, nj.Hold)
			if r.chance(1, 3) {
				// a deadline ends it, held or not (claim: deadline_exceeded)
				nj.Deadline = r.clk.Now().Add(nj.Delay + time.Duration(1+r.pick(60000))*time.Millisecond)
				opts = append(opts, fmt.Sprintf("deadline %d", nj.Deadline.UnixMilli()))
			}
		}
		// a deadline, for any job now and then, and often for a debounced
		// one: a debounce must not put it off past it (lib_enqueue.lua)
		if nj.Deadline.IsZero() && (r.chance(1, 8) || nj.Unique.OnDuplicate == "debounce" && r.chance(1, 2)) {
			nj.Deadline = r.clk.Now().Add(nj.Delay + time.Duration(1+r.pick(60000))*time.Millisecond)
			opts = append(opts, fmt.Sprintf("deadline %d", nj.Deadline.UnixMilli()))
		}
		r.stickyOpt(&nj, &opts)
		desc = append(desc, fmt.Sprintf("%s(p%d ma%d delay %s %s)", id, nj.Priority, nj.MaxAttempts, nj.Delay, strings.Join(opts, " ")))
		jobs = append(jobs, nj)
	}
	// predict from the snapshot: the unique key's holder, the fingerprint
	// quarantined
	s := r.snap
	holders := map[string]string{}
	for _, k := range flowUKeys {
		holders[k] = s.uniqueHolder(k)
	}
	batch := map[string]*holderState{} // the holders this call met or added
	res, err := r.st.Enqueue(r.ctx, r.p, jobs)
	r.logf("enqueue %v -> %+v %v", desc, res, err)
	if err != nil {
		r.counts["unknown-outcome"]++
		for _, nj := range jobs {
			n, xerr := r.direct.Exists(r.ctx, r.p.Job(nj.Local)).Result()
			if xerr != nil {
				r.fail("EXISTS: %v", xerr)
			}
			if n == 1 {
				r.add(nj)
			}
		}
		// a replace may have given a holder (before the call, or added by
		// it) a payload of the call
		var met []string
		for _, id := range holders {
			met = append(met, id)
		}
		for _, nj := range jobs {
			met = append(met, nj.Local)
		}
		for _, id := range met {
			if j := r.jobs[id]; j != nil {
				p, perr := r.direct.HGet(r.ctx, r.p.Job(id), keys.FieldPayload).Result()
				if perr != nil {
					r.fail("HGET payload of %s: %v", id, perr)
				}
				if p != j.payload {
					r.logf("enqueue replaced the payload of %s: %q", id, p)
					j.payload = p
				}
			}
		}
		return
	}
	for i, nj := range jobs {
		got := res[i]
		if k := nj.Unique.Key; k != "" && holders[k] != "" {
			if got.Status != store.Held || got.Existing != holders[k] {
				r.fail("enqueue %s with unique key %s held by %s: %+v, want unique (held) by it", nj.Local, k, holders[k], got)
			}
			r.counts["dup-"+nj.Unique.OnDuplicate]++
			// a replace gives a holder that has not started its payload
			// (lib_enqueue.lua on_duplicate); one held stays as it is
			h := batch[holders[k]]
			if h == nil {
				g := s.jobs[holders[k]]
				h = &holderState{state: g.state, fence: g.fence, held: g.qb != ""}
				batch[holders[k]] = h
			}
			if (h.state == "available" || h.state == "scheduled") && h.fence == 0 && !h.held {
				switch nj.Unique.OnDuplicate {
				case "replace":
					r.jobs[holders[k]].payload = string(nj.Payload)
					h.held = nj.Hold != "" && len(s.quarantined(nj.Hold)) > 0
				case "debounce":
					if nj.Delay > 0 {
						h.state = "scheduled"
					}
				}
			}
			continue
		}
		if got.Status != store.Added {
			r.fail("enqueue %s: %+v, want added (unique key %q free)", nj.Local, got, nj.Unique.Key)
		}
		if nj.Unique.Key != "" {
			holders[nj.Unique.Key] = nj.Local
		}
		q := s.quarantined(nj.Hold)
		switch {
		case nj.Hold == "" && got.HeldBy != "":
			r.fail("enqueue %s without a fingerprint: added held by %s", nj.Local, got.HeldBy)
		case nj.Hold != "" && len(q) > 0 && !slices.Contains(q, got.HeldBy):
			r.fail("enqueue %s of fingerprint %s while %v of it are quarantined: added held by %q", nj.Local, nj.Hold, q, got.HeldBy)
		case nj.Hold != "" && len(q) == 0 && got.HeldBy != "":
			r.fail("enqueue %s of fingerprint %s, none of it quarantined: added held by %q", nj.Local, nj.Hold, got.HeldBy)
		}
		j := r.add(nj)
		j.mustHold = got.HeldBy != ""
		batch[j.id] = &holderState{state: "available", held: j.mustHold}
		if j.mustHold {
			r.counts["added-held"]++
		}
	}
}

// holderState is what an enqueue call's prediction knows of a unique
// key's holder.
type holderState struct {
	state string
	fence int64
	held  bool
}

func (r *flowRun) add(nj store.NewJob) *fjob {
	j := &fjob{id: nj.Local, ck: nj.Limits.ConcurrencyKey, rc: nj.Limits.RateClass, uk: nj.Unique.Key, fp: nj.Hold,
		state: "pending", payload: string(nj.Payload)}
	if !nj.Deadline.IsZero() {
		j.deadline = nj.Deadline.UnixMilli()
	}
	if nj.Sticky.Worker != "" {
		j.sw, j.sm = nj.Sticky.Worker, nj.Sticky.Mode
	}
	r.jobs[j.id] = j
	return j
}

// ---- claim ----

// claim claims up to n jobs as a worker claimWorker draws and returns
// the model's jobs it leased.
func (r *flowRun) claim(n int) []*fjob { return r.claimAs(n, r.claimWorker()) }

// claimAs claims up to n jobs as worker and returns the model's jobs it
// leased.
func (r *flowRun) claimAs(n int, worker string) []*fjob {
	r.nonce++
	nonce := fmt.Sprintf("n%d", r.nonce)
	req := store.ClaimRequest{N: n, Lease: flowLease, Worker: worker, Nonce: nonce, ID: nonce, PromoteLimit: 100}
	var res store.ClaimResult
	var err error
	for try := range 3 {
		res, err = r.st.Claim(r.ctx, r.p, req)
		if err == nil {
			break
		}
		r.logf("claim %d as %s (nonce %s) try %d: %v", n, worker, nonce, try+1, err)
	}
	var out []*fjob
	if err != nil {
		r.counts["unknown-outcome"]++
		// the jobs it leased run under its nonce
		s := r.read(false)
		for _, j := range r.inState("pending") {
			if g := s.jobs[j.id]; g.state == "running" && store.LeaseNonce(g.lease) == nonce {
				r.checkStickyLease(j.id, worker)
				j.state, j.lease, j.fence, j.started, j.snoozedTo = "running", g.lease, g.fence, r.now(), 0
				out = append(out, j)
				r.leased(j, nonce)
			} else if g.state == "archived" && r.deadlinePassed(j) {
				r.checkParked([]store.Parked{{Local: j.id, Reason: "deadline_exceeded"}})
			} else if g.state == "archived" && r.snap.jobs[j.id].sm == "f" {
				// its FailAfter fallback fell due (checkParked)
				r.checkParked([]store.Parked{{Local: j.id, Reason: "sticky_unavailable"}})
			}
		}
		r.logf("claim %d (nonce %s) failed: found it leased %d", n, nonce, len(out))
		return out
	}
	var got []string
	for _, cj := range res.Jobs {
		got = append(got, cj.Local)
		j := r.jobs[cj.Local]
		if j == nil || j.state != "pending" {
			r.fail("claim leased %s, which the model has as %+v", cj.Local, j)
		}
		if q := r.snap.quarantined(j.fp); j.mustHold && len(q) > 0 {
			r.fail("claim leased %s, held before, while %v of its fingerprint %s are quarantined", j.id, q, j.fp)
		}
		r.checkStickyLease(j.id, worker)
		j.state, j.lease, j.fence, j.started, j.snoozedTo = "running", cj.LeaseID, cj.Fence, r.now(), 0
		out = append(out, j)
		r.leased(j, nonce)
	}
	r.logf("claim %d as %s (nonce %s) -> %v dry %v parked %v", n, worker, nonce, got, res.Dry, res.Parked)
	// a claim archives only a pinned job whose FailAfter fell due, and a
	// job whose deadline passed (checkParked)
	r.checkParked(res.Parked)
	return out
}

// ---- ack ----

func (r *flowRun) opAck() {
	running := r.inState("running")
	if len(running) == 0 {
		r.logf("ack: nothing running")
		return
	}
	var jobs []*fjob
	var codes []store.Code
	for _, i := range r.rng.Perm(len(running))[:1+r.pick(min(3, len(running)))] {
		j := running[i]
		x := r.pick(100)
		if j.fp != "" && r.chance(4, 5) {
			x = 60 // jobs with a fingerprint crash more, to be quarantined
		}
		var c store.Code
		switch {
		case x < 40:
			c = store.CodeOK
		case x < 55:
			c = store.CodeRetry
		case x < 80:
			c = store.CodeCrash
		case x < 88:
			c = store.CodeRelease // a hand-back (shutdown)
		default:
			c = store.CodeSnooze
		}
		jobs, codes = append(jobs, j), append(codes, c)
	}
	r.ackJobs(jobs, codes)
}

var ackAllows = map[store.Code][]string{
	store.CodeOK:      {"completed"},
	store.CodeRetry:   {"retryable", "archived", "available"},
	store.CodeCrash:   {"retryable", "quarantined", "archived", "available"},
	store.CodeSnooze:  {"scheduled", "available"},
	store.CodeRelease: {"available"},
}

func (r *flowRun) ackJobs(jobs []*fjob, codes []store.Code) {
	// each call its own message: acks of the same content are one call,
	// a second sending answered from the first's record (contentID), which
	// may be stale from before the clock stepped back
	r.nonce++
	msg := fmt.Sprintf("m%d", r.nonce)
	acks := make([]store.Ack, len(jobs))
	var desc []string
	for i, j := range jobs {
		a := store.Ack{Lease: store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence}, Code: codes[i], Message: msg}
		switch codes[i] {
		case store.CodeRetry:
			a.Reason, a.Delay = "error", time.Duration(r.pick(20000))*time.Millisecond
		case store.CodeCrash:
			a.Reason = "panic"
		case store.CodeSnooze:
			a.Delay = time.Duration(r.pick(20000)) * time.Millisecond
		}
		// the due time a snooze gives it, should it apply (an unknown
		// outcome included: a job it did not snooze is claimed before it
		// is scheduled again)
		j.snoozedTo = 0
		if codes[i] == store.CodeSnooze {
			j.snoozedTo = r.now() + a.Delay.Milliseconds()
			if j.deadline != 0 && j.deadline < j.snoozedTo {
				j.snoozedTo = j.deadline
			}
		}
		acks[i] = a
		desc = append(desc, fmt.Sprintf("%s %s %s", j.id, a.LeaseID, a.Code))
	}
	var res []store.AckResult
	var err error
	for try := range 3 { // the same acks again: answered from the call's record
		res, _, err = r.st.Ack(r.ctx, r.p, acks)
		if err == nil {
			break
		}
		r.logf("ack [%s] try %d: %v", strings.Join(desc, "; "), try+1, err)
	}
	if err != nil {
		r.counts["unknown-outcome"]++
		r.resync(jobs, false)
		return
	}
	var got []string
	for i, j := range jobs {
		x := res[i]
		stale := errors.Is(x.Err, store.ErrStale)
		got = append(got, fmt.Sprintf("%s:%s/%v", j.id, x.State, x.Err))
		expired := j.started+flowLease.Milliseconds() <= r.now()
		switch {
		case x.Err != nil && !stale:
			r.fail("ack %s: %v", j.id, x.Err)
		case stale != expired:
			r.fail("ack %s of lease %s started %dms ago: stale %v, want %v (lease %v)", j.id, j.lease, r.now()-j.started, stale, expired, flowLease)
		case stale:
			r.counts["ack-stale"]++
		case !slices.Contains(ackAllows[codes[i]], x.State):
			r.fail("ack %s %s: state %s, want one of %v", j.id, codes[i], x.State, ackAllows[codes[i]])
		default:
			j.state, j.lease = coarse(x.State), ""
			if x.State == "quarantined" {
				r.counts["quarantined"]++
			}
		}
	}
	r.logf("ack [%s] -> %v", strings.Join(desc, "; "), got)
}

// resync adopts what Redis holds for jobs, after a call whose outcome is
// unknown; gone says the call may have deleted them.
func (r *flowRun) resync(jobs []*fjob, gone bool) {
	s := r.read(false)
	for _, j := range jobs {
		g := s.jobs[j.id]
		switch {
		case !g.exists && gone:
			delete(r.jobs, j.id)
			r.gone[j.id] = true
		case !g.exists:
			r.fail("job %s (%s) is lost after a failed call", j.id, j.state)
		default:
			if c := coarse(g.state); c != j.state {
				r.logf("resync %s: %s -> %s", j.id, j.state, c)
				j.state = c
			}
			if g.state == "running" {
				j.lease, j.fence = g.lease, g.fence
			}
		}
	}
}

// ---- operator calls ----

// pickJob is a job to aim an operator call at: mostly one in states.
func (r *flowRun) pickJob(states ...string) *fjob {
	if c := r.inState(states...); len(c) > 0 && r.chance(3, 4) {
		return c[r.pick(len(c))]
	}
	ids := r.ids()
	if len(ids) == 0 {
		return nil
	}
	return r.jobs[ids[r.pick(len(ids))]]
}

// adminOutcome checks an operator call's answer on job j against want
// (whether it must apply); it reports whether the call applied, and
// whether its outcome is known.
func (r *flowRun) adminOutcome(what string, j *fjob, want bool, err error) (applied, known bool) {
	applied, known, wrong := adminVerdict(err, want)
	if wrong != "" {
		r.fail("%s %s %s, the model has it %s (Redis %s)", what, j.id, wrong, j.state, r.snap.jobs[j.id].state)
	}
	if !known {
		r.counts["unknown-outcome"]++
	}
	return applied, known
}

func (r *flowRun) opCancel() {
	j := r.pickJob("pending", "running")
	if j == nil {
		return
	}
	prev, err := r.st.Cancel(r.ctx, r.ref(j.id), 2*time.Hour)
	r.logf("cancel %s (%s) -> %s %v", j.id, j.state, prev, err)
	applied, known := r.adminOutcome("cancel", j, j.state == "pending" || j.state == "running", err)
	if !known {
		r.resync([]*fjob{j}, false)
		return
	}
	if applied {
		j.state, j.lease = "cancelled", ""
	}
}

func (r *flowRun) opDelete() {
	j := r.pickJob("quarantined", "pending", "completed", "cancelled")
	if j == nil {
		return
	}
	prev, err := r.st.Delete(r.ctx, r.ref(j.id))
	r.logf("delete %s (%s) -> %s %v", j.id, j.state, prev, err)
	applied, known := r.adminOutcome("delete", j, j.state != "running", err)
	if !known {
		r.resync([]*fjob{j}, true)
		return
	}
	if applied {
		delete(r.jobs, j.id)
		r.gone[j.id] = true
	}
}

func (r *flowRun) opRelease() {
	var ids []string
	for _, j := range r.inState("quarantined") {
		if r.chance(1, 2) {
			ids = append(ids, j.id)
		}
	}
	if len(ids) == 0 {
		if j := r.pickJob("quarantined"); j != nil {
			ids = append(ids, j.id)
		}
	}
	if len(ids) == 0 {
		return
	}
	r.release(ids)
}

func (r *flowRun) release(ids []string) {
	errs, err := r.st.RedriveIDs(r.ctx, r.p, store.ActionRelease, ids)
	r.logf("release %v -> %v %v", ids, errs, err)
	var jobs []*fjob
	for _, id := range ids {
		jobs = append(jobs, r.jobs[id])
	}
	if err != nil {
		r.counts["unknown-outcome"]++
		r.resync(jobs, false)
		return
	}
	for i, j := range jobs {
		applied, known := r.adminOutcome("release", j, j.state == "quarantined", errs[i])
		if !known {
			r.fail("release %s: %v", j.id, errs[i])
		}
		if applied {
			j.state = "pending"
		}
	}
}

func (r *flowRun) opRunNow() {
	j := r.pickJob("pending")
	if j == nil {
		return
	}
	g := r.snap.jobs[j.id]
	prev, err := r.st.RunNow(r.ctx, r.ref(j.id))
	r.logf("run now %s (%s, held by %q) -> %s %v", j.id, g.state, g.qb, prev, err)
	// a held job stays held (StateError.Why)
	want := (g.state == "scheduled" || g.state == "retryable") && g.qb == ""
	if _, known := r.adminOutcome("run now", j, want, err); !known {
		r.resync([]*fjob{j}, false)
	}
}

// ---- time and maintenance ----

func (r *flowRun) opTick() {
	var d time.Duration
	switch x := r.pick(100); {
	case x < 55:
		d = time.Duration(r.pick(2001)) * time.Millisecond
	case x < 85:
		d = 2*time.Second + time.Duration(r.pick(38001))*time.Millisecond
	case x < 95:
		d = 40*time.Second + time.Duration(r.pick(140001))*time.Millisecond
	default:
		d = -time.Duration(1+r.pick(5000)) * time.Millisecond // the store clock steps back
	}
	r.advance(d)
	r.logf("tick %s", d)
	// miniredis runs Lua in gopher-lua, where a completion's tally of run
	// times grows a table to the run time in ms (TestModel's opTick): a
	// job that ran for minutes is reaped before it can be acked
	for _, j := range r.inState("running") {
		if r.now()-j.started > (3 * time.Minute).Milliseconds() {
			r.maintain()
			return
		}
	}
}

func (r *flowRun) maintain() {
	running := r.inState("running")
	res, err := r.st.Maintain(r.ctx, r.p, 100, 100, 0)
	r.logf("maintain -> reaped %v promoted %d %v", res.Reaped, res.Promoted, err)
	if err != nil {
		r.counts["unknown-outcome"]++
		r.resync(running, false)
		return
	}
	reaped := map[string]bool{}
	for _, x := range res.Reaped {
		j := r.jobs[x.Local]
		if j == nil || j.state != "running" {
			r.fail("maintain reaped %s, which the model has as %+v", x.Local, j)
		}
		if j.started+flowLease.Milliseconds() > r.now() {
			r.fail("maintain reaped %s, whose lease runs %dms more", j.id, j.started+flowLease.Milliseconds()-r.now())
		}
		if !slices.Contains([]string{"retryable", "available", "quarantined"}, x.State) {
			r.fail("maintain reaped %s to %s", j.id, x.State)
		}
		j.state, j.lease = coarse(x.State), ""
		reaped[j.id] = true
	}
	for _, j := range running {
		if !reaped[j.id] && j.started+flowLease.Milliseconds() <= r.now() {
			r.fail("maintain left %s running, its lease run out %dms ago", j.id, r.now()-j.started-flowLease.Milliseconds())
		}
	}
}

// leased records a lease of a job of a rate class (checkRates).
func (r *flowRun) leased(j *fjob, nonce string) {
	if j.rc == "" {
		return
	}
	phase := "step"
	if r.drained {
		phase = "drain"
	}
	at := r.refilled
	r.rated[j.rc] = append(r.rated[j.rc], at)
	r.ratedBy[j.rc] = append(r.ratedBy[j.rc], fmt.Sprintf("%s@%s%d/%s/refill %dms", j.id, phase, r.step, nonce, at))
}
