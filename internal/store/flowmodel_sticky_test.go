package store_test

// Sticky routing in TestFlowModel (flowmodel_test.go): jobs enqueued
// pinned to one of flowWorkers (sticky.Wait, After or FailAfter), claims
// made as a named worker (its pin list, then the shared lists), workers
// that come and go (a gone worker claims nothing; the registry is told,
// though no script reads it: fallbacks are timed), reroutes of jobs in
// any state (to a worker, Wait or not, or unpinned), hand-backs (ack
// release), and fallbacks as the clock moves (claim.lua promote_pinned:
// After hands the job to every worker, FailAfter archives it).
//
// Checked after every step (checkListings), from a direct read of every
// list a job may be listed on (the shared ready lists, every worker's pin
// list, every concurrency key's and rate class's wait list) and of pinx:
//
//   - an available job is listed exactly once: on its worker's pin list
//     while pinned and not handed by its fallback (F.sticky_fallback), on
//     the shared list of its priority when unpinned or handed, or on its
//     own key's or class's wait list; a job in any other state, or
//     deleted, is listed nowhere;
//   - a pinned job listed on its pin list with a fallback (After,
//     FailAfter) has a fallback deadline in pinx;
//   - a concurrency key's waiter count (cwn) is its wait list's length;
//   - each job's routing (F.sticky_worker, F.sticky_mode) is the one the
//     model gave it (enqueue, reroute);
//
// and at each claim (checkStickyLease): a job pinned to a worker, not
// handed, is leased only by that worker, unless its After fallback fell
// due by then (the claim hands it first); a job the claim archives
// (Parked) is a FailAfter job whose fallback fell due.

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
	"github.com/sluicehq/sluice/sluicetype"
)

// flowWorkers are the workers jobs are pinned to and claims are made as;
// flowAnon is a worker no job is pinned to.
var flowWorkers = []string{"wA", "wB", "wC"}

const (
	flowAnon     = "wZ"
	flowMaxPrio  = 2 // opEnqueue's priorities are 0..flowMaxPrio
	flowWorkerTT = time.Hour
)

// stickyOpt draws the sticky routing of a job enqueued: none mostly.
func (r *flowRun) stickyOpt(nj *store.NewJob, opts *[]string) {
	if !r.chance(1, 3) {
		return
	}
	nj.Sticky = r.drawSticky(false)
	*opts = append(*opts, stickyDesc(nj.Sticky))
	if nj.Sticky.Mode == "w" && nj.Deadline.IsZero() && r.chance(1, 3) {
		// it waits for its worker alone, which may be gone for good: its
		// deadline still ends it (promote_pinned), by any worker's claim
		nj.Deadline = r.clk.Now().Add(nj.Delay + time.Duration(1+r.pick(60000))*time.Millisecond)
		*opts = append(*opts, fmt.Sprintf("deadline %d", nj.Deadline.UnixMilli()))
	}
}

// drawSticky draws a routing: a worker and a fallback; unpinned too when
// unpin.
func (r *flowRun) drawSticky(unpin bool) store.Sticky {
	if unpin && r.chance(1, 4) {
		return store.Sticky{}
	}
	s := store.Sticky{Worker: flowWorkers[r.pick(len(flowWorkers))]}
	switch x := r.pick(10); {
	case x < 4:
		s.Mode = "w"
	case x < 8:
		s.Mode, s.After = "a", time.Duration(500+r.pick(20000))*time.Millisecond
	default:
		s.Mode, s.After = "f", time.Duration(2000+r.pick(40000))*time.Millisecond
	}
	return s
}

func stickyDesc(s store.Sticky) string {
	if s.Worker == "" {
		return "unpinned"
	}
	return fmt.Sprintf("@%s/%s%s", s.Worker, s.Mode, s.After)
}

// claimWorker is the worker a step's claim is made as: an alive one of
// flowWorkers, or flowAnon.
func (r *flowRun) claimWorker() string {
	var alive []string
	for _, w := range flowWorkers {
		if !r.workerGone[w] {
			alive = append(alive, w)
		}
	}
	alive = append(alive, flowAnon)
	return alive[r.pick(len(alive))]
}

// opWorkers has a worker go (it claims no more) or come back.
func (r *flowRun) opWorkers() {
	w := flowWorkers[r.pick(len(flowWorkers))]
	r.setWorker(w, r.workerGone[w])
}

func (r *flowRun) setWorker(w string, alive bool) {
	r.workerGone[w] = !alive
	var err error
	info := sluicetype.WorkerInfo{ID: w, Host: "h", PID: 1, Started: r.epoch, Queues: map[string]int{"q": 1}, Concurrency: 1}
	if alive {
		err = r.st.Heartbeat(r.ctx, info, flowWorkerTT)
	} else {
		err = r.st.Unregister(r.ctx, info)
	}
	r.logf("worker %s alive %v -> %v", w, alive, err)
}

