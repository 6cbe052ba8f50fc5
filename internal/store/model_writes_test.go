package store_test

// The write operations of TestModel (model_ops_test.go has the others):
// acks and step checkpoints, each predicted on a copy of the model, sent,
// compared, and sent again as Sluice's own retries do.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// ackCall is one batch of acks, kept to be sent again as Sluice does.
type ackCall struct {
	specs []ackSpec
	step  int
}

func (r *modelRun) randomAck(l store.Lease, i int, invalidUsed *bool) ackSpec {
	a := store.Ack{Lease: l, Message: fmt.Sprintf("m%d.%d.%d", r.seg, r.step, i)}
	s := ackSpec{deltas: map[string]int64{}}
	switch x := r.pick(100); {
	case x < 45:
		a.Code = store.CodeOK
		a.Effects = r.effects(s.deltas, true)
		if !*invalidUsed && r.chance(1, 6) {
			*invalidUsed = true
			var e sluicetype.Effect
			e, s.invalid = r.invalidEffect()
			a.Effects = append(a.Effects, e)
		}
		if len(a.Effects) > 0 {
			a.Commit = r.commitName(l.Local, "#complete") // as runtime names it
		}
		a.Delay = r.delay(5000) // the retry's, should the effects fail
		if r.chance(1, 5) {
			a.Data = []byte("result")
		}
	case x < 57:
		a.Code, a.Reason, a.Delay = store.CodeRetry, "error", r.backDelay(l.Local, 20000)
	case x < 65:
		a.Code, a.Reason = store.CodeCrash, "panic"
	case x < 71:
		a.Code, a.Delay = store.CodeSnooze, r.backDelay(l.Local, 20000)
	case x < 79:
		a.Code = store.CodeFree
		if r.chance(1, 2) {
			a.Delay = r.delay(20000)
		}
	case x < 83:
		a.Code = store.CodeSkip
	case x < 86:
		a.Code = store.CodeRevoke
	case x < 90:
		a.Code = store.CodeDeadline // the job has no deadline field: archived as the worker says
	default:
		a.Code = store.CodeRelease
	}
	s.ack = a
	return s
}

// backDelay is a retry's or snooze's delay for job local: now and then
// the one that puts it back at the due time a run-now took it from (into
// the bucket of later jobs it left, where its entry may still be), else
// up to maxMS.
func (r *modelRun) backDelay(local string, maxMS int) time.Duration {
	if j := r.m.jobs[local]; j != nil && j.runNowFrom > r.now() && r.chance(3, 4) {
		return time.Duration(j.runNowFrom-r.now()) * time.Millisecond
	}
	return r.delay(maxMS)
}

func (s ackSpec) String() string {
	out := fmt.Sprintf("%s %s/%d %s", s.ack.Local, s.ack.LeaseID, s.ack.Fence, s.ack.Code)
	if s.ack.Delay > 0 {
		out += " +" + s.ack.Delay.String()
	}
	if len(s.deltas) > 0 {
		out += " fx" + fxString(s.deltas)
	}
	if s.invalid != "" {
		out += " invalid(" + s.invalid + ")"
	}
	return out
}

func (r *modelRun) opAck() {
	var specs []ackSpec
	invalidUsed := false
	for i, l := range r.runningLeases(3) {
		specs = append(specs, r.randomAck(l, i, &invalidUsed))
	}
	if l := r.staleLease(); l != nil && (len(specs) == 0 || r.chance(1, 4)) {
		s := r.randomAck(*l, len(specs), &invalidUsed)
		at := r.pick(len(specs) + 1)
		specs = slices.Insert(specs, at, s)
	}
	if len(specs) == 0 {
		r.logf("ack: no lease to ack")
		return
	}
	call := &ackCall{specs: specs, step: r.step}
	r.sendAck(call, "ack")
	r.lastAck = call
}

// staleAnswer is what an ack of lease l that does not hold the job
// answers: the job's state when the lease is still the job's last
// (an attempt that ended before: a late re-send), else stale.
func staleAnswer(m *model, l store.Lease) string {
	if j := m.jobs[l.Local]; j != nil && j.state != "running" && j.lease == l.LeaseID && j.fence == l.Fence {
		return j.state
	}
	return "stale"
}

