package web

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Bounds of the failed-login limit.
const (
	loginFailures     = 5           // wrong credentials an address may give per window
	loginWindow       = time.Minute // from an address's first failure
	loginAddressesMax = 10000       // addresses remembered at once
)

// loginLimit counts wrong credentials per client address (clientAddress):
// the login form's token, a bearer token, basic auth. An address that gave
// loginFailures wrong ones within loginWindow of its first is refused, its
// credentials not checked, until that window ends. Another address is
// never refused for it.
//
// A check and its count are one step under the mutex, so an address has
// at most loginFailures wrong credentials checked per window however many
// requests it sends at once. A right one changes nothing: behind a proxy,
// an operator's login does not forgive an attacker's failures.
//
// At most loginAddressesMax addresses are remembered, and an ended window
// is forgotten; a live one is not (forgetting a refused address would lift
// its refusal): while the table is full of live windows, the addresses
// not in it share one window of their own (overflowKey), so a client with
// more addresses than the table holds is limited all the same.
type loginLimit struct {
	now func() time.Time // time.Now; tests set their own

	mu    sync.Mutex
	fails map[string]*loginFails // by address
	// order holds the windows of fails in the order they started, oldest
	// first (now does not go back), for drop to find the ended and the
	// oldest in O(1) amortized: an entry whose address's window ended or
	// started again is stale and skipped.
	order []loginStart
}

// loginFails are an address's wrong credentials of the window it started.
type loginFails struct {
	n     int
	start time.Time
}

// loginStart is a window of loginLimit.order.
type loginStart struct {
	addr  string
	start time.Time
}

// overflowKey counts the addresses that find the table full of live
// windows, together.
const overflowKey = "overflow"

func newLoginLimit() *loginLimit {
	return &loginLimit{now: time.Now, fails: map[string]*loginFails{}}
}

// clientAddress is the address r came from, as the limit counts it: its
// connection's host, an IPv6 one by its /64 prefix (a client commonly
// holds a whole /64 and could try each of its addresses), and every
// loopback address as one (a local user may bind any of 127.0.0.0/8). A
// forwarding header is not believed (anyone may send one), so behind a
// proxy every client shares the proxy's limit.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.IsLoopback() {
		return "loopback"
	}
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// check runs right, which checks one request's credentials and must not
// wait on anything (it runs under the mutex), unless addr is refused; a
// false answer counts against addr. It returns right's answer, or, with
// ok false, how long addr is still refused (right not run).
func (l *loginLimit) check(addr string, right func() bool) (ok bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	f, found := l.fails[addr]
	if !found && len(l.fails) >= loginAddressesMax {
		if l.drop(now); len(l.fails) >= loginAddressesMax {
			addr = overflowKey
			f, found = l.fails[addr]
		}
	}
	live := found && now.Before(f.start.Add(loginWindow))
	if live && f.n >= loginFailures {
		return false, f.start.Add(loginWindow).Sub(now)
	}
	if right() {
		return true, 0
	}
	if live {
		f.n++
		return false, 0
	}
	if found {
		delete(l.fails, addr) // its window ended: a new one starts
	}
	l.drop(now)
	l.fails[addr] = &loginFails{n: 1, start: now} // room made above: at most loginAddressesMax, and overflowKey
	l.order = append(l.order, loginStart{addr: addr, start: now})
	if len(l.order) > 2*loginAddressesMax {
		l.compact() // only when now went back: order is bounded anyway
	}
	return false, 0
}

// drop forgets the ended windows at the front of order, up to the first
// live one. Each entry is dropped once, so a failure costs O(1)
// amortized.
func (l *loginLimit) drop(now time.Time) {
	for len(l.order) > 0 {
		e := l.order[0]
		f, ok := l.fails[e.addr]
		current := ok && f.start.Equal(e.start)
		if current && now.Before(e.start.Add(loginWindow)) {
			return
		}
		if current {
			delete(l.fails, e.addr)
		}
		l.order[0] = loginStart{} // the address's string may be freed
		l.order = l.order[1:]
	}
}

// compact drops the stale entries of order.
func (l *loginLimit) compact() {
	kept := make([]loginStart, 0, len(l.fails))
	for _, e := range l.order {
		if f, ok := l.fails[e.addr]; ok && f.start.Equal(e.start) {
			kept = append(kept, e)
		}
	}
	l.order = kept
}

// retryAfter sets w's Retry-After header for wait and returns its seconds.
func retryAfter(w http.ResponseWriter, wait time.Duration) int {
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs
}
