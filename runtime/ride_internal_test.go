package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// ackCalls is a go-redis hook on the ack and claim scripts' calls. It
// records, per ack call, how many claim arguments it carries (ARGV[11],
// lua/ack.lua); holds the first ack call before it reaches Redis until
// hold is closed (with hold nil it holds none); and, with lose set, runs
// the first ack call that carries a claim and loses its reply.
type ackCalls struct {
	hold    chan struct{}
	holding chan struct{} // closed once the first ack call is held
	lose    bool
	release sync.Once

	mu     sync.Mutex
	acks   []string // per ack call: "alone" or "with a claim"
	claims int      // calls of the claim script
	lost   bool
}

func (h *ackCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *ackCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *ackCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 3 {
			return next(ctx, cmd)
		}
		if lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) {
			h.mu.Lock()
			h.claims++
			h.mu.Unlock()
			return next(ctx, cmd)
		}
		if !lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		nkeys, _ := strconv.Atoi(fmt.Sprint(args[2]))
		with := len(args) > 3+nkeys+10 && fmt.Sprint(args[3+nkeys+10]) != "0"
		h.mu.Lock()
		kind := "alone"
		if with {
			kind = "with a claim"
		}
		h.acks = append(h.acks, kind)
		first := len(h.acks) == 1
		loseIt := h.lose && with && !h.lost
		if loseIt {
			h.lost = true
		}
		h.mu.Unlock()
		if first && h.hold != nil {
			close(h.holding)
			<-h.hold
		}
		if err := next(ctx, cmd); err != nil || !loseIt {
			return err
		}
		cmd.SetErr(errCut)
		return errCut
	}
}

// free lets the held call go on (a test's end does it too, so that a
// failed test does not leave the lane's loop held).
func (h *ackCalls) free() { h.release.Do(func() { close(h.hold) }) }

func (h *ackCalls) seen() ([]string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.acks), h.claims
}

// rideRig is a worker's ack lanes and claims on a store whose completed
// jobs are discarded (a re-sent completion then finds no job: only its
// call's record can answer it), with jobs j0 to j3 and j0, j1 leased.
type rideRig struct {
	ctx  context.Context
	st   *store.Store
	p    keys.Partition
	w    *Worker
	held []*store.Job
}

func newRideRig(t *testing.T, rdb *redis.Client, hook *ackCalls) *rideRig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := store.New(rdb, store.Config{NS: fmt.Sprintf("ride%d", time.Now().UnixNano()), RetainCompleted: -1,
		RetainArchived: time.Hour, RetainCancelled: time.Hour, CrashLimit: 3})
	p := st.Partition("q", 0)
	var jobs []store.NewJob
	for i := range 4 {
		jobs = append(jobs, store.NewJob{Local: fmt.Sprint("j", i), Kind: "k", Payload: []byte("x"), MaxAttempts: 3})
	}
	if _, err := st.Enqueue(ctx, p, jobs); err != nil {
		t.Fatal(err)
	}
	res, err := st.Claim(ctx, p, store.ClaimRequest{N: 2, Lease: time.Minute, Worker: "w", Nonce: "n0", ID: "n0"})
	if err != nil || len(res.Jobs) != 2 {
		t.Fatalf("claim: %+v %v", res, err)
	}
	// the scripts are loaded before the hook counts calls
	if _, _, err := st.Ack(ctx, p, []store.Ack{{Lease: store.Lease{Local: "none", LeaseID: "x", Fence: 1}, Code: store.CodeOK}}); err != nil {
		t.Fatal(err)
	}
	rdb.AddHook(hook)
	w := &Worker{st: st, clk: WallClock(), longestLease: time.Minute, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w.acks = newBatcher(maxAckBatch, 16, w.flushAcks, func(_ store.Ack, err error) store.AckResult { return store.AckResult{Err: err} })
	var g sync.WaitGroup
	w.acks.start(ctx, &g)
	t.Cleanup(func() {
		if hook.hold != nil {
			hook.free()
		}
		cancel()
		g.Wait()
	})
	return &rideRig{ctx: ctx, st: st, p: p, w: w, held: res.Jobs}
}

// ackAsync acks job i of the held ones (a completion) on the worker's
// lane, as a handler's return does, and returns its answer when it comes.
func (r *rideRig) ackAsync(i int) <-chan store.AckResult {
	out := make(chan store.AckResult, 1)
	j := r.held[i]
	go func() {
		out <- r.w.ack(r.p, store.Ack{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}, Code: store.CodeOK}, nil)
	}()
	return out
}