// applyAck predicts one ack of a held lease on m; it returns the new state.
func (r *modelRun) applyAck(m *model, j *mjob, s ackSpec) string {
	code, delay := s.ack.Code, msOf(s.ack.Delay)
	if code == store.CodeDeadline {
		// the model's jobs have no deadline field: the ack's word stands
		// (ack.lua checks a deadline against store time only when there is one)
		r.finish(m, j, "archived")
		return "archived"
	}
	if code == store.CodeOK {
		if s.invalid == "" {
			for k, d := range s.deltas {
				m.fx[k] += d
			}
			r.finish(m, j, "completed")
			return "completed"
		}
		code = store.CodeRetry
	}
	switch code {
	case store.CodeRetry:
		j.attempt++
		if j.attempt >= j.maxAttempts {
			r.finish(m, j, "archived")
			return "archived"
		}
		j.state, j.score = "retryable", r.now()+delay
	case store.CodeFree:
		if delay == 0 {
			available(j)
		} else {
			j.state, j.score = "scheduled", r.now()+delay
		}
	case store.CodeSnooze:
		j.state, j.score = "scheduled", r.now()+delay
	case store.CodeSkip:
		r.finish(m, j, "archived")
		return "archived"
	case store.CodeRevoke:
		r.finish(m, j, "cancelled")
		return "cancelled"
	case store.CodeCrash:
		return r.crash(m, j)
	case store.CodeRelease:
		available(j)
	default:
		r.fail("applyAck: code %s", code)
	}
	return j.state
}

// ackKey names a batch of acks as the store's call ID does
// (contentID): a batch with the same key is the same call, answered
// from its record while the record lasts.
func ackKey(acks []store.Ack) string {
	var b strings.Builder
	for _, a := range acks {
		fmt.Fprintf(&b, "%s\x00%s\x00%d\x00%s\x00%s\x00", a.Local, a.LeaseID, a.Fence, a.Code, a.Message)
	}
	return b.String()
}

// sendAck sends a batch of acks, and sends it again while it fails, as
// runtime's flushAcks does.
func (r *modelRun) sendAck(call *ackCall, what string) {
	acks := make([]store.Ack, len(call.specs))
	var desc []string
	for i, s := range call.specs {
		acks[i] = s.ack
		desc = append(desc, s.String())
	}
	key := "ack\x00" + ackKey(acks)
	for try := 1; ; try++ {
		pre := r.m
		post := pre.clone()
		want, replay := pre.calls[key]
		if !replay {
			// The script reads every job before it acts on any: a lease that
			// does not hold its job is judged on the state before the call.
			for _, s := range call.specs {
				if !pre.current(s.ack.Lease, r.now()) {
					want = append(want, staleAnswer(pre, s.ack.Lease))
					continue
				}
				want = append(want, r.applyAck(post, post.jobs[s.ack.Local], s))
			}
			r.record(post, key, want)
		}
		res, _, err := r.st.Ack(r.ctx, r.p, acks)
		var got []string
		for _, a := range res {
			if errors.Is(a.Err, store.ErrStale) {
				got = append(got, "stale")
			} else if a.Err != nil {
				got = append(got, "error: "+a.Err.Error())
			} else {
				got = append(got, a.State)
			}
		}
		rp := ""
		if replay {
			rp = " (a replay)"
		}
		r.logf("%s of step %d%s [%s] -> %v %v (want %v)", what, call.step, rp, strings.Join(desc, "; "), got, err, want)
		if err != nil {
			r.settle(pre, post, err, what)
			if try == 5 {
				r.fail("%s failed 5 times", what)
			}
			what = "ack sent again after an error"
			continue
		}
		if !slices.Equal(got, want) {
			r.fail("%s answered %v, want %v", what, got, want)
		}
		r.m = post
		return
	}
}

// record notes in m that a call with key ran and answered answers: the
// script keeps its reply (lua/lib_replay.lua), and the same call sent
// again is answered from it.
func (r *modelRun) record(m *model, key string, answers []string) {
	if len(m.calls) == 0 {
		m.callsSince = time.Now()
	}
	m.calls[key] = answers
}

// ---- checkpoints ----

type ckptSpec struct {
	c       store.Checkpoint
	deltas  map[string]int64
	invalid string // "go" or "script"
}

