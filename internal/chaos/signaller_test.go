package chaos

// The signaller: sends each approval workflow its signal while the faults
// go on, through the proxy, and keeps a record of every call.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// Timing of the signaller's calls.
const (
	// signalCallTimeout bounds one Client.Signal call.
	signalCallTimeout = 2 * time.Second
	// signalRetry is the pause before a failed call is made again.
	signalRetry = 100 * time.Millisecond
	// lateWait bounds how long a late signal waits for its workflow to be
	// seen suspended on it; then it is sent anyway.
	lateWait = 10 * time.Second
	// lateDelay bounds the pause between seeing a workflow suspended and
	// sending it its signal: longer than most reminders (approvalFor).
	lateDelay = 1500 * time.Millisecond
	// signalGiveUp bounds the calls for one workflow.
	signalGiveUp = drainTimeout
	// signalFaultEvery: before one call in signalFaultEvery, the
	// signaller arms the proxy to lose the reply to the next signal call
	// (Redis runs it) or to deliver it twice, besides the random faults on
	// every script call.
	signalFaultEvery = 4
)

// signaller sends every signalled workflow (not wfSilent) one signal
// carrying a token of its own ("w<k>-<random>.<copy>"), in a goroutine
// per workflow: half of them at once, most likely before the workflow
// reaches its wait (early), the other half once it has been seen
// suspended on it (late: scheduled, awaiting signalName; the workflow is
// then also probed in its indexes, see probe) and up to lateDelay more
// (so that some reminders fire first). Half the workflows are signalled through a
// client that lets go-redis send a call again when its reply is lost (the
// script's call record answers the second delivery), half through one
// without retries (bare); before one call in signalFaultEvery the proxy
// is armed to lose the reply to the next signal call, or to deliver it
// twice (the second delivery must answer what the first did and keep
// nothing more). A call that fails (a cut connection, Redis restarting, a
// reply lost) may or may not have kept its copy: it is uncertain. A second logical call is a second
// signal, so the signaller calls again with the next copy ("...<copy+1>")
// until a call is acknowledged, or is refused because the workflow has
// finished (it took an earlier copy). The checks (checkWorkflows) accept
// that an uncertain copy is kept or not, never that two are taken.
type signaller struct {
	c *flow.Client // through the proxy: its calls meet the faults
	// bare is c without go-redis's retries: every failed call, a lost
	// reply among them, comes back to the signaller as an error.
	bare   *flow.Client
	proxy  *Proxy                // arms a fault for one call in signalFaultEvery
	direct redis.UniversalClient // straight to Redis: the probes
	ns     string
	ctx    context.Context
	wg     sync.WaitGroup
	busy   atomic.Int64 // workflows whose signal is not settled

	mu    sync.Mutex
	sends map[int]*sendLog // by workflow
	errs  []string
	st    signalStats
}

// sendLog is what the signaller sent one workflow.
type sendLog struct {
	ID        string
	Late      bool     // sent once the workflow was seen waiting, or after lateWait
	Bare      bool     // sent through the client without retries
	Observed  bool     // late, and seen suspended on the signal
	Tokens    []string // the copies sent, in order, but for one refused as finished
	Acked     string   // the copy whose call was acknowledged, "" for none
	Uncertain int      // calls that failed: their copies may be kept or not
	Finished  bool     // a call found the workflow finished (nothing kept)
}

// signalStats counts the signaller's work.
type signalStats struct {
	Workflows  int // workflows signalled
	Calls      int // Client.Signal calls
	Early      int // workflows signalled at once
	Bare       int // workflows signalled through the client without retries
	Observed   int // late workflows signalled once seen suspended
	Unobserved int // late workflows not seen suspended within lateWait
	Uncertain  int // calls that failed
	Finished   int // calls refused: the workflow had finished
	Probes     int // suspended workflows checked in their indexes
	Drops      int // lost replies armed for signal calls
	Dups       int // second deliveries armed for signal calls
}

func newSignaller(ctx context.Context, c, bare *flow.Client, proxy *Proxy, direct redis.UniversalClient, ns string) *signaller {
	return &signaller{c: c, bare: bare, proxy: proxy, direct: direct, ns: ns, ctx: ctx, sends: map[int]*sendLog{}}
}

