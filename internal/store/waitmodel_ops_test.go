package store_test

// The operations of TestWaitModel (waitmodel_test.go): each draws its
// inputs, predicts on a copy of the model what the store must answer and
// do, runs, compares, and adopts the copy (after a call whose outcome is
// unknown, whichever of the two states Redis holds: waitRun.settle).

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

var (
	waitSignalNames = []string{"a", "b", "c"}
	waitTimerNames  = []string{"t1", "t2", "t3"}
)

func (r *waitRun) randomOp() {
	enq := 8
	switch live := len(r.m.jobs); {
	case live >= waitMaxLive:
		enq = 0
	case live < 3:
		enq = 30
	}
	runWeighted(r.rng, r.counts, []weightedOp{
		{"enqueue", enq, r.opEnqueue},
		{"claim", 14, r.opClaim},
		{"ack", 16, r.opAck},
		{"signal", 18, r.opSignal},
		{"signal-again", 4, r.opSignalAgain},
		{"take", 8, r.opTake},
		{"take-again", 2, r.opTakeAgain},
		{"unsignal", 6, r.opUnsignal},
		{"tick", 12, r.opTick},
		{"maintain", 5, r.opMaintain},
		{"cancel", 3, r.opCancel},
		{"delete", 2, r.opDelete},
		{"redrive", 3, r.opRedrive},
		{"run-now", 3, r.opRunNow},
		{"bulk-delete", 1, r.opBulkDelete},
	})
}

func (r *waitRun) pick(n int) int           { return r.rng.IntN(n) }
func (r *waitRun) chance(num, den int) bool { return r.rng.IntN(den) < num }

// pickID is a job to aim a call at: mostly a live one (of states, when
// given and there is one), else a deleted or never used ID.
func (r *waitRun) pickID(states ...string) string {
	x := r.pick(10)
	if x < 8 && len(r.m.jobs) > 0 {
		if len(states) > 0 && r.chance(3, 4) {
			if c := r.m.inState(states...); len(c) > 0 {
				return c[r.pick(len(c))].id
			}
		}
		ids := r.m.ids()
		return ids[r.pick(len(ids))]
	}
	return fmt.Sprintf("j%02d", r.pick(waitIDs+2)) // the last two are never enqueued
}

// ---- transitions of the model ----

func (r *waitRun) finish(m *wmodel, j *wjob, state string) {
	ret := msOf(waitRetainArch)
	switch state {
	case "completed":
		ret = r.retainCompleted
	case "cancelled":
		ret = msOf(waitRetainCanc)
	}
	j.susp = false
	if ret < 0 {
		r.remove(m, j.id)
		return
	}
	j.state, j.score, j.finished = state, r.now()+ret, r.now()
}

func (r *waitRun) remove(m *wmodel, id string) {
	delete(m.jobs, id)
	m.gone[id] = true
}

func wavailable(j *wjob) { j.state, j.score, j.susp = "available", 0, false }

func (r *waitRun) crash(m *wmodel, j *wjob) string {
	j.crash++
	if j.crash >= waitCrashLimit {
		r.finish(m, j, "quarantined")
		return "quarantined"
	}
	if r.crashDelay <= 0 {
		wavailable(j)
		return "available"
	}
	j.state, j.score = "retryable", dueBy(j, r.now()+min(r.crashDelay<<(j.crash-1), max(r.crashDelay, 60000)))
	return "retryable"
}

// dueBy is when a job due again at at is due: at its deadline, if it has
// one before at (lib_ready.lua schedule_at).
func dueBy(j *wjob, at int64) int64 {
	if j.deadline > 0 && j.deadline < at {
		return j.deadline
	}
	return at
}

// due lists the jobs in states whose score has come, in zset order.
func (r *waitRun) due(m *wmodel, limit int, states ...string) []*wjob {
	var out []*wjob
	for _, j := range m.inState(states...) {
		if j.score <= r.now() {
			out = append(out, j)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].score != out[b].score {
			return out[a].score < out[b].score
		}
		return out[a].id < out[b].id
	})
	return out[:min(len(out), limit)]
}

// promote makes due jobs available: a suspended job whose earliest timer
// came is woken.
func (r *waitRun) promote(m *wmodel, limit int) int {
	due := r.due(m, limit, "scheduled", "retryable")
	for _, j := range due {
		if j.susp {
			r.counts["~woken-by-timer"]++
		}
		wavailable(j)
	}
	return len(due)
}