type ckptCall struct {
	specs []ckptSpec
	step  int
}

func (s ckptSpec) String() string {
	out := fmt.Sprintf("%s %s/%d %s=%s", s.c.Local, s.c.LeaseID, s.c.Fence, s.c.Field, s.c.Record)
	if len(s.deltas) > 0 {
		out += " fx" + fxString(s.deltas)
	}
	if s.invalid != "" {
		out += " invalid(" + s.invalid + ")"
	}
	return out
}

// randomCheckpoint draws a checkpoint of lease l: a step's, or with cursor
// set, perhaps a cursor's advance.
func (r *modelRun) randomCheckpoint(l store.Lease, cursor bool) ckptSpec {
	s := ckptSpec{deltas: map[string]int64{}}
	c := store.Checkpoint{Lease: l, Mode: store.ModeOnce}
	if j := r.m.jobs[l.Local]; j != nil && len(j.steps) > 0 && r.chance(1, 2) {
		// as a worker that knows the job marked as having checkpoints
		// sends a step (attempt.State): the script reads no mark
		c.Mode = store.ModeOnceMarked
	}
	if r.chance(1, 5) && cursor {
		// a cursor: each advance replaces the record, and commits anew
		r.nextSeq++ // every advance its own sequence number, as step.Cursor's
		seq := strconv.Itoa(r.nextSeq)
		c.Field, c.Mode, c.Record = "cursor:c", store.ModeCursor, []byte(seq)
		c.Commit = r.commitName(l.Local, "c:@"+seq) // as step.Cursor names it
	} else {
		name := fmt.Sprintf("s%d", 1+r.pick(3))
		c.Field, c.Record, c.Commit = name, []byte("r-"+name), r.commitName(l.Local, name) // as step.Run names it
		if r.chance(1, 6) {
			c.Record = []byte("other-" + name) // ErrStepDone, if the step is there
		}
	}
	c.Effects = r.effects(s.deltas, true)
	if r.chance(1, 10) {
		var e sluicetype.Effect
		e, s.invalid = r.invalidEffect()
		c.Effects = append(c.Effects, e)
	}
	s.c = c
	return s
}

func (r *modelRun) opCheckpoint() {
	var specs []ckptSpec
	ls := r.runningLeases(2)
	if len(ls) > 0 && r.chance(1, 5) {
		ls = append(ls, ls[0]) // another checkpoint of the same attempt
	}
	// A call holds at most one advance of an attempt's cursor, as the
	// runtime sends them (step.Cursor's each waits for its commit). Two in
	// one call, sent again once its call record expired, would find the
	// cursor at the second and apply the first anew: step.lua tells an
	// advance sent again only by the record being the cursor's last.
	advanced := map[string]bool{}
	for _, l := range ls {
		s := r.randomCheckpoint(l, !advanced[l.LeaseID])
		if s.c.Mode == store.ModeCursor {
			advanced[l.LeaseID] = true
		}
		specs = append(specs, s)
	}
	if l := r.staleLease(); l != nil && (len(specs) == 0 || r.chance(1, 6)) {
		specs = append(specs, r.randomCheckpoint(*l, !advanced[l.LeaseID]))
	}
	if len(specs) == 0 {
		r.logf("checkpoint: no lease")
		return
	}
	call := &ckptCall{specs: specs, step: r.step}
	r.sendCheckpoints(call, "checkpoint")
	r.lastCkpt = call
}

// applyCheckpoint predicts one checkpoint on m (in call order, as step.lua
// takes them).
func (r *modelRun) applyCheckpoint(m *model, s ckptSpec) string {
	if s.invalid == "go" {
		return "invalid" // refused before the call
	}
	if !m.current(s.c.Lease, r.now()) {
		return "stale"
	}
	j := m.jobs[s.c.Local]
	prev, ok := j.steps[s.c.Field]
	if ok && prev == string(s.c.Record) {
		// Its own commit, sent again: a step's record is written once; a
		// cursor's names its advance (its sequence number), which the
		// attempt commits once too.
		return "ok"
	}
	if ok && s.c.Mode != store.ModeCursor {
		return "exists"
	}
	if s.invalid == "script" {
		return "effect"
	}
	for k, d := range s.deltas {
		m.fx[k] += d
	}
	j.steps[s.c.Field] = string(s.c.Record)
	return "ok"
}