// isSignalCall matches a proxied request that runs lua/signal.lua.
func isSignalCall(args []string) bool {
	return len(args) > 1 && lua.Signal.Is(args[0], args[1])
}

// add starts signalling workflow k (job id, args a), unless it is silent.
func (s *signaller) add(k int, id string, a approvalJob) {
	if a.Variant == wfSilent {
		return
	}
	late, bare := rand.IntN(2) == 0, rand.IntN(2) == 0
	s.busy.Add(1)
	s.wg.Go(func() {
		defer s.busy.Add(-1)
		s.send(k, id, late, bare)
	})
}

// idle reports whether every signal added so far is settled.
func (s *signaller) idle() bool { return s.busy.Load() == 0 }

// wait waits for every goroutine; add must not be called any more.
func (s *signaller) wait() { s.wg.Wait() }

func (s *signaller) fail(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, a...))
}

func (s *signaller) count(f func(*signalStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.st)
}

// send signals workflow k until a call is acknowledged or finds it
// finished.
func (s *signaller) send(k int, id string, late, bare bool) {
	lg := &sendLog{ID: id, Late: late, Bare: bare}
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sends[k] = lg
		s.st.Workflows++
		if bare {
			s.st.Bare++
		}
	}()
	c := s.c
	if bare {
		c = s.bare
	}
	if late {
		lg.Observed = s.awaitSuspended(id)
		s.count(func(st *signalStats) {
			if lg.Observed {
				st.Observed++
			} else {
				st.Unobserved++
			}
		})
		time.Sleep(rand.N(lateDelay))
	} else {
		s.count(func(st *signalStats) { st.Early++ })
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	}
	base := fmt.Sprintf("w%d-%08x", k, rand.Uint32())
	giveUp := time.Now().Add(signalGiveUp)
	for n := 1; ; n++ {
		tok := base + "." + strconv.Itoa(n)
		if rand.IntN(signalFaultEvery) == 0 {
			if rand.IntN(2) == 0 {
				s.proxy.Inject(DropReply, 1, isSignalCall)
				s.count(func(st *signalStats) { st.Drops++ })
			} else {
				s.proxy.Inject(Duplicate, 1, isSignalCall)
				s.count(func(st *signalStats) { st.Dups++ })
			}
		}
		ctx, cancel := context.WithTimeout(s.ctx, signalCallTimeout)
		err := c.Signal(ctx, id, signalName, tok)
		cancel()
		s.count(func(st *signalStats) { st.Calls++ })
		switch {
		case err == nil:
			lg.Tokens = append(lg.Tokens, tok)
			lg.Acked = tok
			return
		case errors.Is(err, sluicetype.ErrWrongState):
			// Refused: nothing kept. Only a workflow that took an
			// uncertain copy can have finished.
			lg.Finished = true
			s.count(func(st *signalStats) { st.Finished++ })
			if lg.Uncertain == 0 {
				s.fail("workflow %d (%s) finished before any signal reached it: %v", k, id, err)
			}
			return
		case errors.Is(err, flow.ErrNotFound) || errors.Is(err, flow.ErrInvalid):
			s.fail("signal to workflow %d (%s): %v", k, id, err)
			return
		}
		lg.Tokens = append(lg.Tokens, tok)
		lg.Uncertain++
		s.count(func(st *signalStats) { st.Uncertain++ })
		if s.ctx.Err() != nil || time.Now().After(giveUp) {
			s.fail("workflow %d (%s): no signal acknowledged in %d calls: %v", k, id, n, err)
			return
		}
		time.Sleep(signalRetry)
	}
}

// awaitSuspended polls the workflow id through the proxy until it is
// suspended waiting for signalName, then probes it, and reports whether it
// saw it so within lateWait.
func (s *signaller) awaitSuspended(id string) bool {
	end := time.Now().Add(lateWait)
	for s.ctx.Err() == nil && time.Now().Before(end) {
		ctx, cancel := context.WithTimeout(s.ctx, signalCallTimeout)
		info, err := s.c.Job(ctx, id)
		cancel()
		if err == nil && info.State == flow.StateScheduled && slices.Contains(info.AwaitingSignals, signalName) {
			s.probe(id)
			return true
		}
		time.Sleep(time.Duration(20+rand.IntN(30)) * time.Millisecond)
	}
	return false
}