// opReroute reroutes a job in any state (or one deleted): only a
// completed job is refused, a deleted one is not found.
func (r *flowRun) opReroute() {
	var j *fjob
	var id string
	if len(r.gone) > 0 && r.chance(1, 12) {
		for g := range r.gone {
			if id == "" || g < id {
				id = g
			}
		}
	} else if c := r.sharedKeyWaiters(); len(c) > 0 && r.chance(1, 2) {
		j = c[r.pick(len(c))]
		id = j.id
	} else {
		j = r.pickJob("pending", "running")
		if j == nil {
			return
		}
		id = j.id
	}
	to := r.drawSticky(true)
	g := r.snap.jobs[id]
	state, err := r.st.Reroute(r.ctx, r.ref(id), to)
	r.logf("reroute %s (%s, Redis %s @%s/%s sf %q) to %s -> %q %v", id, func() string {
		if j == nil {
			return "deleted"
		}
		return j.state
	}(), g.state, g.sw, g.sm, g.sf, stickyDesc(to), state, err)
	if j == nil {
		var se *sluicetype.StateError
		if err == nil || errors.As(err, &se) {
			r.fail("reroute of deleted job %s: %q %v, want not found", id, state, err)
		}
		if !errors.Is(err, store.ErrNotFound) {
			r.counts["unknown-outcome"]++ // the reply was lost
		}
		return
	}
	applied, known := r.adminOutcome("reroute", j, j.state != "completed", err)
	if !known {
		// adopt the routing Redis holds (reroute.lua writes it all or
		// nothing)
		v, rerr := r.direct.HMGet(r.ctx, r.p.Job(id), keys.FieldStickyWorker, keys.FieldStickyMode).Result()
		if rerr != nil {
			r.fail("HMGET routing of %s: %v", id, rerr)
		}
		w, _ := v[0].(string)
		m, _ := v[1].(string)
		j.sw, j.sm = w, m
		r.resync([]*fjob{j}, false)
		return
	}
	if applied {
		if coarse(state) != j.state {
			r.fail("reroute %s answered state %q, the model has it %s", id, state, j.state)
		}
		j.sw, j.sm = to.Worker, to.Mode
		if to.Worker == "" {
			j.sm = ""
		}
		r.counts["reroute-"+j.state]++
	}
}

// sharedKeyWaiters are the jobs on a shared list whose concurrency key
// has waiters: among them the waiter a freed slot let go, which holds the
// key's turn. A reroute of such a job must pass the turn on when it pins
// it; a uniform pick reroutes one too rarely for the model to see it.
func (r *flowRun) sharedKeyWaiters() []*fjob {
	ls := r.snap.lists
	var out []*fjob
	for _, j := range r.inState("pending") {
		if j.ck == "" || len(ls.entries["cw:"+j.ck]) == 0 {
			continue
		}
		for p := 0; p <= flowMaxPrio; p++ {
			if ls.entries["av"+strconv.Itoa(p)][j.id] > 0 {
				out = append(out, j)
				break
			}
		}
	}
	return out
}

// checkStickyLease checks a job claim leased as worker against the
// snapshot before the claim: pinned elsewhere and not handed, it may go
// to another worker only as its After fallback fell due.
func (r *flowRun) checkStickyLease(id, worker string) {
	g := r.snap.jobs[id]
	if g.sw == "" || g.sm == "" || g.sf != "" || g.sw == worker {
		if g.sw != "" && g.sm != "" && g.sf == "" {
			r.counts["lease-pinned-own"]++
		}
		return
	}
	at, due := r.snap.pinx[id]
	if g.sm == "a" && due && at <= r.now() {
		r.counts["lease-fallback-due"]++
		return
	}
	r.fail("claim as %s leased %s, pinned to %s (mode %s, not handed, Redis %s, fallback due %v at %d, now %d)",
		worker, id, g.sw, g.sm, g.state, due, at, r.now())
}

// checkParked checks the jobs a claim archived: FailAfter jobs whose
// fallback fell due; they are archived.
func (r *flowRun) checkParked(parked []store.Parked) {
	for _, x := range parked {
		j, g := r.jobs[x.Local], r.snap.jobs[x.Local]
		if x.Reason == "deadline_exceeded" {
			if j == nil || j.state != "pending" || !r.deadlinePassed(j) {
				r.fail("claim parked %s (%s): the model has it %+v; Redis %s held by %q, now %d", x.Local, x.Reason, j, g.state, g.qb, r.now())
			}
			j.state, j.lease = "archived", ""
			r.counts["deadline-archived"]++
			if g.qb != "" {
				r.counts["deadline-archived-held"]++
			}
			continue
		}
		at, due := r.snap.pinx[x.Local]
		if j == nil || j.state != "pending" || x.Reason != "sticky_unavailable" || g.sm != "f" || g.sf != "" ||
			!due || at > r.now() {
			r.fail("claim parked %s (%s): the model has it %+v; Redis %s @%s/%s sf %q, fallback due %v at %d, now %d",
				x.Local, x.Reason, j, g.state, g.sw, g.sm, g.sf, due, at, r.now())
		}
		j.state, j.lease = "archived", ""
		r.counts["sticky-failed"]++
	}
}