func checkpointResult(err error) string {
	var ee *sluicetype.EffectError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrStale):
		return "stale"
	case errors.Is(err, store.ErrStepDone):
		return "exists"
	case errors.As(err, &ee):
		return "effect"
	case errors.Is(err, store.ErrInvalidEffect):
		return "invalid"
	}
	return ""
}

// sendCheckpoints sends a batch of checkpoints, and sends it again while
// it fails.
func (r *modelRun) sendCheckpoints(call *ckptCall, what string) {
	cs := make([]store.Checkpoint, len(call.specs))
	var desc []string
	var b strings.Builder // the call's key, as contentID names it: the checkpoints sent
	b.WriteString("step\x00")
	for i, s := range call.specs {
		cs[i] = s.c
		desc = append(desc, s.String())
		if s.invalid != "go" {
			fmt.Fprintf(&b, "%s\x00%s\x00%d\x00%s\x00%s\x00%s\x00%s\x00", s.c.Local, s.c.LeaseID, s.c.Fence, s.c.Field, s.c.Mode, s.c.Commit, s.c.Record)
			fmt.Fprintf(&b, "%d\x00", len(s.c.Effects)) // and its effects
			for _, e := range s.c.Effects {
				fmt.Fprintf(&b, "%s\x00%s\x00%q\x00%s\x00", e.Op, e.Key, e.Args, e.Job)
			}
		}
	}
	key := b.String()
	for try := 1; ; try++ {
		pre := r.m
		post := pre.clone()
		var want []string
		rec, replay := pre.calls[key]
		if replay {
			for _, s := range call.specs {
				if s.invalid == "go" {
					want = append(want, "invalid")
				} else {
					want, rec = append(want, rec[0]), rec[1:]
				}
			}
		} else {
			var sent []string
			for _, s := range call.specs {
				w := r.applyCheckpoint(post, s)
				want = append(want, w)
				if s.invalid != "go" {
					sent = append(sent, w)
				}
			}
			if len(sent) > 0 {
				r.record(post, key, sent)
			}
		}
		res, _ := r.st.Checkpoints(r.ctx, r.p, cs)
		var got []string
		var callErr error
		for _, x := range res {
			g := checkpointResult(x.Err)
			if g == "" {
				callErr = x.Err
				g = "error: " + x.Err.Error()
			}
			got = append(got, g)
		}
		rp := ""
		if replay {
			rp = " (a replay)"
		}
		r.logf("%s of step %d%s [%s] -> %v (want %v)", what, call.step, rp, strings.Join(desc, "; "), got, want)
		if callErr != nil {
			r.settle(pre, post, callErr, what)
			if try == 5 {
				r.fail("%s failed 5 times", what)
			}
			what = "checkpoint sent again after an error"
			continue
		}
		if !slices.Equal(got, want) {
			r.fail("%s answered %v, want %v", what, got, want)
		}
		r.m = post
		return
	}
}

// ---- re-sends ----

// opResend sends the last ack or checkpoint batch again with the same
// inputs, as Sluice's own retry does; now and then late, after its call
// record expired (deleted here, as CallKeep passing would).
func (r *modelRun) opResend() {
	if c := r.lastClaim; c != nil && time.Since(c.sent) < store.CallKeep/2 && r.chance(1, 3) {
		r.resendClaim(c)
		return
	}
	ack := r.lastAck != nil && (r.lastCkpt == nil || r.chance(1, 2))
	if !ack && r.lastCkpt == nil {
		r.logf("resend: nothing sent yet")
		return
	}
	what := "re-sent "
	if r.chance(1, 4) {
		r.counts["resend-late"]++
		r.forgetCalls()
		what = "late re-sent "
	}
	if ack {
		r.sendAck(r.lastAck, what+"ack")
	} else {
		r.sendCheckpoints(r.lastCkpt, what+"checkpoint")
	}
}

// claimCall is a claim that leased jobs, kept to be sent again: its
// request (named by its ID), the leases it answered, in order, and when
// it was sent by the wall clock (its record outlives it by CallKeep).
type claimCall struct {
	req    store.ClaimRequest
	leased []store.Lease
	sent   time.Time
}