// probe reads the workflow id straight from Redis in one transaction and,
// if it is still suspended (scheduled, awaiting signalName), checks that
// it holds no worker and sits where a suspended job belongs: in the
// schedule zset at its due time (the job's run_at), in no available list,
// not in the running zset, its awaits naming its current fence and the
// signal. A Redis that is restarting answers nothing and is not probed.
func (s *signaller) probe(id string) {
	ref, ok := keys.ParseRef(s.ns, id)
	if !ok {
		s.fail("probe: job ID %q", id)
		return
	}
	p, local := ref.Partition, ref.Local
	ctx, cancel := context.WithTimeout(s.ctx, signalCallTimeout)
	defer cancel()
	var (
		hm        *redis.SliceCmd
		sched, rn *redis.FloatCmd
		avail     [keys.Priorities]*redis.IntCmd
	)
	_, err := s.direct.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		hm = pipe.HMGet(ctx, p.Job(local), keys.FieldState, keys.FieldRunAt, keys.FieldAwaits, keys.FieldFence)
		sched = pipe.ZScore(ctx, p.Sched(), local)
		rn = pipe.ZScore(ctx, p.Running(), local)
		for prio := range avail {
			avail[prio] = pipe.LPos(ctx, p.Available(prio), local, redis.LPosArgs{})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return
	}
	v := hm.Val()
	str := func(i int) string { x, _ := v[i].(string); return x }
	if len(v) != 4 || store.StateName(str(0)) != flow.StateScheduled {
		return // woken since
	}
	s.count(func(st *signalStats) { st.Probes++ })
	var bad []string
	runAt, perr := strconv.ParseInt(str(1), 10, 64)
	if score, err := sched.Result(); err != nil || perr != nil || int64(score) != runAt {
		// due further ahead than sched holds: in its bucket of later jobs
		b := strconv.FormatInt(runAt/store.LaterBucketMS, 10)
		_, lerr := s.direct.LPos(ctx, p.LaterBucket(b), local, redis.LPosArgs{}).Result()
		if lerr != nil && !errors.Is(lerr, redis.Nil) {
			return // a Redis restarting since the transaction (LOADING, a cut): not probed
		}
		if perr != nil || lerr != nil {
			bad = append(bad, fmt.Sprintf("schedule zset score %v (%v), run_at %q, not in bucket %s either (%v)", score, err, str(1), b, lerr))
		}
	}
	if score, err := rn.Result(); !errors.Is(err, redis.Nil) {
		bad = append(bad, fmt.Sprintf("in the running zset at %v (%v)", score, err))
	}
	for prio, c := range avail {
		if pos, err := c.Result(); !errors.Is(err, redis.Nil) {
			bad = append(bad, fmt.Sprintf("in available list %d at %d (%v)", prio, pos, err))
		}
	}
	if aw := str(2); !awaitsOf(aw, str(3), signalName) {
		bad = append(bad, fmt.Sprintf("awaits %q with fence %q", aw, str(3)))
	}
	if len(bad) > 0 {
		s.fail("workflow %s suspended on %s: %v", id, signalName, bad)
	}
}

// awaitsOf reports whether a job's awaits field v names fence first and
// then, among the signals, name (lua/lib_waits.lua).
func awaitsOf(v, fence, name string) bool {
	words := strings.Fields(v)
	return len(words) > 1 && words[0] == fence && slices.Contains(words[1:], name)
}

// stats returns the counts so far.
func (s *signaller) stats() signalStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// result returns what was sent to each workflow and the failures seen.
func (s *signaller) result() (map[int]*sendLog, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sends, s.errs
}

