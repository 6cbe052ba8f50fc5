package store_test

// The operations of TestFamilyModel (familymodel_test.go): each draws its
// inputs, predicts what it can from the model, runs, compares, and
// updates the model; after a call whose outcome is unknown (the chaos
// proxy lost its reply twice), it sends the same call again (a re-send
// must answer its first reply) or adopts what Redis holds.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

func (r *famRun) pick(n int) int           { return r.rng.IntN(n) }
func (r *famRun) chance(num, den int) bool { return r.rng.IntN(den) < num }

// ref is job id's reference, in the partition the model (or its
// deletion) places it.
func (r *famRun) ref(id string) keys.Ref {
	if j := r.jobs[id]; j != nil {
		return keys.Ref{Partition: r.parts[j.part], Local: id}
	}
	return keys.Ref{Partition: r.parts[r.gone[id]], Local: id}
}

func (r *famRun) randomOp() {
	enq := 8
	if n := len(r.inState(true, false, "pending", "running")); n >= famMaxParents {
		enq = 0
	} else if n < 2 {
		enq = 30
	}
	runWeighted(r.rng, r.counts, []weightedOp{
		{"enqueue", enq, r.opEnqueue},
		{"claim", 20, r.opClaim},
		{"parent", 20, r.opParent},
		{"ack", 24, r.opAck},
		{"relay", 6, r.opRelay},
		{"stale-note", 2, r.opStaleNote},
		{"cancel", 3, r.opCancel},
		{"delete", 3, r.opDelete},
		{"redrive", 4, r.opRedrive},
		{"runnow", 2, r.opRunNow},
		{"tick", 7, r.opTick},
		{"maintain", 4, r.opMaintain},
	})
}

// retry runs call up to 4 times, as a caller sends it again after an error
// that may have lost the reply of a call Redis ran.
func (r *famRun) retry(what string, call func() error) error {
	var err error
	for try := range 4 {
		r.tries = try + 1
		if err = call(); err == nil {
			if try > 0 {
				r.counts["resent"]++
			}
			return nil
		}
		r.logf("%s try %d: %v", what, try+1, err)
	}
	r.counts["unknown-outcome"]++
	return err
}

// ---- the model's transitions ----

// ended moves job j to state (coarse); a child that finishes, or is
// deleted unfinished (told 'cancelled'), tells its parent.
func (r *famRun) ended(j *famJob, state string, deleted bool) {
	was := j.state
	if !deleted {
		j.state, j.lease = state, ""
	}
	if j.isParent() {
		if state != "pending" || deleted {
			j.wait = nil
		}
		j.woken = false
		if deleted {
			delete(r.jobs, j.id)
			r.gone[j.id] = j.part
			r.goneCreated[j.id] = j.created
		}
		return
	}
	told := ""
	switch {
	case deleted && !terminalStates[was]:
		told = "cancelled"
	case !deleted && terminalStates[state] && !terminalStates[was]:
		told = state
	}
	if deleted {
		delete(r.jobs, j.id)
		r.gone[j.id] = j.part
	}
	if told == "" {
		return
	}
	if j.part == 0 {
		r.deliver(j.parent, j.step, j.id, told)
	} else {
		r.notes = append(r.notes, famNote{parent: j.parent, step: j.step, child: j.id, state: told})
	}
}

// deliver is lib_lifecycle.lua's deliver as the product promises it: the
// parent records the child's latest end; the first end of a child its
// wait names counts for it, and the wait is over when none is left, or
// under 'f' at a failure.
//
// A parent enqueued again under the ID of one deleted is not told of the
// children of the one before: their IDs name that one's creation time.
func (r *famRun) deliver(parent, step, child, state string) {
	p := r.jobs[parent]
	if p == nil {
		return
	}
	if own := strings.TrimSuffix(keys.ChildLocal(parent, time.UnixMilli(p.created), step, 0), "0"); !strings.HasPrefix(child, own) {
		r.logf("  parent %s (created %d) not told of %s, a child of the one before", parent, p.created, child)
		r.counts["predecessor-child-ignored"]++
		return
	}
	_, had := p.kids[child]
	p.kids[child], p.kidStep[child] = state, step
	if had || p.wait == nil || !slices.Contains(p.wait.members, child) {
		return
	}
	p.wait.left--
	if p.wait.left <= 0 || (state != "completed" && p.wait.policy == "f") {
		r.logf("  parent %s woken by %s (%s)", parent, child, state)
		r.counts["woken-"+p.wait.policy]++
		if r.jobs[child] != nil && r.jobs[child].part == 1 || r.gone[child] == 1 {
			r.counts["woken-by-relay"]++
		}
		p.wait, p.woken = nil, true
	}
}