// resendClaim sends claim c again, as a worker does after an error that
// may have lost its reply, maybe much later by the store's clock (ticks
// come between): it is answered from its record, changing nothing, the
// leases it made that still hold their jobs by store time, in the order
// it made them. One that has run out is the reaper's, reaped or not.
func (r *modelRun) resendClaim(c *claimCall) {
	var want []string
	for _, l := range c.leased {
		if r.m.current(l, r.now()) {
			want = append(want, l.Local+"="+l.LeaseID)
		}
	}
	res, err := r.st.Claim(r.ctx, r.p, c.req)
	var got []string
	for _, cj := range res.Jobs {
		got = append(got, cj.Local+"="+cj.LeaseID)
	}
	r.logf("re-sent claim (nonce %s, %d leases) -> %v %v (want %v)", c.req.Nonce, len(c.leased), got, err, want)
	if err != nil { // a replay writes nothing: the model stands either way
		return
	}
	if !slices.Equal(got, want) {
		r.fail("re-sent claim answered %v, want the leases still held: %v", got, want)
	}
}

// forgetCalls deletes the partition's call records, as their expiry
// (CallKeep) would: a call sent again runs again.
func (r *modelRun) forgetCalls() {
	iter := r.direct.Scan(r.ctx, 0, r.p.Call("*"), 1000).Iterator()
	var recs []string
	for iter.Next(r.ctx) {
		recs = append(recs, iter.Val())
	}
	if err := iter.Err(); err != nil {
		r.fail("SCAN call records: %v", err)
	}
	if len(recs) > 0 {
		if err := r.direct.Del(r.ctx, recs...).Err(); err != nil {
			r.fail("DEL call records: %v", err)
		}
	}
	r.m.calls = map[string][]string{}
	r.lastClaim = nil // sent again, it would claim anew
	r.logf("call records deleted (%d)", len(recs))
}

// ---- renew ----

func (r *modelRun) opRenew() {
	ls := r.runningLeases(3)
	if l := r.staleLease(); l != nil && (len(ls) == 0 || r.chance(1, 3)) {
		ls = append(ls, *l)
	}
	if len(ls) == 0 {
		r.logf("renew: no lease")
		return
	}
	d := time.Duration(10+r.pick(50)) * time.Second
	pre := r.m
	post := pre.clone()
	var rs []store.Renewal
	var want []store.Lost
	var wantLate, seqs []string
	for _, l := range ls {
		seq := r.renewalNumber(l.LeaseID)
		seqs = append(seqs, fmt.Sprint(seq))
		rs = append(rs, store.Renewal{Lease: l, Duration: d, Seq: seq})
		// a lease whose expiry has passed is lost, reaped or not
		if pre.current(l, r.now()) {
			j := post.jobs[l.Local]
			last := int64(0)
			if j.renewedLease == l.LeaseID {
				last = j.renewed
			}
			switch {
			case seq > last:
				j.score, j.renewed, j.renewedLease = r.now()+msOf(d), seq, l.LeaseID
			case seq < last: // it reached Redis after a later one: moves nothing
				wantLate = append(wantLate, l.LeaseID)
			} // as the last applied: its re-send, held, moving nothing
			continue
		}
		state := ""
		if j := pre.jobs[l.Local]; j != nil {
			state = j.state
		}
		want = append(want, store.Lost{LeaseID: l.LeaseID, State: state})
	}
	lost, late, err := r.st.Renew(r.ctx, r.p, rs)
	r.logf("renew %v numbered %v by %s -> lost %v late %v %v", ls, seqs, d, lost, late, err)
	if err == nil && (!slices.Equal(lost, want) || !slices.Equal(late, wantLate)) {
		r.fail("renew: lost %v late %v, want lost %v late %v", lost, late, want, wantLate)
	}
	r.settle(pre, post, err, "renew")
}

// renewalNumber numbers a renewal of lease as a worker would (the next
// number), or, one time in four, as one that reaches Redis out of order:
// a number already sent, which is a re-send of the last or a late older
// one (store.Renewal.Seq).
func (r *modelRun) renewalNumber(lease string) int64 {
	if r.renewals == nil {
		r.renewals = map[string]int64{}
	}
	sent := r.renewals[lease]
	if sent > 0 && r.chance(1, 4) {
		return 1 + int64(r.pick(int(sent)))
	}
	r.renewals[lease] = sent + 1
	return sent + 1
}