// deadlinePassed says whether a claim may archive job j at its deadline:
// it has one, and it passed by store time; or it was held, listed at its
// deadline (lib_ready.lua held_due), and the clock went back since.
func (r *flowRun) deadlinePassed(j *fjob) bool {
	return j != nil && j.deadline != 0 && (j.deadline <= r.now() || r.snap.jobs[j.id].qb != "")
}

// flowLists is where jobs are listed: list name -> job ID -> entries.
type flowLists struct {
	entries map[string]map[string]int
	cwn     map[string]int
}

func (r *flowRun) listNames() map[string]string {
	ls := map[string]string{}
	for p := 0; p <= flowMaxPrio; p++ {
		ls["av"+strconv.Itoa(p)] = r.p.Available(p)
	}
	for _, w := range append(slices.Clone(flowWorkers), flowAnon) {
		ls["pin:"+w] = r.p.Pinned(w)
	}
	for _, k := range flowCKeys {
		ls["cw:"+k] = r.p.ConcurrencyWait(k)
	}
	for _, c := range flowRClass {
		ls["rw:"+c] = r.p.RateWait(c)
	}
	return ls
}

// readStickyExtra reads the lists, the waiter counts and pinx into s.
func (r *flowRun) readStickyExtra(s *fsnap) {
	ctx := r.ctx
	names := r.listNames()
	cmds := map[string]*redis.StringSliceCmd{}
	var cwn *redis.MapStringStringCmd
	var pinx *redis.ZSliceCmd
	_, err := r.direct.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for n, k := range names {
			cmds[n] = pl.LRange(ctx, k, 0, -1)
		}
		cwn = pl.HGetAll(ctx, r.p.ConcurrencyWaiting())
		pinx = pl.ZRangeWithScores(ctx, r.p.PinDeadlines(), 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		r.fail("reading lists: %v", err)
	}
	s.lists = &flowLists{entries: map[string]map[string]int{}, cwn: map[string]int{}}
	for n, c := range cmds {
		m := map[string]int{}
		for _, id := range c.Val() {
			m[id]++
		}
		s.lists.entries[n] = m
	}
	for k, v := range cwn.Val() {
		s.lists.cwn[k], _ = strconv.Atoi(v)
	}
	s.pinx = map[string]int64{}
	for _, z := range pinx.Val() {
		s.pinx[z.Member.(string)] = int64(z.Score)
	}
}

