package web

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds of the failed-login limit.
const (
	loginFailures     = 5           // failed logins an address may make per window
	loginWindow       = time.Minute // from an address's first failure
	loginAddressesMax = 10000       // addresses remembered at once
)

// loginLimit counts failed logins per client address: an address that
// failed loginFailures times within loginWindow of its first failure is
// refused, its token not checked, until that window ends. Another
// address is never refused for it. At most loginAddressesMax addresses
// are remembered: past windows are dropped first, then the oldest.
type loginLimit struct {
	now func() time.Time // time.Now; tests set their own

	mu    sync.Mutex
	fails map[string]*loginFails // by address
}

// loginFails are an address's failed logins of the window it started.
type loginFails struct {
	n     int
	start time.Time
}

func newLoginLimit() *loginLimit {
	return &loginLimit{now: time.Now, fails: map[string]*loginFails{}}
}

// clientAddress is the address r came from: its connection's host. A
// forwarding header is not believed (anyone may send one), so behind a
// proxy every client shares the proxy's limit.
func clientAddress(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// blocked reports whether addr is refused now, and for how much longer.
func (l *loginLimit) blocked(addr string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.fails[addr]
	if !ok {
		return false, 0
	}
	left := f.start.Add(loginWindow).Sub(now)
	if left <= 0 {
		delete(l.fails, addr)
		return false, 0
	}
	return f.n >= loginFailures, left
}

// failed records a failed login from addr.
func (l *loginLimit) failed(addr string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.fails[addr]; ok && now.Before(f.start.Add(loginWindow)) {
		f.n++
		return
	}
	if len(l.fails) >= loginAddressesMax {
		l.evict(now)
	}
	l.fails[addr] = &loginFails{n: 1, start: now}
}

// succeeded forgets addr's failures.
func (l *loginLimit) succeeded(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, addr)
}

// evict makes room for one address: it drops the windows that ended,
// and the oldest window when none did.
func (l *loginLimit) evict(now time.Time) {
	var oldest string
	for a, f := range l.fails {
		if !now.Before(f.start.Add(loginWindow)) {
			delete(l.fails, a)
		} else if oldest == "" || f.start.Before(l.fails[oldest].start) {
			oldest = a
		}
	}
	if len(l.fails) >= loginAddressesMax {
		delete(l.fails, oldest)
	}
}