// ---- maintenance ----

func (r *modelRun) opMaintain() {
	limits := []int{0, 1, 2, 100, 100, 100}
	r.maintain(limits[r.pick(len(limits))], limits[r.pick(len(limits))], limits[r.pick(len(limits))])
}

func (r *modelRun) maintain(reapL, promL, sweepL int) {
	pre := r.m
	post := pre.clone()
	reaped := r.reap(post, reapL)
	promoted := r.promote(post, promL)
	deleted := r.sweep(post, sweepL)
	res, err := r.st.Maintain(r.ctx, r.p, reapL, promL, sweepL)
	r.logf("maintain reap %d promote %d sweep %d -> %+v %v (want reaped %v promoted %d deleted %d)",
		reapL, promL, sweepL, res, err, reaped, promoted, deleted)
	if err == nil && (!slices.Equal(res.Reaped, reaped) || res.Promoted != promoted || res.Deleted != deleted) {
		r.fail("maintain: %+v, want reaped %v promoted %d deleted %d", res, reaped, promoted, deleted)
	}
	r.settle(pre, post, err, "maintain")
}

// ---- operator calls ----

// adminResult names an operator call's outcome.
func adminResult(prev string, err error) (string, bool) {
	var se *sluicetype.StateError
	switch {
	case err == nil:
		return "ok:" + prev, true
	case errors.Is(err, store.ErrNotFound):
		return "missing", true
	case errors.As(err, &se):
		return "refused:" + se.State, true
	}
	return "", false
}

func (r *modelRun) opCancel() {
	id := r.pickID("available", "scheduled", "retryable", "running")
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		if terminalStates[j.state] {
			want = "refused:" + j.state
		} else {
			want = "ok:" + j.state
			if j.state == "running" {
				j.fence++
			}
			r.finish(post, j, "cancelled")
		}
	}
	prev, err := r.st.Cancel(r.ctx, keys.Ref{Partition: r.p, Local: id}, modelRetainCancelled)
	got, known := adminResult(prev, err)
	r.logf("cancel %s -> %s %v (want %s)", id, got, err, want)
	if known && got != want {
		r.fail("cancel %s: %s, want %s", id, got, want)
	}
	if known {
		err = nil
	}
	r.settle(pre, post, err, "cancel")
}

// opRunNow makes a scheduled or retryable job available before its due
// time: out of the sched zset or out of a bucket of later jobs, whose
// entry stays (the job may come back to it, snoozed or retried).
func (r *modelRun) opRunNow() {
	id := r.pickID("scheduled", "retryable", "available", "running")
	// mostly one due past the horizon: in a bucket of later jobs, or
	// moved out of one by a clock since gone back
	var later []string
	for _, j := range r.m.inState("scheduled", "retryable") {
		if j.score > r.now()+store.LaterBucketMS {
			later = append(later, j.id)
		}
	}
	if len(later) > 0 && r.chance(2, 3) {
		id = later[r.pick(len(later))]
	}
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		if j.state == "scheduled" || j.state == "retryable" {
			want = "ok:" + j.state
			j.runNowFrom = j.score
			available(j)
		} else {
			want = "refused:" + j.state
		}
	}
	prev, err := r.st.RunNow(r.ctx, keys.Ref{Partition: r.p, Local: id})
	got, known := adminResult(prev, err)
	r.logf("run now %s -> %s %v (want %s)", id, got, err, want)
	if known && got != want {
		r.fail("run now %s: %s, want %s", id, got, want)
	}
	if known {
		err = nil
	}
	r.settle(pre, post, err, "run now")
}

func (r *modelRun) opDelete() {
	id := r.pickID("completed", "archived", "cancelled", "available", "scheduled", "running")
	pre := r.m
	post := pre.clone()
	want := "missing"
	if j := post.jobs[id]; j != nil {
		if j.state == "running" {
			want = "refused:running"
		} else {
			want = "ok:" + j.state
			r.remove(post, id)
		}
	}
	prev, err := r.st.Delete(r.ctx, keys.Ref{Partition: r.p, Local: id})
	got, known := adminResult(prev, err)
	r.logf("delete %s -> %s %v (want %s)", id, got, err, want)
	if known && got != want {
		r.fail("delete %s: %s, want %s", id, got, want)
	}
	if known {
		err = nil
	}
	r.settle(pre, post, err, "delete")
}