// queued waits until the partition's lane holds n requests not yet sent.
func (r *rideRig) queued(t *testing.T, n int) {
	t.Helper()
	if ok, last := redisproc.Poll(10*time.Second, func() (bool, string) {
		r.w.acks.lanesMu.Lock()
		defer r.w.acks.lanesMu.Unlock()
		l := len(r.w.acks.lanes[r.p])
		return l == n, fmt.Sprint(l, " queued")
	}); !ok {
		t.Fatalf("the lane never held %d requests: %s", n, last)
	}
}

func rideBackends(t *testing.T) map[string]*redis.Client {
	t.Helper()
	m := miniredis.RunT(t)
	srv, err := redisproc.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	mini, real := redis.NewClient(&redis.Options{Addr: m.Addr()}), srv.Client()
	t.Cleanup(func() {
		mini.Close()
		real.Close()
		srv.Close()
	})
	return map[string]*redis.Client{"miniredis": mini, "redis": real}
}

func leasedIDs(res store.ClaimResult) []string {
	var out []string
	for _, j := range res.Jobs {
		out = append(out, j.Local+"="+j.LeaseID)
	}
	return out
}

// TestClaimCarriesQueuedAcks: a claim made while its partition's ack lane
// has a call in flight takes the acks queued behind that call and sends
// them with it, one call: the acks are answered, the claim leases, and
// the lane sends nothing more for them.
func TestClaimCarriesQueuedAcks(t *testing.T) {
	for name, rdb := range rideBackends(t) {
		t.Run(name, func(t *testing.T) {
			hook := &ackCalls{hold: make(chan struct{}), holding: make(chan struct{})}
			r := newRideRig(t, rdb, hook)
			first := r.ackAsync(0)
			<-hook.holding // the lane's call is in flight
			second := r.ackAsync(1)
			r.queued(t, 1)
			res, err := r.w.claim(r.ctx, r.p, store.ClaimRequest{N: 2, Lease: time.Minute, Worker: "w", Nonce: "n1", ID: "n1"}, false)
			if err != nil || !slices.Equal(leasedIDs(res), []string{"j2=n1.1", "j3=n1.2"}) {
				t.Fatalf("claim: %v %v, want j2 and j3", leasedIDs(res), err)
			}
			if a := <-second; a.Err != nil || a.State != "completed" {
				t.Fatalf("the ack the claim carried: %+v", a)
			}
			hook.free()
			if a := <-first; a.Err != nil || a.State != "completed" {
				t.Fatalf("the ack in flight: %+v", a)
			}
			acks, claims := hook.seen()
			if !slices.Equal(acks, []string{"alone", "with a claim"}) || claims != 0 {
				t.Fatalf("ack calls %v and %d claim calls; want the held ack alone, then one with the claim, and no claim call", acks, claims)
			}
		})
	}
}

// TestClaimCarryingAcksLostReply: when the call of a claim that carries
// acks ran but its reply was lost, the claim answers the error and the
// acks are sent again alone by their lane: they are answered what the call
// did (completed, though their jobs are gone), and the claim sent again
// alone by its ID (as the fetch loop sends a failed claim) is answered the
// jobs the call leased, none leased twice.
func TestClaimCarryingAcksLostReply(t *testing.T) {
	for name, rdb := range rideBackends(t) {
		t.Run(name, func(t *testing.T) {
			hook := &ackCalls{hold: make(chan struct{}), holding: make(chan struct{}), lose: true}
			r := newRideRig(t, rdb, hook)
			first := r.ackAsync(0)
			<-hook.holding
			second := r.ackAsync(1)
			r.queued(t, 1)
			req := store.ClaimRequest{N: 2, Lease: time.Minute, Worker: "w", Nonce: "n1", ID: "n1"}
			if _, err := r.w.claim(r.ctx, r.p, req, false); !errors.Is(err, errCut) {
				t.Fatalf("claim whose reply was lost: %v, want the loss", err)
			}
			if a := <-second; a.Err != nil || a.State != "completed" {
				t.Fatalf("the ack the lost call carried, sent again alone: %+v, want completed", a)
			}
			res, err := r.w.claim(r.ctx, r.p, req, true)
			if err != nil || !slices.Equal(leasedIDs(res), []string{"j2=n1.1", "j3=n1.2"}) {
				t.Fatalf("the claim sent again alone: %v %v, want the call's j2 and j3", leasedIDs(res), err)
			}
			hook.free()
			if a := <-first; a.Err != nil || a.State != "completed" {
				t.Fatalf("the ack in flight: %+v", a)
			}
			if n, err := rdb.ZCard(r.ctx, r.p.Running()).Result(); err != nil || n != 2 {
				t.Fatalf("%d jobs running (%v), want j2 and j3", n, err)
			}
			if acks, claims := hook.seen(); claims != 1 || len(acks) != 3 {
				t.Fatalf("ack calls %v, %d claim calls; want the held ack, the lost call, the ack again alone, and the claim again", acks, claims)
			}
		})
	}
}
