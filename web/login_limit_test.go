package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
)

// fakeClock is a clock tests move on by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestLoginLimit: after loginFailures wrong tokens within a minute from
// one address, the login form answers that address 429 with Retry-After,
// the right token included (it is not checked); another address logs in
// meanwhile, and the first does once the minute is over. A helper's
// audit found the login form took wrong tokens without limit.
func TestLoginLimit(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	f := newFixture(t, Options{}, false)
	c, err := newConsole(Options{Admin: f.ops, Token: token})
	testkit.Must(t, err)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	c.logins.now = clock.now
	h := c.routes()
	csrf := strings.Repeat("c", 43)
	login := func(from, tok string) *httptest.ResponseRecorder {
		t.Helper()
		form := url.Values{"token": {tok}, "csrf": {csrf}}
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
		req.RemoteAddr = from
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	const (
		attacker = "203.0.113.7:50000"
		other    = "198.51.100.2:40000"
	)
	for i := range loginFailures {
		if w := login(attacker, "wrong"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, w.Code)
		}
		clock.add(time.Second)
	}
	w := login("203.0.113.7:50001", token) // another port of the same host
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("the right token after %d wrong ones from the same address: %d, want 429", loginFailures, w.Code)
	}
	if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || s <= 0 || s > 60 {
		t.Errorf("429 with Retry-After %q, want seconds in 1..60", w.Header().Get("Retry-After"))
	}
	if body := w.Body.String(); !strings.Contains(body, "Too many failed logins") || hasCookie(w, sessionCookie) {
		t.Errorf("429 page does not say to wait, or set a session:\n%s", body)
	}
	if w := login(other, token); w.Code != http.StatusSeeOther || !hasCookie(w, sessionCookie) {
		t.Fatalf("the right token from another address meanwhile: %d, want 303 with a session", w.Code)
	}
	clock.add(loginWindow)
	if w := login(attacker, token); w.Code != http.StatusSeeOther || !hasCookie(w, sessionCookie) {
		t.Fatalf("the right token once the window passed: %d, want 303 with a session", w.Code)
	}
}

// TestLoginLimitBounded: the limit remembers at most loginAddressesMax
// addresses, and a new one is counted when it is full.
func TestLoginLimitBounded(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	l := newLoginLimit()
	l.now = clock.now
	for i := range loginAddressesMax + 10 {
		l.failed("a" + strconv.Itoa(i))
	}
	if n := len(l.fails); n > loginAddressesMax {
		t.Fatalf("%d addresses remembered, want at most %d", n, loginAddressesMax)
	}
	for range loginFailures {
		l.failed("last")
	}
	if no, _ := l.blocked("last"); !no {
		t.Error("an address new to a full limit is not refused after its failures")
	}
	clock.add(loginWindow)
	l.failed("after")
	if n := len(l.fails); n != 1 {
		t.Errorf("%d addresses remembered after every window ended and one failure, want 1", n)
	}
}

func hasCookie(w *httptest.ResponseRecorder, name string) bool {
	for _, ck := range w.Result().Cookies() {
		if ck.Name == name && ck.Value != "" {
			return true
		}
	}
	return false
}