// withdraw is lib_lifecycle.lua's withdraw as the product promises it:
// the parent forgets the child's end, which counts again when the child
// ends anew; a wait that counted it (it names the child, told since the
// wait began) waits for it again. A wait that does not name it is not
// changed: its join reads the child unfinished once woken.
func (r *famRun) withdraw(parent, step, child string) {
	p := r.jobs[parent]
	if p == nil {
		return
	}
	if own := strings.TrimSuffix(keys.ChildLocal(parent, time.UnixMilli(p.created), step, 0), "0"); !strings.HasPrefix(child, own) {
		return // a child of the one before (deliver)
	}
	if _, had := p.kids[child]; !had {
		return
	}
	delete(p.kids, child)
	r.counts["withdrawn"]++
	if p.wait != nil && slices.Contains(p.wait.members, child) {
		p.wait.left++
		r.counts["withdrawn-rewait"]++
	}
}

// ---- enqueue and claim ----

func (r *famRun) opEnqueue() {
	id := fmt.Sprintf("P%03d", r.nextID)
	var reuse []string
	for g := range r.gone {
		if c, ok := r.goneCreated[g]; ok && c != r.now() {
			reuse = append(reuse, g)
		}
	}
	if slices.Sort(reuse); len(reuse) > 0 && r.chance(1, 3) {
		// the ID of a parent deleted, whose children may live on
		id = reuse[r.pick(len(reuse))]
		delete(r.gone, id)
		delete(r.goneCreated, id)
		r.counts["parent-id-reused"]++
	} else {
		r.nextID++
	}
	nj := store.NewJob{Local: id, Kind: "parent", Payload: []byte("p"), MaxAttempts: 2 + r.pick(3)}
	var res []store.EnqueueResult
	err := r.retry("enqueue "+id, func() (err error) {
		res, err = r.st.Enqueue(r.ctx, r.parts[0], []store.NewJob{nj})
		return err
	})
	r.logf("enqueue parent %s -> %+v %v", id, res, err)
	j := &famJob{id: id, state: "pending", steps: map[string][]string{}, kids: map[string]string{}, kidStep: map[string]string{},
		created: r.now()}
	if err != nil {
		if !r.read(false).exists(r, id, 0) {
			return
		}
	} else if res[0].Status != store.Added && !(res[0].Status == store.Duplicate && r.tries > 1) {
		// sent again after an error: the first may have added it
		r.fail("enqueue of new parent %s: %+v", id, res[0])
	}
	r.jobs[id] = j
}

func (s *famSnap) exists(r *famRun, id string, part int) bool {
	ok, _ := r.direct.Exists(r.ctx, r.parts[part].Job(id)).Result()
	return ok > 0
}

func (r *famRun) opClaim() {
	part := r.pick(2)
	r.nonce++
	nonce := fmt.Sprintf("n%d", r.nonce)
	req := store.ClaimRequest{N: 1 + r.pick(4), Lease: famLease, Worker: "w", Nonce: nonce, ID: nonce, PromoteLimit: 100}
	var res store.ClaimResult
	err := r.retry("claim", func() (err error) {
		res, err = r.st.Claim(r.ctx, r.parts[part], req)
		return err
	})
	if err != nil {
		s := r.read(false)
		for _, j := range r.inState(true, true, "pending") {
			if g := s.jobs[j.id]; j.part == part && g.state == "running" && store.LeaseNonce(g.lease) == nonce {
				r.leased(j, g.lease, g.fence)
			}
		}
		return
	}
	var got []string
	for _, cj := range res.Jobs {
		j := r.jobs[cj.Local]
		if j == nil || j.state != "pending" || j.part != part {
			r.fail("claim in q:%d leased %s, which the model has as %+v", part, cj.Local, j)
		}
		if j.wait != nil {
			r.fail("claim leased parent %s, which waits for %v (%d left, told %v)", j.id, j.wait.members, j.wait.left, j.kids)
		}
		r.leased(j, cj.LeaseID, cj.Fence)
		got = append(got, cj.Local)
	}
	r.logf("claim q:%d (nonce %s) -> %v", part, nonce, got)
}