// current reports whether l holds its job at now.
func (m *wmodel) current(l store.Lease, now int64) bool {
	j := m.jobs[l.Local]
	return j != nil && j.state == "running" && j.lease == l.LeaseID && j.fence == l.Fence && j.score > now
}

// ---- enqueue and claim ----

func (r *waitRun) opEnqueue() {
	var free []string
	for i := range waitIDs {
		if id := fmt.Sprintf("j%02d", i); r.m.jobs[id] == nil {
			free = append(free, id)
		}
	}
	if len(free) == 0 {
		return
	}
	id := free[r.pick(len(free))]
	pre := r.m
	post := pre.clone()
	nj := store.NewJob{Local: id, Kind: "k", Payload: []byte("p"), MaxAttempts: waitMaxAttempts}
	var dl int64
	if r.chance(1, 3) {
		dl = r.now() + 5000 + int64(r.pick(180000))
		nj.Deadline = time.UnixMilli(dl)
	}
	if r.chance(1, 3) {
		nj.Priority = 1 + r.pick(3)
	}
	j := &wjob{id: id, state: "available", deadline: dl, prio: nj.Priority, created: r.now()}
	if r.chance(1, 4) {
		// due later: in sched, or in a bucket of later jobs (a deleted
		// job's ID enqueued again may find its old entry there)
		nj.Delay = time.Duration(1+r.pick(60000)) * time.Millisecond
		j.state, j.score = "scheduled", r.now()+nj.Delay.Milliseconds()
	}
	// due at or after its deadline by its delay, it could never run:
	// refused, that job alone (enqueue.lua past_deadline), nothing written
	doomed := nj.Delay > 0 && dl > 0 && dl <= j.score
	if doomed {
		post = pre.clone()
	} else {
		post.jobs[id] = j
		delete(post.gone, id)
	}
	res, err := r.st.Enqueue(r.ctx, r.p, []store.NewJob{nj})
	r.logf("enqueue %s (deadline %d, priority %d, delay %s) -> %+v %v", id, dl, nj.Priority, nj.Delay, res, err)
	switch {
	case err != nil:
	case doomed && (len(res) != 1 || res[0].Status != store.Failed || !errors.Is(res[0].Err, store.ErrDeadlineNotAfterDue)):
		r.fail("enqueue %s due at or after its deadline: %+v, want refused (ErrDeadlineNotAfterDue)", id, res)
	case doomed:
		r.counts["~enqueue-past-deadline"]++
	case len(res) != 1 || res[0].Status != store.Added || res[0].Err != nil:
		r.fail("enqueue %s: %+v", id, res)
	}
	if r.settle(pre, post, err, "enqueue") && !doomed {
		r.created[id] = r.step
	}
}