func (r *modelRun) opRedrive() {
	action, takes := store.ActionRedrive, []string{"archived", "cancelled"}
	if r.chance(1, 4) {
		action, takes = store.ActionRelease, []string{"quarantined"}
	}
	var ids []string
	for range 1 + r.pick(3) {
		ids = append(ids, r.pickID(takes...))
	}
	pre := r.m
	post := pre.clone()
	var want []string
	for _, id := range ids {
		j := post.jobs[id]
		switch {
		case j == nil:
			want = append(want, "missing")
		case slices.Contains(takes, j.state):
			if action == store.ActionRelease {
				j.crash = 0
			}
			available(j)
			want = append(want, "ok:")
		default:
			want = append(want, "refused:"+j.state)
		}
	}
	errs, err := r.st.RedriveIDs(r.ctx, r.p, action, ids)
	var got []string
	for _, e := range errs {
		g, known := adminResult("", e)
		if !known {
			r.fail("%s %v: %v", action, ids, e)
		}
		got = append(got, g)
	}
	r.logf("%s %v -> %v %v (want %v)", action, ids, got, err, want)
	if err == nil && !slices.Equal(got, want) {
		r.fail("%s %v: %v, want %v", action, ids, got, want)
	}
	r.settle(pre, post, err, string(action))
}

// ---- relay ----

func (r *modelRun) opRelay(limit int) {
	before, err := r.direct.XLen(r.ctx, r.p.Outbox()).Result()
	if err != nil {
		r.fail("XLEN: %v", err)
	}
	res, err := r.st.RelayOutbox(r.ctx, r.p, "", limit)
	r.logf("relay %d of %d outbox entries -> %+v %v", limit, before, res, err)
	if err == nil && int64(res.Handled) != min(int64(limit), before) {
		r.fail("relay of %d handled %d entries, want %d of %d", limit, res.Handled, min(int64(limit), before), before)
	}
	if len(res.Dead) > 0 {
		r.fail("relay dead-lettered %+v: every effect the model commits can apply", res.Dead)
	}
	if err != nil {
		r.counts["relay-error"]++
	}
}

// ---- time ----

// opTick moves the store clock on: mostly a little, now and then past
// leases (reap), retry delays (promote) and retention (sweep). Now and
// then it moves it back, by up to a bucket of later jobs and a half: a
// failover to a server whose clock is behind, or a worker's injected
// clock, makes the next call see an earlier time than the last one. It
// never runs modelMaxSkew ahead of real time.
func (r *modelRun) opTick() {
	var d time.Duration
	switch x := r.pick(100); {
	case x < 3:
		d = -time.Millisecond - r.delay(7500)
	case x < 6:
		// undo the last tick on, up to 10 s: the buckets a claim moved
		// into sched since are ahead of the horizon again
		d = -min(r.lastTick, 10*time.Second)
	case x < 50:
		d = r.delay(2000)
	case x < 85:
		d = 2*time.Second + r.delay(43000)
	case x < 96:
		d = 45*time.Second + r.delay(10*60*1000)
	default:
		d = time.Hour + r.delay(6*3600*1000)
	}
	if time.Until(r.clk.Now().Add(d)) > modelMaxSkew {
		d = min(d, 45*time.Second)
	}
	r.clk.Advance(d)
	r.highWater = max(r.highWater, r.now())
	if d > 0 {
		r.lastTick = d
	}
	r.logf("tick %s", d)
	if r.proxy != nil {
		return
	}
	// miniredis runs Lua in gopher-lua, where the ack's cache of run
	// times (lib_batch.lua tally_run, RT_FIELD[ms]) grows a table's array part
	// to the run time in ms: acking a job that has run for an hour takes
	// seconds there (not in Redis). So on miniredis, jobs whose lease has
	// long expired are reaped before they can be acked.
	for _, j := range r.m.inState("running") {
		if r.now()-j.started > msOf(5*time.Minute) {
			r.maintain(100, 0, 0)
			return
		}
	}
}