func (r *famRun) leased(j *famJob, lease string, fence int64) {
	j.state, j.lease, j.fence, j.started, j.woken = "running", lease, fence, r.now(), false
}

// ---- a parent's attempt: spawn, join, or end ----

func (r *famRun) opParent() {
	running := r.inState(true, false, "running")
	if len(running) == 0 {
		r.logf("parent: none running")
		return
	}
	p := running[r.pick(len(running))]
	switch x := r.pick(100); {
	case len(p.stepList) == 0 || (x < 25 && len(p.stepList) < 4):
		r.spawn(p)
	case x < 35:
		r.respawn(p)
	case x < 92:
		r.join(p)
	default:
		r.ackOne(p, r.randomCode(true))
	}
}

// childIDs names the children of a spawn, and their partitions: drawn
// once per step and kept, as a step's items are the same when it runs
// again.
func (r *famRun) spawn(p *famJob) {
	step := fmt.Sprintf("s%d", len(p.stepList))
	n := 1 + r.pick(5)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = keys.ChildLocal(p.id, time.UnixMilli(p.created), step, i)
		part := r.pick(2)
		r.spawned[ids[i]] = part
	}
	p.steps[step], p.stepList = ids, append(p.stepList, step)
	for _, c := range ids {
		p.kidStep[c] = step
	}
	r.addChildren(p, step, true)
}

// respawn runs a step of the parent again, as an attempt after a crash
// short of its checkpoint does: nothing is added.
func (r *famRun) respawn(p *famJob) {
	step := p.stepList[r.pick(len(p.stepList))]
	r.addChildren(p, step, false)
	r.counts["respawn"]++
}

func (r *famRun) addChildren(p *famJob, step string, first bool) {
	ids := p.steps[step]
	link := &store.ParentRef{Ref: keys.Ref{Partition: r.parts[0], Local: p.id}, Step: step}
	byPart := [2][]store.NewJob{}
	for _, c := range ids {
		nj := store.NewJob{Local: c, Relayed: true, Kind: "child", Payload: []byte("c"), MaxAttempts: 1 + r.pick(3), Parent: link}
		byPart[r.spawned[c]] = append(byPart[r.spawned[c]], nj)
	}
	for part, jobs := range byPart {
		if len(jobs) == 0 {
			continue
		}
		sends := 1
		if r.chance(1, 4) {
			sends = 2 // the same call sent again (a re-sent commit)
		}
		for range sends {
			var res []store.EnqueueResult
			err := r.retry("spawn", func() (err error) {
				res, err = r.st.Enqueue(r.ctx, r.parts[part], jobs)
				return err
			})
			r.logf("spawn %s %s in q:%d (first %v) -> %v %v", p.id, step, part, first, res, err)
			for i, nj := range jobs {
				_, wasGone := r.gone[nj.Local]
				known := r.jobs[nj.Local] != nil || wasGone
				if err == nil && res[i].Status == store.Added && known {
					r.fail("spawn %s of %s added child %s a second time", step, p.id, nj.Local)
				}
				if err == nil && res[i].Status != store.Added && !known && !(res[i].Status == store.Duplicate && r.tries > 1) {
					r.fail("spawn %s of %s: new child %s %+v", step, p.id, nj.Local, res[i])
				}
				if !known {
					if err != nil && !r.read(false).exists(r, nj.Local, part) {
						continue
					}
					r.jobs[nj.Local] = &famJob{id: nj.Local, part: part, state: "pending", parent: p.id, step: step}
				}
			}
		}
	}
	if first && r.chance(1, 3) {
		// no checkpoint: a Spawn that failed after adding some children,
		// and a handler that went on (or an attempt that crashed before
		// its checkpoint). The parent may end with no checkpoint at all,
		// and holds its children's records all the same.
		r.logf("spawn %s %s: not checkpointed", p.id, step)
		r.counts["spawn-unrecorded"]++
		return
	}
	// the step's checkpoint, as step.Run writes it
	c := store.Checkpoint{Lease: store.Lease{Local: p.id, LeaseID: p.lease, Fence: p.fence}, Field: step,
		Record: []byte(strings.Join(ids, ",")), Mode: "once"}
	var res []store.CheckpointResult
	err := r.retry("checkpoint", func() (err error) {
		res, err = r.st.Checkpoints(r.ctx, r.parts[0], []store.Checkpoint{c})
		return err
	})
	expired := p.started+famLease.Milliseconds() <= r.now()
	if err == nil && res[0].Err != nil && !(expired && errors.Is(res[0].Err, store.ErrStale)) {
		r.fail("checkpoint of %s's step %s: %v", p.id, step, res[0].Err)
	}
}