func (r *waitRun) opClaim() {
	n := 1 + r.pick(3)
	worker := fmt.Sprintf("w%d", r.pick(2))
	nonce := fmt.Sprintf("n%d.%d", r.seed, r.step)
	noSuspect := r.chance(1, 4)
	pre := r.m
	post := pre.clone()
	r.promote(post, 100)
	var avail []*wjob
	expired := map[string]bool{}
	for _, j := range post.inState("available") {
		if j.deadline > 0 && j.deadline <= r.now() {
			expired[j.id] = true // archived by the claim that finds it
		} else {
			avail = append(avail, j)
		}
	}
	expiry := r.now() + msOf(waitLease)
	req := store.ClaimRequest{N: n, Lease: waitLease, Worker: worker, Nonce: nonce, ID: nonce, PromoteLimit: 100, NoSuspect: noSuspect}
	var res store.ClaimResult
	var err error
	for try := 1; ; try++ {
		res, err = r.st.Claim(r.ctx, r.p, req)
		if err == nil {
			break
		}
		r.counts["claim-resent"]++
		r.logf("claim %d (nonce %s) failed: %v; sent again", n, nonce, err)
		if try == 5 {
			r.fail("claim failed 5 times")
		}
	}
	var got []string
	for _, cj := range res.Jobs {
		got = append(got, fmt.Sprintf("%s/%d", cj.Local, cj.Fence))
	}
	suspects := 0
	for _, j := range avail {
		if j.crash > 0 {
			suspects++
		}
	}
	r.logf("claim %d for %s (nonce %s, no suspect %v) of %d available (%d suspects) -> %v", n, worker, nonce, noSuspect, len(avail), suspects, got)
	claimable := len(avail) - suspects
	if suspects > 0 && !noSuspect {
		claimable++
	}
	if want := min(n, claimable); len(res.Jobs) != want {
		r.fail("claim of %d leased %d jobs, want %d (available %d, suspects %d)", n, len(res.Jobs), want, len(avail), suspects)
	}
	for _, pk := range res.Parked {
		if !expired[pk.Local] || pk.Reason != "deadline_exceeded" {
			r.fail("claim parked %+v, which is not available past its deadline (%v)", pk, expired)
		}
		r.counts["~claim-parked-deadline"]++
		r.finish(post, post.jobs[pk.Local], "archived")
	}
	for _, cj := range res.Jobs {
		j := post.jobs[cj.Local]
		if j == nil || j.state != "available" {
			r.fail("claim leased %s, which is not available (%+v)", cj.Local, j)
		}
		if cj.Fence != j.fence+1 || cj.LeaseExpiry.UnixMilli() != expiry || cj.Attempt != j.attempt || cj.CrashAttempt != j.crash {
			r.fail("claim answered %s fence %d expiry %d attempt %d crash %d; want fence %d expiry %d attempt %d crash %d",
				cj.Local, cj.Fence, cj.LeaseExpiry.UnixMilli(), cj.Attempt, cj.CrashAttempt, j.fence+1, expiry, j.attempt, j.crash)
		}
		// the claim hands out the kept signals, the timers and the
		// checkpoints
		want := map[string]string{}
		for _, s := range j.signals {
			want[s.field()] = s.payload
		}
		for name, at := range j.timers {
			want[checkpoint.TimerPrefix+name] = strconv.FormatInt(at, 10)
		}
		for f, rec := range j.steps {
			want[f] = rec
		}
		gotSteps := map[string]string{}
		for f, v := range cj.Steps {
			if !strings.HasPrefix(f, "!i:") {
				gotSteps[f] = string(v)
			}
		}
		if fmt.Sprint(gotSteps) != fmt.Sprint(want) {
			r.fail("claim handed out %s with steps %v, want %v", cj.Local, gotSteps, want)
		}
		j.state, j.lease, j.fence, j.score, j.started = "running", cj.LeaseID, cj.Fence, expiry, r.now()
		r.leases = append(r.leases, store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence})
		if len(r.leases) > 40 {
			r.leases = r.leases[1:]
		}
	}
	r.m = post
}

// ---- acks ----

// randomWaits draws a suspension: up to three timers (after a while, at a
// time, due already) and up to three signals, at least one wait.
func (r *waitRun) randomWaits() *sluicetype.SuspendedError {
	e := &sluicetype.SuspendedError{}
	nt, ns := r.pick(3), r.pick(4)
	if nt+ns == 0 {
		ns = 1
	}
	for _, i := range r.rng.Perm(len(waitTimerNames))[:nt] {
		t := sluicetype.Timer{Name: waitTimerNames[i]}
		switch x := r.pick(10); {
		case x < 1:
			t.After = 0
		case x < 6:
			t.After = time.Duration(r.pick(60000)) * time.Millisecond
		case x < 8:
			t.At = r.clk.Now().Add(time.Duration(r.pick(60000)) * time.Millisecond)
		default:
			t.At = r.clk.Now().Add(-time.Duration(r.pick(5000)) * time.Millisecond)
		}
		e.Timers = append(e.Timers, t)
	}
	for _, i := range r.rng.Perm(len(waitSignalNames))[:min(ns, len(waitSignalNames))] {
		e.Signals = append(e.Signals, waitSignalNames[i])
	}
	return e
}

func waitsString(e *sluicetype.SuspendedError) string {
	var parts []string
	for _, t := range e.Timers {
		if t.At.IsZero() {
			parts = append(parts, fmt.Sprintf("%s+%dms", t.Name, t.After.Milliseconds()))
		} else {
			parts = append(parts, fmt.Sprintf("%s@%d", t.Name, t.At.UnixMilli()))
		}
	}
	for _, s := range e.Signals {
		parts = append(parts, "sig:"+s)
	}
	return strings.Join(parts, ",")
}

