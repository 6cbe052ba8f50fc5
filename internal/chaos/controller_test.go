package chaos

// The controller: injects one fault after another until the chaos ends.

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisproc"
)

// fault is a kind of injected failure.
type fault int

const (
	faultKill    fault = iota // SIGKILL a worker, start a replacement
	faultStall                // SIGSTOP a worker past its lease, SIGCONT it later
	faultRestart              // SIGTERM a worker (graceful), start a replacement
	faultRedis                // restart Redis (half the time after a SIGKILL)
	faultCut                  // cut every connection through the proxy
	faultSilence              // silence every connection through the proxy, cut it later
	numFaults
)

// counts are the faults injected.
type counts struct {
	Kills, Stalls, Restarts, RedisRestarts, RedisKills, Cuts, CutConns, Silences, SilencedConns int
}

// controller injects faults into a fleet of workers, their proxy and
// their Redis.
type controller struct {
	t     *testing.T
	rng   *rand.Rand
	fleet *fleet
	srv   *redisproc.Server
	proxy *Proxy
	// stallFor is the shortest stop: longer than a lease, plus time for
	// the reaper to reclaim the stopped worker's jobs.
	stallFor time.Duration
	resumeAt map[*proc]time.Time
	deck     []fault
	counts
}

// run injects faults every 150-600 ms until the deadline, drawing them
// from a shuffled deck holding each fault once, so that every kind occurs
// as often as the others (one that cannot be injected yet, a stall with
// too few workers running, waits while those after it go). It goes on past
// the deadline, by up to a minute, until each kind has been injected once
// and a stalled worker has tried a write after its lease was taken (a
// stale write refused): on a loaded machine a worker process built with
// -race takes seconds to start, and a short run could end before its
// first deck does, or stall only workers that held no job. Stopped
// workers are resumed when due, the last ones after the deadline; workers
// that an exit pill ended are replaced before each fault.
func (c *controller) run(until time.Time) {
	more := func() bool {
		now := time.Now()
		return now.Before(until) || !c.everyKind() && now.Before(until.Add(time.Minute))
	}
	for more() {
		c.resumeDue()
		c.fleet.restartExited(c.fleet.cfg)
		if len(c.deck) == 0 {
			c.deck = make([]fault, numFaults)
			for i := range c.deck {
				c.deck[i] = fault(i)
			}
			c.rng.Shuffle(len(c.deck), func(i, j int) { c.deck[i], c.deck[j] = c.deck[j], c.deck[i] })
		}
		for i, f := range c.deck { // the first that can be injected now
			if c.inject(f) {
				c.deck = slices.Delete(c.deck, i, i+1)
				break
			}
		}
		time.Sleep(time.Duration(150+c.rng.IntN(451)) * time.Millisecond)
	}
	for len(c.resumeAt) > 0 {
		c.resumeDue()
		time.Sleep(20 * time.Millisecond)
	}
	c.fleet.restartExited(c.fleet.cfg)
}

// inject injects f and reports whether it could (a stall needs another
// worker left running, or starting; a kill, a stall and a restart need a
// ready worker running: the replacements of those exit pills ended may
// still be starting).
func (c *controller) inject(f fault) bool {
	t := c.t
	t.Helper()
	running := c.fleet.running()
	pick := func() *proc { return running[c.rng.IntN(len(running))] }
	if len(running) == 0 && (f == faultKill || f == faultStall || f == faultRestart) {
		return false
	}
	switch f {
	case faultKill:
		c.fleet.kill(pick())
		c.fleet.start(c.fleet.cfg)
		c.Kills++
	case faultStall:
		if c.fleet.unstalled() < 2 {
			return false
		}
		p := pick()
		c.fleet.stall(p)
		c.resumeAt[p] = time.Now().Add(c.stallFor + time.Duration(c.rng.IntN(1000))*time.Millisecond)
		c.Stalls++
	case faultRestart:
		c.fleet.term(pick())
		c.fleet.start(c.fleet.cfg)
		c.Restarts++
	case faultRedis:
		if c.rng.IntN(2) == 0 {
			c.killRedis()
			c.RedisKills++
		}
		if err := c.srv.Restart(); err != nil {
			t.Fatalf("restarting Redis: %v", err)
		}
		c.RedisRestarts++
	case faultCut:
		c.CutConns += c.proxy.Cut()
		c.Cuts++
	case faultSilence:
		// the calls on them learn of it by their read timeout (go-redis's
		// default, 3 s: past the lease); a subscription when the hold ends
		c.SilencedConns += c.proxy.Silence(3 * lease)
		c.Silences++
	}
	return true
}

// everyKind reports whether each kind of fault has been injected, and a
// stale write of a stalled worker refused.
func (c *controller) everyKind() bool {
	zombies := c.fleet.staleSteps.Load()+c.fleet.staleOutcomes.Load() > 0
	return c.Kills > 0 && c.Stalls > 0 && c.Restarts > 0 && c.RedisRestarts > 0 && c.Cuts > 0 && c.Silences > 0 && zombies
}

// resumeDue resumes the stopped workers whose time has come.
func (c *controller) resumeDue() {
	for p, at := range c.resumeAt {
		if !time.Now().Before(at) {
			c.fleet.resume(p)
			delete(c.resumeAt, p)
		}
	}
}

// killRedis SIGKILLs the redis-server process; Restart then starts it
// again on its append-only file.
func (c *controller) killRedis() {
	t := c.t
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: c.srv.Addr()})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	pid := 0
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatalf("INFO server has no process_id:\n%s", info)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL to redis-server %d: %v", pid, err)
	}
}
