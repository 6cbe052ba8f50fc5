package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

const (
	// silenceLease is the workers' lease in TestChaosSilence.
	silenceLease = 3 * time.Second
	// silenceRead is their Redis client's read timeout: how long a call
	// on a silenced connection waits to learn of it, well inside a lease.
	silenceRead = 250 * time.Millisecond
	// silenceHold is how long a silenced connection stays open before it
	// is cut, longer than a lease: a worker that waits on one without a
	// bound (a subscription's confirmation) loses its leases meanwhile.
	silenceHold = 3 * silenceLease
	// silentSubscribes is the share of subscriptions whose SUBSCRIBE
	// the proxy silences, with its connection (Proxy.SetSilentRequests)
	silentSubscribes = 0.5
)

// TestChaosSilence runs ledger jobs on worker processes whose only fault
// is silence, as a path that drops every packet leaves a connection until
// TCP gives up, while new connections work: now and then every open
// connection through the proxy goes silent (Proxy.Silence), and so does
// the connection of a share of the subscriptions as they subscribe
// (Proxy.SetSilentRequests), which workers replaced now and then make
// anew. Every other job runs for a lease and a half, so that its lease is
// lost unless it is renewed. A call on a silenced connection learns of it by its read timeout,
// a twelfth of a lease, and goes on over a new connection. No worker dies
// and none stalls, so no lease may be lost: no job may be charged a crash
// (the class of the silent cancel subscription's bug, 2026-12-05, whose
// worker renewed nothing while it waited for its subscription's
// confirmation), and every worker must shut down in time when asked.
// Every job must also complete with its checkpoints and every effect be
// applied once.
func TestChaosSilence(t *testing.T) {
	t.Parallel()
	dur := chaosDuration(t) / 2
	ctx := context.Background()
	srv, proxy, seed := startProxied(t)
	cfg := workerConfig{
		Concurrency: 4, Lease: silenceLease, Renew: silenceLease / 4, Maintenance: 200 * time.Millisecond,
		NoRetries: true, ReadTimeout: silenceRead,
	}
	// every other job runs past a lease: it needs its renewals
	r := startLedgerRun(t, srv, proxy, cfg, &producer{backlog: backlog, ledgerOnly: true, slowPause: silenceLease * 3 / 2 / ledgerSteps})
	f := r.fleet
	proxy.SetSilentRequests(silentSubscribes, silenceHold, seed, Commands("subscribe", "ssubscribe", "psubscribe"))
	rng := rand.New(rand.NewPCG(seed, 2))
	silences, starting := 0, 0
	for until := time.Now().Add(dur); time.Now().Before(until) || silences < 3 || starting == 0; {
		if rng.IntN(3) == 0 { // one worker replaced: it subscribes anew
			f.term(f.live[0])
			f.start(f.cfg)
			starting++
		}
		proxy.Silence(silenceHold)
		silences++
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
	}
	ids := r.drain(ctx)
	for len(f.live) > 0 {
		f.term(f.live[0])
	}
	lst, ran := checkLedgerRun(ctx, t, srv.Addr(), r.ns, ids, f.starts.counts(), func(int) int { return 0 })
	summary := fmt.Sprintf("%s (seed %d): %d jobs, %d attempts started; %d silences (%d as a worker started), %d connections silenced; %d crashes charged to %d jobs, %d attempts spent",
		dur, seed, len(ids), ran, silences, starting, proxy.Silenced(), lst.Crashes, lst.Crashed, lst.Attempts)
	t.Log(summary)
	if proxy.Silenced() == 0 || len(ids) == 0 {
		t.Errorf("nothing was silenced: %s", summary)
	}
}