// suspend predicts a suspension of j on e (lib_waits.lua suspend).
func (r *waitRun) suspend(j *wjob, e *sluicetype.SuspendedError) string {
	due := int64(-1)
	for _, t := range e.Timers {
		at, ok := j.timers[t.Name]
		if !ok {
			if t.At.IsZero() {
				at = r.now() + t.After.Milliseconds()
			} else {
				at = max(t.At.UnixMilli(), 0)
			}
			if j.timers == nil {
				j.timers = map[string]int64{}
			}
			j.timers[t.Name] = at
		}
		if due < 0 || at < due {
			due = at
		}
	}
	if j.deadline > 0 && (due < 0 || j.deadline < due) {
		due = j.deadline // archived at its deadline by the claim that wakes it
	}
	if (due >= 0 && due <= r.now()) || j.kept(e.Signals) {
		wavailable(j)
		return "available"
	}
	if due < 0 {
		due = store.NeverDue
	}
	j.state, j.score, j.susp, j.awaits = "scheduled", due, true, slices.Clone(e.Signals)
	return "scheduled"
}

// waitAckSpec is one ack of a call, with the waits of a suspension.
type waitAckSpec struct {
	ack   store.Ack
	waits *sluicetype.SuspendedError
	desc  string
}

// randomAck draws an outcome for lease l.
func (r *waitRun) randomAck(l store.Lease, i int) waitAckSpec {
	a := store.Ack{Lease: l, Message: fmt.Sprintf("m%d.%d", r.step, i)}
	var waits *sluicetype.SuspendedError
	desc := ""
	switch x := r.pick(100); {
	case x < 60:
		waits = r.randomWaits()
		spec, err := store.SuspendSpec(waits)
		if err != nil {
			r.fail("SuspendSpec %s: %v", waitsString(waits), err)
		}
		a.Code, a.Data = store.CodeSuspend, []byte(spec)
		desc = "suspend " + waitsString(waits)
	case x < 70:
		a.Code, desc = store.CodeOK, "ok"
	case x < 78:
		a.Code, a.Delay, a.Reason = store.CodeRetry, time.Duration(r.pick(20000))*time.Millisecond, "e"
		desc = fmt.Sprintf("retry %s", a.Delay)
	case x < 86:
		a.Code, a.Reason, desc = store.CodeCrash, "panic", "crash"
	case x < 89:
		a.Code, desc = store.CodeDeadline, "deadline"
	case x < 91:
		a.Code, desc = store.CodeRelease, "release"
	case x < 93:
		a.Code, a.Reason, desc = store.CodePark, "bad_signal", "park bad_signal"
	default:
		a.Code, a.Delay = store.CodeSnooze, time.Duration(r.pick(30000))*time.Millisecond
		desc = fmt.Sprintf("snooze %s", a.Delay)
	}
	return waitAckSpec{a, waits, fmt.Sprintf("%s %s/%d: %s", l.Local, l.LeaseID, l.Fence, desc)}
}

// applyAck predicts one ack on post (pre: the state before the call, by
// which the script judges every lease) and returns its answer.
func (r *waitRun) applyAck(pre, post *wmodel, s waitAckSpec) string {
	l, a := s.ack.Lease, s.ack
	if !pre.current(l, r.now()) {
		if j := pre.jobs[l.Local]; j != nil && j.state != "running" && j.lease == l.LeaseID && j.fence == l.Fence {
			return j.state // a late re-send of an attempt that ended
		}
		return "stale"
	}
	j := post.jobs[l.Local]
	switch a.Code {
	case store.CodeSuspend:
		return r.suspend(j, s.waits)
	case store.CodeOK:
		r.finish(post, j, "completed")
		return "completed"
	case store.CodeRetry:
		j.attempt++
		if j.attempt >= waitMaxAttempts {
			r.finish(post, j, "archived")
			return "archived"
		}
		j.state, j.score = "retryable", dueBy(j, r.now()+a.Delay.Milliseconds())
		return "retryable"
	case store.CodeCrash:
		return r.crash(post, j)
	case store.CodeSnooze:
		j.state, j.score = "scheduled", dueBy(j, r.now()+a.Delay.Milliseconds())
		return "scheduled"
	case store.CodeDeadline:
		if j.deadline > r.now() {
			j.state, j.score = "scheduled", j.deadline
			return "scheduled"
		}
		r.finish(post, j, "archived")
		return "archived"
	case store.CodeRelease:
		wavailable(j)
		return "available"
	case store.CodePark:
		r.finish(post, j, "archived")
		return "archived"
	}
	r.fail("applyAck: code %s", a.Code)
	return ""
}

