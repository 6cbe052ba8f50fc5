package chaos

import (
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"
)

// Silence makes every live connection silent, as a path that drops every
// packet does while TCP has not yet given up: nothing more is forwarded
// either way (what the client sends never reaches Redis, what Redis sends
// never reaches the client), and nothing is refused or closed, until hold
// has passed, when both sides are cut. A client learns of it only by a
// read timeout; one that reads without a timeout (a pub/sub subscription)
// waits the whole hold. Connections made after the call are forwarded as
// before: the network came back, the old connections did not. It returns
// how many client connections it silenced.
func (p *Proxy) Silence(hold time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for l := range p.links {
		if p.silenceLocked(l, hold) {
			n++
		}
	}
	return n
}

// SetSilentRequests silences at random the connections of requests that
// match, for chaos runs: each matching request, with probability rate, is
// not forwarded, and its connection goes silent from then on as Silence
// makes it, until hold has passed. Unlike the other faults it applies to
// any request, a SUBSCRIBE or a PING among them, and on a connection that
// subscribed: a silenced request needs no reply matched to it. Draws come
// from a math/rand/v2 PCG seeded with seed, one per matching request on a
// connection not yet silenced. rate 0 turns it off.
func (p *Proxy) SetSilentRequests(rate float64, hold time.Duration, seed uint64, match func(args []string) bool) {
	if !(rate >= 0 && rate <= 1) {
		panic("chaos: SetSilentRequests: rate must be between 0 and 1")
	}
	p.fmu.Lock()
	defer p.fmu.Unlock()
	p.silent = nil
	if rate > 0 {
		p.silent = &silentRequests{rate: rate, hold: hold, rng: rand.New(rand.NewPCG(seed, seed)), match: match}
	}
}

// Silenced reports how many client connections have been silenced, by
// Silence and SetSilentRequests.
func (p *Proxy) Silenced() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.silenced
}

// silentRequests are SetSilentRequests' settings.
type silentRequests struct {
	rate  float64
	hold  time.Duration
	rng   *rand.Rand
	match func(args []string) bool
}

// silences reports whether a request (args builds its arguments) is to
// be silenced, and for how long its connection stays open then.
func (p *Proxy) silences(args func() []string) (time.Duration, bool) {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	s := p.silent
	if s == nil || s.match != nil && !s.match(args()) {
		return 0, false
	}
	return s.hold, s.rng.Float64() < s.rate
}

// silenceLink silences l, unless it is silenced already, for hold.
func (p *Proxy) silenceLink(l *link, hold time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silenceLocked(l, hold)
}

// silenceLocked silences l, unless it is silenced already, and cuts it
// once hold has passed (or the proxy closed). It reports whether it
// silenced l. p.mu is held.
func (p *Proxy) silenceLocked(l *link, hold time.Duration) bool {
	if l.client.muted.Swap(true) {
		return false // its cut is due already
	}
	l.server.muted.Store(true)
	p.silenced++
	p.wg.Go(func() {
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.quit:
		}
		l.client.Close()
		l.server.Close()
	})
	return true
}

// A muteConn is a connection whose writes can be muted (Silence): from
// then on what is written to it is discarded, as a path that drops every
// packet would, the writer none the wiser.
type muteConn struct {
	net.Conn
	muted atomic.Bool
}

func (m *muteConn) Write(b []byte) (int, error) {
	if m.muted.Load() {
		return len(b), nil
	}
	return m.Conn.Write(b)
}