// join joins the children of one of the parent's steps (now and then of
// two), as flow.Join does.
func (r *famRun) join(p *famJob) {
	step := p.stepList[len(p.stepList)-1]
	if r.chance(1, 3) {
		step = p.stepList[r.pick(len(p.stepList))]
	}
	members := slices.Clone(p.steps[step])
	if len(p.stepList) > 1 && r.chance(1, 4) {
		other := p.stepList[r.pick(len(p.stepList))]
		if other != step {
			members = append(members, p.steps[other]...)
		}
	}
	policy := "a"
	if r.chance(1, 2) {
		policy = "f"
	}
	var kids []store.Kid
	err := r.retry("kids", func() (err error) {
		kids, err = r.st.Kids(r.ctx, keys.Ref{Partition: r.parts[0], Local: p.id}, members)
		return err
	})
	if err != nil {
		r.fail("reading %s's children: %v", p.id, err)
	}
	var pending []string
	failed := false
	for i, k := range kids {
		st, told := p.kids[members[i]]
		if k.Done != told || (told && k.State != st) {
			r.fail("Kids of %s: child %s done %v %s, the model told %v %s", p.id, members[i], k.Done, k.State, told, st)
		}
		if !k.Done {
			pending = append(pending, members[i])
		} else if k.State != "completed" {
			failed = true
		}
	}
	r.logf("join %s %s %v (%s): pending %v failed %v", p.id, step, members, policy, pending, failed)
	if failed && policy == "f" {
		r.ackOne(p, store.CodeRetry) // ChildFailedError
		return
	}
	if len(pending) == 0 {
		r.ackOne(p, store.CodeOK)
		return
	}
	r.nonce++
	a := store.Ack{Lease: store.Lease{Local: p.id, LeaseID: p.lease, Fence: p.fence}, Code: store.CodeWait,
		Message: step, Data: store.WaitSpec(pending), Reason: policy, Delay: famRecheck}
	if x, ok := r.sendAck(r.st, p, a); ok {
		if x != "scheduled" {
			r.fail("wait of %s for %v: %s, want scheduled", p.id, pending, x)
		}
		p.state, p.lease = "pending", ""
		p.wait = &famWait{step: step, members: pending, left: len(pending), policy: policy}
		r.counts["wait"]++
	}
}

// ---- acks ----

func (r *famRun) randomCode(parent bool) store.Code {
	switch x := r.pick(100); {
	case x < 40:
		return store.CodeOK
	case x < 55:
		return store.CodeRetry
	case x < 72:
		return store.CodeCrash
	case x < 84:
		return store.CodeSkip
	case x < 92 && !parent:
		return store.CodeRevoke
	default:
		return store.CodeSnooze
	}
}

var famAckAllows = map[store.Code][]string{
	store.CodeOK:     {"completed"},
	store.CodeRetry:  {"retryable", "archived"},
	store.CodeCrash:  {"retryable", "quarantined"},
	store.CodeSkip:   {"archived"},
	store.CodeRevoke: {"cancelled"},
	store.CodeSnooze: {"scheduled"},
}

func (r *famRun) opAck() {
	running := r.inState(false, true, "running")
	if len(running) == 0 {
		r.logf("ack: no child running")
		return
	}
	j := running[r.pick(len(running))]
	r.ackOne(j, r.randomCode(false))
}