// opAck acks one to three attempts in one call: mostly held leases, now
// and then one that is not held any more.
func (r *waitRun) opAck() {
	var held []*wjob
	for _, j := range r.m.inState("running") {
		if j.score > r.now() {
			held = append(held, j)
		}
	}
	var specs []waitAckSpec
	seen := map[string]bool{}
	k := 1 + min(r.pick(3), r.pick(3))
	for _, i := range r.rng.Perm(len(held))[:min(k, len(held))] {
		j := held[i]
		seen[j.id] = true
		specs = append(specs, r.randomAck(store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence}, len(specs)))
	}
	if len(r.leases) > 0 && (len(specs) == 0 || r.chance(1, 5)) {
		if l := r.leases[r.pick(len(r.leases))]; !seen[l.Local] {
			specs = slices.Insert(specs, r.pick(len(specs)+1), r.randomAck(l, len(specs)))
		}
	}
	if len(specs) == 0 {
		return
	}
	pre := r.m
	post := pre.clone()
	acks := make([]store.Ack, len(specs))
	var want, desc []string
	for i, s := range specs {
		acks[i] = s.ack
		desc = append(desc, s.desc)
		want = append(want, r.applyAck(pre, post, s))
	}
	for try := 1; ; try++ {
		res, _, err := r.st.Ack(r.ctx, r.p, acks)
		var got []string
		if err == nil {
			for _, a := range res {
				switch {
				case errors.Is(a.Err, store.ErrStale):
					got = append(got, "stale")
				case a.Err != nil:
					got = append(got, "error: "+a.Err.Error())
				default:
					got = append(got, a.State)
				}
			}
		}
		r.logf("ack [%s] -> %v %v (want %v)", strings.Join(desc, "; "), got, err, want)
		if err != nil {
			// sent again, as runtime's flushAcks does: the same content,
			// the same call (answered from its record if it ran)
			r.counts["ack-resent"]++
			if try == 5 {
				r.fail("ack failed 5 times")
			}
			continue
		}
		if !slices.Equal(got, want) {
			r.fail("ack [%s]: %v, want %v", strings.Join(desc, "; "), got, want)
		}
		for i, s := range specs {
			r.counts["~ack-"+string(s.ack.Code)+"-"+want[i]]++
		}
		if len(specs) > 1 {
			r.counts["~ack-batch"]++
		}
		r.m = post
		return
	}
}

// ---- signals ----

type sentSignal struct {
	id, name, payload, key string
	// of, when not 0, names the job by its creation time too (ms;
	// SignalOf): a job of the ID created at another time is another job,
	// refused, nothing kept
	of int64
}

func (r *waitRun) opSignal() {
	s := sentSignal{id: r.pickID("scheduled", "scheduled", "running", "available"), payload: fmt.Sprintf("p%d", r.step)}
	j := r.m.jobs[s.id]
	switch {
	case j != nil && j.susp && len(j.awaits) > 0 && r.chance(1, 2):
		s.name = j.awaits[r.pick(len(j.awaits))]
	case r.chance(1, 6):
		s.name = "z" // nobody waits for it
	default:
		s.name = waitSignalNames[r.pick(len(waitSignalNames))]
	}
	switch x := r.pick(10); {
	case x < 5:
	case x < 8:
		s.key = fmt.Sprintf("k%d", r.step)
	default:
		var used []string
		if j != nil {
			used = sortedKeys(j.used)
		}
		if len(used) > 0 {
			s.key = used[r.pick(len(used))]
		} else {
			s.key = fmt.Sprintf("k%d", r.pick(r.step+1)) // perhaps another job's
		}
	}
	// named by its creation time: the job's own, or one a millisecond
	// off, as a caller that saw an earlier job of the ID would name it
	if j != nil && r.chance(1, 4) {
		s.of = j.created - int64(r.pick(2))
	}
	r.sendSignal(s, "signal")
}