// checkListings returns the listing invariants s breaks.
func (r *flowRun) checkListings(s *fsnap) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	ls := s.lists
	where := func(id string) (out []string, n int) {
		for name, m := range ls.entries {
			if m[id] > 0 {
				out = append(out, fmt.Sprintf("%s×%d", name, m[id]))
				n += m[id]
			}
		}
		slices.Sort(out)
		return out, n
	}
	known := map[string]bool{}
	for id := range r.gone {
		known[id] = true
		if w, n := where(id); n > 0 {
			add("deleted job %s is listed: %v", id, w)
		}
	}
	for _, id := range r.ids() {
		known[id] = true
		j, g := r.jobs[id], s.jobs[id]
		if !g.exists {
			continue
		}
		if g.sw != j.sw || g.sm != j.sm {
			add("job %s is routed @%q/%q, the model says @%q/%q", id, g.sw, g.sm, j.sw, j.sm)
		}
		w, n := where(id)
		if g.state != "available" {
			if n > 0 {
				add("job %s (%s) is listed: %v", id, g.state, w)
			}
			continue
		}
		if n != 1 {
			add("available job %s (@%s/%s sf %q ck %q rc %q pr %d) is listed %d times: %v", id, g.sw, g.sm, g.sf, g.ck, g.rc,
				g.pr, n, w)
			continue
		}
		pinned := g.sw != "" && g.sm != "" && g.sf == ""
		name := strings.SplitN(w[0], "×", 2)[0]
		var ok bool
		switch {
		case strings.HasPrefix(name, "pin:"):
			ok = pinned && name == "pin:"+g.sw
			if ok && g.sm != "w" {
				if _, due := s.pinx[id]; !due {
					add("job %s on the pin list of %s (mode %s) has no fallback deadline", id, g.sw, g.sm)
				}
			}
			if ok && g.sm == "w" && j.deadline != 0 {
				if at, due := s.pinx[id]; !due || at != j.deadline {
					add("job %s waits on the pin list of %s with its deadline %d in pinx at %d (listed %v)", id, g.sw,
						j.deadline, at, due)
				}
			}
			if ok {
				r.counts["listed-pinned"]++
			}
		case strings.HasPrefix(name, "av"):
			ok = !pinned && name == "av"+strconv.FormatInt(g.pr, 10)
			if ok && g.sw != "" {
				r.counts["listed-handed"]++
			}
			// let go from a wait list, or handed by its fallback: its
			// wait's deadline or its fallback time left pinx with it
			if at, due := s.pinx[id]; ok && due {
				add("job %s on the shared list %s is in pinx at %d", id, name, at)
			}
		case strings.HasPrefix(name, "cw:"):
			ok = name == "cw:"+g.ck
			if ok && g.sw != "" {
				r.counts["listed-cw-pinned"]++
			}
		case strings.HasPrefix(name, "rw:"):
			ok = name == "rw:"+g.rc
			if ok && g.sw != "" {
				r.counts["listed-rw-pinned"]++
			}
		}
		// a waiter with a deadline is listed in pinx at it (claim.lua
		// wait_dated), for the first claim then to archive it, whether or
		// not its key or class lets it go; one with none is not listed
		if ok && (strings.HasPrefix(name, "cw:") || strings.HasPrefix(name, "rw:")) {
			at, due := s.pinx[id]
			switch {
			case j.deadline != 0 && (!due || at != j.deadline):
				add("job %s waits on %s with its deadline %d in pinx at %d (listed %v)", id, name, j.deadline, at, due)
			case j.deadline == 0 && due:
				add("job %s waits on %s with no deadline, in pinx at %d", id, name, at)
			case j.deadline != 0:
				r.counts["listed-waiting-dated"]++
			}
		}
		if !ok {
			add("available job %s (@%s/%s sf %q ck %q rc %q pr %d) is listed on %s", id, g.sw, g.sm, g.sf, g.ck, g.rc, g.pr, name)
		}
	}
	for name, m := range ls.entries {
		for id := range m {
			if !known[id] {
				add("list %s holds %s, which the model does not know", name, id)
			}
		}
	}
	shared := map[string]bool{} // concurrency keys with an available job on a shared list
	for name, m := range ls.entries {
		if strings.HasPrefix(name, "av") {
			for id := range m {
				if g := s.jobs[id]; g.exists && g.state == "available" && g.ck != "" {
					shared[g.ck] = true
				}
			}
		}
	}
	for _, k := range flowCKeys {
		total := 0
		for _, c := range ls.entries["cw:"+k] {
			total += c
		}
		if ls.cwn[k] != total {
			add("concurrency key %s counts %d waiters, its wait list holds %d", k, ls.cwn[k], total)
		}
		// a key with waiters and room has a job any worker may claim (the
		// waiter a freed slot let go to a shared list holds the key's
		// turn): else no claim leases one and no slot frees, and its
		// waiters wait for ever
		if total > 0 && s.cc[k] < flowCLimit[k] && !shared[k] {
			add("concurrency key %s (limit %d) runs %d and has %d waiters, but no job of it is on a shared list", k,
				flowCLimit[k], s.cc[k], total)
		}
	}
	return bad
}

// opRedrive redrives archived or cancelled jobs (redrive.lua): back to
// available, to the list of the routing they have now (a reroute while
// archived applies then).
func (r *flowRun) opRedrive() {
	var ids []string
	var jobs []*fjob
	for _, j := range r.inState("archived", "cancelled", "completed", "pending") {
		if (j.state == "archived" || j.state == "cancelled") && r.chance(1, 3) || r.chance(1, 30) {
			ids, jobs = append(ids, j.id), append(jobs, j)
		}
		if len(ids) == 3 {
			break
		}
	}
	if len(ids) == 0 {
		return
	}
	errs, err := r.st.RedriveIDs(r.ctx, r.p, store.ActionRedrive, ids)
	r.logf("redrive %v -> %v %v", ids, errs, err)
	if err != nil {
		r.counts["unknown-outcome"]++
		r.resync(jobs, false)
		for _, j := range jobs {
			if j.state == "pending" {
				j.mustHold = false
			}
		}
		return
	}
	for i, j := range jobs {
		applied, known := r.adminOutcome("redrive", j, j.state == "archived" || j.state == "cancelled", errs[i])
		if !known {
			r.fail("redrive %s: %v", j.id, errs[i])
		}
		if applied {
			r.counts["redriven-"+j.state]++
			if j.sw != "" {
				r.counts["redriven-pinned"]++
			}
			// an operator's redrive runs the job: it is not held again
			// behind a quarantined twin (redrive.lua clears F.held_by)
			j.state, j.mustHold = "pending", false
		}
	}
}