func (r *famRun) ackOne(j *famJob, code store.Code) {
	r.nonce++
	a := store.Ack{Lease: store.Lease{Local: j.id, LeaseID: j.lease, Fence: j.fence}, Code: code, Message: fmt.Sprintf("m%d", r.nonce)}
	switch code {
	case store.CodeRetry:
		a.Reason, a.Delay = "error", time.Duration(r.pick(20000))*time.Millisecond
	case store.CodeCrash:
		a.Reason = "panic"
	case store.CodeSnooze:
		a.Delay = time.Duration(r.pick(20000)) * time.Millisecond
	}
	st := r.st
	if j.isParent() && code == store.CodeOK && r.chance(1, 2) {
		st = r.discard // a completed parent deleted at once, with every record it holds
	}
	if x, ok := r.sendAck(st, j, a); ok {
		if !slices.Contains(famAckAllows[code], x) {
			r.fail("ack %s %s: %s, want one of %v", j.id, code, x, famAckAllows[code])
		}
		if st == r.discard && x == "completed" {
			r.counts["parent-discarded"]++
		}
		r.ended(j, coarse(x), st == r.discard && x == "completed")
	}
}

// sendAck sends a through st (sent again after an error); it reports the state the
// ack answered, and false when it applied nothing the model must follow
// (stale, or an unknown outcome adopted from Redis).
func (r *famRun) sendAck(st *store.Store, j *famJob, a store.Ack) (string, bool) {
	var res []store.AckResult
	err := r.retry("ack", func() (err error) {
		res, _, err = st.Ack(r.ctx, r.parts[j.part], []store.Ack{a})
		return err
	})
	if err != nil {
		if st == r.discard && !r.read(false).jobs[j.id].exists {
			return "completed", true // applied, its reply lost every time: the parent is deleted
		}
		r.resync(j)
		return "", false
	}
	x := res[0]
	r.logf("ack %s %s %s %s -> %s %v", j.id, a.LeaseID, a.Code, a.Reason, x.State, x.Err)
	stale := errors.Is(x.Err, store.ErrStale)
	expired := j.started+famLease.Milliseconds() <= r.now()
	switch {
	case x.Err != nil && !stale:
		r.fail("ack %s: %v", j.id, x.Err)
	case stale != expired:
		r.fail("ack %s of lease %s started %dms ago: stale %v, want %v", j.id, j.lease, r.now()-j.started, stale, expired)
	case stale:
		r.counts["ack-stale"]++
		return "", false
	}
	return x.State, true
}

// resync adopts what Redis holds for j after a call whose outcome is
// unknown.
func (r *famRun) resync(j *famJob) {
	g := r.read(false).jobs[j.id]
	if !g.exists {
		r.fail("job %s (%s) is lost after a failed call", j.id, j.state)
	}
	c := coarse(g.state)
	r.logf("resync %s: %s -> %s (%s)", j.id, j.state, c, g.state)
	if c == "running" {
		j.state, j.lease, j.fence = c, g.lease, g.fence
		return
	}
	if j.isParent() && j.state == "running" && g.ws != "" {
		// a join's wait applied: the model cannot tell its members here
		r.fail("resync of %s: a wait of unknown outcome (state %s)", j.id, g.state)
	}
	if c != j.state {
		r.ended(j, c, false)
	}
}

// ---- relay ----

func (r *famRun) opRelay() {
	if msgs, err := r.direct.XRange(r.ctx, r.parts[1].Outbox(), "-", "+").Result(); err == nil {
		for _, m := range msgs {
			if _, ok := m.Values["o"]; !ok {
				r.relayedEntries = append(r.relayedEntries, m)
			}
		}
	}
	var res store.RelayResult
	err := r.retry("relay", func() (err error) {
		res, err = r.st.RelayOutbox(r.ctx, r.parts[1], "", 1000)
		return err
	})
	r.logf("relay q:1 (%d notes) -> %+v %v", len(r.notes), res, err)
	if err != nil {
		return // the entries stay: the next relay delivers them
	}
	notes := r.notes
	r.notes = nil
	for _, n := range notes {
		if n.stale {
			r.counts["relayed-stale"]++
			continue
		}
		if n.withdraw {
			r.withdraw(n.parent, n.step, n.child)
			continue
		}
		r.deliver(n.parent, n.step, n.child, n.state)
	}
	r.counts["relayed"] += len(notes)
}