// opSignalAgain sends the last signal again, as a caller's retry: with
// a key it keeps nothing more; without one, it is another signal.
func (r *waitRun) opSignalAgain() {
	if r.lastSignal == nil {
		return
	}
	r.sendSignal(*r.lastSignal, "signal again")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (r *waitRun) sendSignal(s sentSignal, what string) {
	r.lastSignal = &s
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[s.id]; j != nil {
		switch {
		case s.of != 0 && s.of != j.created:
			want = fmt.Sprintf("other:%d", j.created)
		case terminalStates[j.state] && s.key != "" && j.used[s.key]:
			want = "duplicate:" + j.state
		case terminalStates[j.state]:
			want = "refused:" + j.state
		case s.key != "" && j.used[s.key]:
			want = "duplicate:" + j.state
		case j.deadline > 0 && j.deadline <= r.now():
			// archived by the claim that meets it: no wait takes a signal
			want = "refused:" + j.state
			r.counts["~signal-past-deadline"]++
		default:
			if s.key != "" {
				if j.used == nil {
					j.used = map[string]bool{}
				}
				j.used[s.key] = true
			}
			j.seq++
			j.signals = append(j.signals, wsig{j.seq, s.name, s.payload})
			if j.state == "scheduled" && j.susp && slices.Contains(j.awaits, s.name) {
				r.counts["~woken-by-signal"]++
				wavailable(j)
			} else if j.state == "scheduled" && !j.susp {
				r.counts["~signal-to-unsuspended-scheduled"]++
			}
			want = "ok:" + j.state
		}
	}
	var of store.Created
	if s.of != 0 {
		of = store.Created{From: time.UnixMilli(s.of), Before: time.UnixMilli(s.of + 1)}
	}
	res, err := r.st.SignalOf(r.ctx, r.ref(s.id), s.name, []byte(s.payload), s.key, of)
	var got string
	var se *sluicetype.StateError
	var other *sluicetype.OtherJobError
	known := true
	switch {
	case errors.As(err, &other):
		got = fmt.Sprintf("other:%d", other.Created.UnixMilli())
		r.counts["~signal-other-job"]++
	case err == nil && res.Duplicate:
		got = "duplicate:" + res.State
	case err == nil:
		got = "ok:" + res.State
	case errors.Is(err, store.ErrNotFound):
		got = "missing"
	case errors.As(err, &se):
		got = "refused:" + se.State
	default:
		known = false
	}
	r.logf("%s %s %s=%s key %q of %d -> %s %v (want %s)", what, s.id, s.name, s.payload, s.key, s.of, got, err, want)
	if known && got != want {
		r.fail("%s %s %s key %q: %s, want %s", what, s.id, s.name, s.key, got, want)
	}
	if known {
		err = nil
	}
	r.settle(pre, post, err, what)
}

func (r *waitRun) opUnsignal() {
	id := r.pickID("scheduled", "available", "archived", "cancelled", "retryable")
	name := waitSignalNames[r.pick(len(waitSignalNames))]
	j := r.m.jobs[id]
	if j != nil && len(j.signals) > 0 && r.chance(2, 3) {
		name = j.signals[r.pick(len(j.signals))].name
	}
	var only int64
	switch x := r.pick(4); {
	case x < 2:
	case x < 3:
		if j != nil {
			for _, s := range j.signals {
				if s.name == name {
					only = s.seq
					break
				}
			}
		}
	default:
		only = int64(1 + r.pick(8))
	}
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		switch j.state {
		case "running", "completed":
			want = "refused:" + j.state
		default:
			want = "ok:" + j.state + " #0"
			for i, s := range j.signals {
				if s.name != name {
					continue
				}
				if only > 0 && only != s.seq {
					want = fmt.Sprintf("ok:%s #%d", j.state, -s.seq)
					break
				}
				want = fmt.Sprintf("ok:%s #%d %s", j.state, s.seq, s.payload)
				j.signals = slices.Delete(j.signals, i, i+1)
				post.taken[r.sigName(id, s.seq)] = true
				break
			}
		}
	}
	seq, payload, state, err := r.st.Unsignal(r.ctx, r.ref(id), name, only)
	var got string
	var se *sluicetype.StateError
	known := true
	switch {
	case err == nil && seq > 0:
		got = fmt.Sprintf("ok:%s #%d %s", state, seq, payload)
	case err == nil:
		got = fmt.Sprintf("ok:%s #%d", state, seq)
	case errors.Is(err, store.ErrNotFound):
		got = "missing"
	case errors.As(err, &se):
		got = "refused:" + se.State
	default:
		known = false
	}
	r.logf("unsignal %s %s only %d -> %s %v (want %s)", id, name, only, got, err, want)
	r.counts["~unsignal-"+strings.Fields(want + " x")[0]+map[bool]string{true: "-discarded", false: ""}[len(strings.Fields(want)) > 2]]++
	if known && got != want {
		r.fail("unsignal %s %s only %d: %s, want %s", id, name, only, got, want)
	}
	if known {
		err = nil
	}
	r.settle(pre, post, err, "unsignal")
}