// TestProbe: probe passes a job suspended as lua/lib_waits.lua leaves one,
// and reports each way of being misplaced.
func TestProbe(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := newClient(t, &redis.Options{Addr: startRedis(t).Addr()})
	ns := "tprobe"
	part := keys.Partition{NS: ns, Queue: "default"}
	id := keys.Ref{Partition: part, Local: "w1"}.String()
	suspend := func() {
		t.Helper()
		if err := errors.Join(
			rdb.Del(ctx, part.Job("w1"), part.Sched(), part.Running(), part.Available(0)).Err(),
			rdb.HSet(ctx, part.Job("w1"), keys.FieldState, "2", keys.FieldRunAt, 1700000000123, keys.FieldFence, 5,
				keys.FieldAwaits, "5 other "+signalName).Err(),
			rdb.ZAdd(ctx, part.Sched(), redis.Z{Score: 1700000000123, Member: "w1"}).Err(),
		); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		spoil func() error
		want  string // in the failure, "" for none
	}{
		{"suspended", func() error { return nil }, ""},
		{"woken", func() error { return rdb.HSet(ctx, part.Job("w1"), keys.FieldState, "1").Err() }, ""},
		{"running too", func() error { return rdb.ZAdd(ctx, part.Running(), redis.Z{Score: 1, Member: "w1"}).Err() }, "running zset"},
		{"available too", func() error { return rdb.RPush(ctx, part.Available(0), "w1").Err() }, "available list 0"},
		{"not scheduled", func() error { return rdb.ZRem(ctx, part.Sched(), "w1").Err() }, "schedule zset"},
		{"another due time", func() error { return rdb.ZAdd(ctx, part.Sched(), redis.Z{Score: 1, Member: "w1"}).Err() }, "schedule zset"},
		{"an old suspension", func() error { return rdb.HSet(ctx, part.Job("w1"), keys.FieldFence, 6).Err() }, "awaits"},
		{"another signal", func() error { return rdb.HSet(ctx, part.Job("w1"), keys.FieldAwaits, "5 other").Err() }, "awaits"},
	} {
		suspend()
		if err := tc.spoil(); err != nil {
			t.Fatal(err)
		}
		s := newSignaller(ctx, nil, nil, nil, rdb, ns)
		s.probe(id)
		_, errs := s.result()
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: %q, want no failure", tc.name, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.want)):
			t.Errorf("%s: %q, want one failure naming %q", tc.name, errs, tc.want)
		}
		if probes := s.stats().Probes; probes != 1 && tc.name != "woken" {
			t.Errorf("%s: %d probes counted, want 1", tc.name, probes)
		}
	}
}

// TestSendLogProblems: what checkWorkflows accepts of a workflow's signal,
// given what the signaller sent.
func TestSendLogProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sl    sendLog
		token string
		kept  []string
		want  string // in the only problem, "" for none
	}{
		{"acknowledged, taken", sendLog{Tokens: []string{"a.1"}, Acked: "a.1"}, "a.1", nil, ""},
		{"acknowledged, lost to the deadline", sendLog{Tokens: []string{"a.1"}, Acked: "a.1"}, timeoutToken, nil, "the deadline fired"},
		{"acknowledged, kept, another taken", sendLog{Tokens: []string{"a.1"}, Acked: "a.1"}, "b.1", []string{"a.1"}, "never sent"},
		{"acknowledged, taken and kept", sendLog{Tokens: []string{"a.1"}, Acked: "a.1"}, "a.1", []string{"a.1"}, "the copy it took"},
		{"uncertain copy taken, acknowledged one kept", sendLog{Tokens: []string{"a.1", "a.2"}, Acked: "a.2", Uncertain: 1}, "a.1", []string{"a.2"}, ""},
		{"uncertain copy lost, acknowledged one taken", sendLog{Tokens: []string{"a.1", "a.2"}, Acked: "a.2", Uncertain: 1}, "a.2", nil, ""},
		{"uncertain copy taken, acknowledged one vanished", sendLog{Tokens: []string{"a.1", "a.2"}, Acked: "a.2", Uncertain: 1}, "a.1", nil, "neither taken nor kept"},
		{"uncertain copy kept twice", sendLog{Tokens: []string{"a.1", "a.2"}, Acked: "a.2", Uncertain: 1}, "a.2", []string{"a.1", "a.1"}, "twice"},
		{"uncertain copy taken, then finished", sendLog{Tokens: []string{"a.1"}, Uncertain: 1, Finished: true}, "a.1", nil, ""},
		{"never acknowledged", sendLog{Tokens: []string{"a.1"}, Uncertain: 1}, "a.1", nil, "never acknowledged"},
	} {
		got := tc.sl.problems(tc.token, tc.kept)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %q, want no problem", tc.name, got)
		case tc.want != "" && (len(got) == 0 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: %q, want a problem naming %q", tc.name, got, tc.want)
		}
	}
}