// opStaleNote puts a notification relayed before back into q:1's outbox
// under its first ID (the 'o' field a revive writes), as a relayer that
// read it, stalled while another relayed it and perhaps a later end of
// the same child, and delivers it late would: notify.lua's mark must
// deliver it no second time (nor an older end over a newer).
func (r *famRun) opStaleNote() {
	p := r.parts[1]
	if len(r.relayedEntries) == 0 {
		return
	}
	m := r.relayedEntries[r.pick(len(r.relayedEntries))]
	vals := map[string]any{}
	for k, v := range m.Values {
		vals[k] = v
	}
	if _, ok := vals["o"]; !ok {
		vals["o"] = m.ID
	}
	if err := r.direct.XAdd(r.ctx, &redis.XAddArgs{Stream: p.Outbox(), Values: vals}).Err(); err != nil {
		r.fail("XADD: %v", err)
	}
	r.logf("stale note %s (child %v, %v) back in q:1's outbox", m.ID, m.Values["c"], m.Values["st"])
	r.notes = append(r.notes, famNote{stale: true})
}

// ---- operator calls ----

func (r *famRun) pickJob(states ...string) *famJob {
	if c := r.inState(true, true, states...); len(c) > 0 && r.chance(3, 4) {
		return c[r.pick(len(c))]
	}
	ids := r.ids()
	if len(ids) == 0 {
		return nil
	}
	return r.jobs[ids[r.pick(len(ids))]]
}

// adminOutcome checks an operator call's answer on job j against want
// (whether it must apply); it reports whether it applied, and whether
// its outcome is known.
func (r *famRun) adminOutcome(what string, j *famJob, want bool, err error) (applied, known bool) {
	applied, known, wrong := adminVerdict(err, want)
	if wrong != "" {
		r.fail("%s %s %s, the model has it %s (Redis %s)", what, j.id, wrong, j.state, r.snap.jobs[j.id].state)
	}
	if !known {
		r.counts["unknown-outcome"]++
	}
	return applied, known
}

func (r *famRun) opCancel() {
	j := r.pickJob("pending", "running")
	if j == nil {
		return
	}
	prev, err := r.st.Cancel(r.ctx, r.ref(j.id), 2*time.Hour)
	r.logf("cancel %s (%s) -> %s %v", j.id, j.state, prev, err)
	applied, known := r.adminOutcome("cancel", j, j.state == "pending" || j.state == "running", err)
	if !known {
		r.resync(j)
		return
	}
	if applied {
		r.ended(j, "cancelled", false)
	}
}

func (r *famRun) opDelete() {
	j := r.pickJob("pending", "completed", "archived", "cancelled", "quarantined")
	if j == nil {
		return
	}
	prev, err := r.st.Delete(r.ctx, r.ref(j.id))
	r.logf("delete %s (%s) -> %s %v", j.id, j.state, prev, err)
	applied, known := r.adminOutcome("delete", j, j.state != "running", err)
	if !known {
		if r.read(false).exists(r, j.id, j.part) {
			r.resync(j)
		} else {
			r.ended(j, "", true)
		}
		return
	}
	if applied {
		r.ended(j, "", true)
	}
}

func (r *famRun) opRedrive() {
	j := r.pickJob("archived", "cancelled", "quarantined")
	if j == nil {
		return
	}
	action := store.ActionRedrive
	if j.state == "quarantined" {
		action = store.ActionRelease
	}
	errs, err := r.st.RedriveIDs(r.ctx, r.parts[j.part], action, []string{j.id})
	r.logf("%s %s (%s) -> %v %v", action, j.id, j.state, errs, err)
	if err != nil {
		r.counts["unknown-outcome"]++
		was := j.state
		r.resync(j)
		if terminalStates[was] && j.state == "pending" {
			r.revived(j)
		}
		return
	}
	want := j.state == "archived" || j.state == "cancelled"
	if action == store.ActionRelease {
		want = j.state == "quarantined"
	}
	applied, known := r.adminOutcome(string(action), j, want, errs[0])
	if !known {
		r.fail("%s %s: %v", action, j.id, errs[0])
	}
	if applied {
		j.state = "pending"
		r.counts["redriven"]++
		r.revived(j)
	}
}