// ---- step commits that take a signal ----

// randomTake draws a step commit of lease l that takes a signal: mostly
// a kept one, else one taken or discarded (or never sent), or a field
// that names no signal.
func (r *waitRun) randomTake(l store.Lease, i int) store.Checkpoint {
	var field string
	j := r.m.jobs[l.Local]
	switch x := r.pick(10); {
	case x < 7 && j != nil && len(j.signals) > 0:
		field = j.signals[r.pick(len(j.signals))].field()
	case x < 9:
		field = wsig{int64(1 + r.pick(6)), waitSignalNames[r.pick(3)], ""}.field()
	default:
		field = "t1" // a step's name, or a timer's field: no signal
		if r.chance(1, 2) {
			field = checkpoint.TimerPrefix + "t1"
		}
	}
	return store.Checkpoint{Lease: l, Field: fmt.Sprintf("s%d.%d", r.step, i), Record: []byte(fmt.Sprintf("r%d.%d", r.step, i)),
		Mode: store.ModeTake(field), Commit: fmt.Sprintf("%s:c%d.%d", l.Local, r.step, i)}
}

// opTake sends one or two take commits of an attempt in one call (two
// may take the same signal: the second finds it gone), now and then
// beside one of a lease not held any more.
func (r *waitRun) opTake() {
	var held []*wjob
	for _, j := range r.m.inState("running") {
		if j.score > r.now() {
			held = append(held, j)
		}
	}
	var cs []store.Checkpoint
	if len(held) > 0 {
		j := held[r.pick(len(held))]
		l := store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence}
		cs = append(cs, r.randomTake(l, 0))
		if r.chance(1, 4) {
			c := r.randomTake(l, 1)
			if r.chance(1, 2) {
				c.Mode = cs[0].Mode // the same signal twice
			}
			cs = append(cs, c)
		}
	}
	if len(r.leases) > 0 && (len(cs) == 0 || r.chance(1, 6)) {
		cs = append(cs, r.randomTake(r.leases[r.pick(len(r.leases))], len(cs)))
	}
	if len(cs) == 0 {
		return
	}
	r.lastTake = cs
	r.sendTakes(cs, "take")
}

func (r *waitRun) opTakeAgain() {
	if r.lastTake == nil {
		return
	}
	r.sendTakes(r.lastTake, "take again")
}

// applyTake predicts one take commit on post.
func (r *waitRun) applyTake(post *wmodel, c store.Checkpoint) string {
	take := strings.TrimPrefix(c.Mode, "take:")
	if !post.current(c.Lease, r.now()) {
		return "stale"
	}
	j := post.jobs[c.Local]
	i := slices.IndexFunc(j.signals, func(s wsig) bool { return s.field() == take })
	switch prev, ok := j.steps[c.Field]; {
	case ok && prev == string(c.Record):
		return "ok" // this commit sent again: nothing more taken
	case ok:
		return "exists"
	case i < 0:
		return "effect_error"
	}
	post.taken[r.sigName(j.id, j.signals[i].seq)] = true
	j.signals = slices.Delete(j.signals, i, i+1)
	if j.steps == nil {
		j.steps = map[string]string{}
	}
	j.steps[c.Field] = string(c.Record)
	return "ok"
}

func (r *waitRun) sendTakes(cs []store.Checkpoint, what string) {
	pre := r.m
	post := pre.clone()
	// the same commits sent again are the same call (the store's content
	// ID), answered from its record, nothing applied again
	var kb strings.Builder
	var desc []string
	for _, c := range cs {
		fmt.Fprintf(&kb, "%s/%s/%d/%s/%s/%s;", c.Local, c.LeaseID, c.Fence, c.Field, c.Record, c.Mode)
		desc = append(desc, fmt.Sprintf("%s %s/%d %s <- %s", c.Local, c.LeaseID, c.Fence, c.Field, strings.TrimPrefix(c.Mode, "take:")))
	}
	key := kb.String()
	want, replay := r.takes[key]
	if !replay {
		for _, c := range cs {
			want = append(want, r.applyTake(post, c))
		}
	}
	for try := 1; ; try++ {
		res, err := r.st.Checkpoints(r.ctx, r.p, cs)
		var got []string
		for _, cr := range res {
			var fx *sluicetype.EffectError
			switch e := cr.Err; {
			case e == nil:
				got = append(got, "ok")
			case errors.Is(e, store.ErrStale):
				got = append(got, "stale")
			case errors.Is(e, store.ErrStepDone):
				got = append(got, "exists")
			case errors.As(e, &fx):
				got = append(got, "effect_error")
			default:
				got = append(got, "error: "+e.Error())
			}
		}
		r.logf("%s [%s] -> %v %v (want %v)", what, strings.Join(desc, "; "), got, err, want)
		if err != nil {
			// a checkpoint sent again is answered as its first commit was
			r.counts["take-resent"]++
			if try == 5 {
				r.fail("take failed 5 times")
			}
			continue
		}
		if !slices.Equal(got, want) {
			r.fail("%s [%s]: %v, want %v", what, strings.Join(desc, "; "), got, want)
		}
		r.takes[key] = want
		for _, w := range want {
			r.counts["~"+strings.ReplaceAll(what, " ", "-")+"-"+w]++
		}
		r.m = post
		return
	}
}