// revived: a child redriven or released runs again, and its parent
// withdraws the end it was told of: at once in q:0, through q:1's outbox
// otherwise, in order with the child's ends.
func (r *famRun) revived(j *famJob) {
	if j.isParent() {
		return
	}
	if j.part == 0 {
		r.withdraw(j.parent, j.step, j.id)
	} else {
		r.notes = append(r.notes, famNote{parent: j.parent, step: j.step, child: j.id, withdraw: true})
	}
}

func (r *famRun) opRunNow() {
	j := r.pickJob("pending")
	if j == nil {
		return
	}
	g := r.snap.jobs[j.id]
	prev, err := r.st.RunNow(r.ctx, r.ref(j.id))
	r.logf("run now %s (%s) -> %s %v", j.id, g.state, prev, err)
	want := g.state == "scheduled" || g.state == "retryable"
	applied, known := r.adminOutcome("run now", j, want, err)
	if !known {
		r.resync(j)
		if g2 := r.read(false).jobs[j.id]; g2.state == "available" && j.wait != nil {
			j.wait, j.woken = nil, true
		}
		return
	}
	if applied && j.wait != nil {
		j.wait, j.woken = nil, true // a parent waiting for its children stops waiting
	}
}

// ---- time and maintenance ----

func (r *famRun) opTick() {
	var d time.Duration
	switch x := r.pick(100); {
	case x < 65:
		d = time.Duration(r.pick(2001)) * time.Millisecond
	case x < 88:
		d = 2*time.Second + time.Duration(r.pick(38001))*time.Millisecond
	case x < 98:
		d = 40*time.Second + time.Duration(r.pick(140001))*time.Millisecond
	default:
		d = time.Duration(1+r.pick(3)) * time.Hour // retention passes
	}
	if r.clk.Now().Sub(r.epoch) > famRecheck/2 {
		d = time.Second
	}
	r.clk.Advance(d)
	r.logf("tick %s", d)
	for _, j := range r.inState(true, true, "running") {
		if r.now()-j.started > (3 * time.Minute).Milliseconds() {
			r.opMaintain()
			return
		}
	}
}

func (r *famRun) opMaintain() {
	for part := range r.parts {
		r.maintain(part)
	}
}

func (r *famRun) maintain(part int) {
	var running, terminal []*famJob
	for _, j := range r.inState(true, true, "running") {
		if j.part == part {
			running = append(running, j)
		}
	}
	for _, j := range r.inState(true, true, famTerminal...) {
		if j.part == part {
			terminal = append(terminal, j)
		}
	}
	res, err := r.st.Maintain(r.ctx, r.parts[part], 100, 100, 100)
	r.logf("maintain q:%d -> reaped %v promoted %d deleted %d %v", part, res.Reaped, res.Promoted, res.Deleted, err)
	if err != nil {
		r.counts["unknown-outcome"]++
		for _, j := range running {
			r.resync(j)
		}
	} else {
		reaped := map[string]bool{}
		for _, x := range res.Reaped {
			j := r.jobs[x.Local]
			if j == nil || j.state != "running" || j.part != part {
				r.fail("maintain reaped %s, which the model has as %+v", x.Local, j)
			}
			if j.started+famLease.Milliseconds() > r.now() {
				r.fail("maintain reaped %s, whose lease runs %dms more", j.id, j.started+famLease.Milliseconds()-r.now())
			}
			r.ended(j, coarse(x.State), false)
			reaped[j.id] = true
		}
		for _, j := range running {
			if !reaped[j.id] && j.started+famLease.Milliseconds() <= r.now() {
				r.fail("maintain left %s running, its lease run out %dms ago", j.id, r.now()-j.started-famLease.Milliseconds())
			}
		}
	}
	// the sweep: terminal jobs whose retention passed are deleted
	s := r.read(false)
	for _, j := range terminal {
		g, score := s.jobs[j.id], r.snap.jobs[j.id].termScore
		switch {
		case !g.exists && score > r.now():
			r.fail("job %s (%s) deleted by maintenance, its retention runs until %d (now %d)", j.id, j.state, score, r.now())
		case !g.exists:
			r.logf("  swept %s (%s)", j.id, j.state)
			r.ended(j, "", true)
			r.counts["swept"]++
		case err == nil && g.termScore <= r.now():
			r.fail("job %s (%s) kept by maintenance, its retention ran out at %d (now %d)", j.id, j.state, g.termScore, r.now())
		}
	}
}

var _ = strconv.Itoa