// ---- time and maintenance ----

// opTick moves the store clock on: a little, past leases and retries,
// or to (or just short of) a suspended job's earliest timer.
func (r *waitRun) opTick() {
	var d time.Duration
	var susp []*wjob
	for _, j := range r.m.inState("scheduled") {
		if j.susp && j.score < store.NeverDue && j.score > r.now() {
			susp = append(susp, j)
		}
	}
	switch x := r.pick(100); {
	case x < 3:
		// back, as after a failover to a server whose clock is behind:
		// the next call sees an earlier time than the last one
		d = -time.Millisecond - time.Duration(r.pick(7500))*time.Millisecond
	case x < 33 && len(susp) > 0:
		j := susp[r.pick(len(susp))]
		d = time.Duration(j.score-r.now()-int64(r.pick(2))) * time.Millisecond // at it, or a millisecond short
	case x < 65:
		d = time.Duration(r.pick(2000)) * time.Millisecond
	case x < 88:
		d = 2*time.Second + time.Duration(r.pick(18000))*time.Millisecond
	case x < 97:
		d = 20*time.Second + time.Duration(r.pick(10*60000))*time.Millisecond
	default:
		d = time.Hour + time.Duration(r.pick(3*3600000))*time.Millisecond
	}
	if time.Until(r.clk.Now().Add(d)) > 3*24*time.Hour {
		d = min(d, time.Second)
	}
	r.clk.Advance(d)
	r.logf("tick %s", d)
	if r.proxy == nil {
		// miniredis's gopher-lua is slow to ack a job that ran for long
		// (model_writes_test.go opTick): reap those first
		for _, j := range r.m.inState("running") {
			if r.now()-j.started > msOf(5*time.Minute) {
				r.maintain()
				return
			}
		}
	}
}

func (r *waitRun) opMaintain() {
	limits := []int{1, 2, 100, 100}
	r.maintainLimits(limits[r.pick(4)], limits[r.pick(4)], limits[r.pick(4)])
}

func (r *waitRun) maintain() { r.maintainLimits(100, 100, 100) }

func (r *waitRun) maintainLimits(reapL, promL, sweepL int) {
	pre := r.m
	post := pre.clone()
	var reaped []store.Reaped
	for _, j := range r.due(post, reapL, "running") {
		j.lease = ""
		reaped = append(reaped, store.Reaped{Local: j.id, Holder: "", State: r.crash(post, j)})
	}
	promoted := r.promote(post, promL)
	deleted := 0
	for _, s := range []string{"completed", "archived", "quarantined", "cancelled"} {
		for _, j := range r.due(post, sweepL, s) {
			r.remove(post, j.id)
			deleted++
		}
	}
	res, err := r.st.Maintain(r.ctx, r.p, reapL, promL, sweepL)
	r.logf("maintain %d/%d/%d -> %+v %v (want reaped %v promoted %d deleted %d)", reapL, promL, sweepL, res, err, reaped, promoted, deleted)
	if err == nil {
		var got []string
		for _, rp := range res.Reaped {
			got = append(got, rp.Local+":"+rp.State)
		}
		var want []string
		for _, rp := range reaped {
			want = append(want, rp.Local+":"+rp.State)
		}
		if !slices.Equal(got, want) || res.Promoted != promoted || res.Deleted != deleted {
			r.fail("maintain: reaped %v promoted %d deleted %d, want %v %d %d", got, res.Promoted, res.Deleted, want, promoted, deleted)
		}
	}
	r.settle(pre, post, err, "maintain")
}
