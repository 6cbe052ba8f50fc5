package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
)

// limitConsole is a console with Token set, its limit on a fake clock.
func limitConsole(t *testing.T, o Options) (*console, http.Handler, *fakeClock) {
	t.Helper()
	f := newFixture(t, Options{}, false)
	o.Admin = f.ops
	c, err := newConsole(o)
	testkit.Must(t, err)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	c.logins.now = clock.now
	return c, c.routes(), clock
}

func limitGet(h http.Handler, path, remote string, set func(*http.Request)) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if set != nil {
		set(req)
	}
	req.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func limitBearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// TestLimitEvictionUnblocks: an address refused after loginFailures
// wrong bearer tokens stays refused for its minute when loginAddressesMax
// other addresses fail once each meanwhile (one IPv6 client holding a
// /48 has 65,536 /64s): a running minute is never forgotten, and the
// addresses past the table share one limit.
func TestLimitEvictionUnblocks(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	_, h, clock := limitConsole(t, Options{Token: token})
	const victim = "[2001:db8:aaaa:ffff::1]:50000"
	for range loginFailures {
		limitGet(h, "/workers", victim, limitBearer("wrong"))
	}
	if w := limitGet(h, "/workers", victim, limitBearer("wrong")); w.Code != http.StatusTooManyRequests {
		t.Fatalf("setup: not refused (%d)", w.Code)
	}
	for i := range loginAddressesMax {
		limitGet(h, "/workers", fmt.Sprintf("[2001:db8:aaaa:%x::1]:50000", i), limitBearer("wrong"))
	}
	clock.add(time.Second) // still within the refused address's minute
	checked := 0
	for range 3 * loginFailures {
		if w := limitGet(h, "/workers", victim, limitBearer("wrong")); w.Code != http.StatusTooManyRequests {
			checked++
		}
	}
	if checked > 0 {
		t.Errorf("an address refused 429 had %d more bearer guesses checked within the same minute after %d other /64s of its /48 failed once each",
			checked, loginAddressesMax)
	}
}

// TestLimitRotationUnlimited: a client rotating over loginAddressesMax+1
// /64s of its /48 has no /64 checked more than loginFailures times a
// minute.
func TestLimitRotationUnlimited(t *testing.T) {
	t.Parallel()
	c, _, _ := limitConsole(t, Options{Token: "s3cret-token"})
	l := c.logins
	checked := map[string]int{}
	const rounds = 8
	for range rounds {
		for i := range loginAddressesMax + 1 {
			r := httptest.NewRequest(http.MethodGet, "/workers", nil)
			r.RemoteAddr = fmt.Sprintf("[2001:db8:bbbb:%x::1]:1", i)
			a := clientAddress(r)
			l.check(a, func() bool { checked[a]++; return false })
		}
	}
	most, total := 0, 0
	for _, n := range checked {
		most, total = max(most, n), total+n
	}
	if most > loginFailures {
		t.Errorf("one /64 had %d wrong credentials checked within one minute (want at most %d); the /48 had %d checked in all",
			most, loginFailures, total)
	}
}

// TestLimitRightBearerNeverRefused: a client sending the right bearer
// token, sequentially and 200 at once, is never answered 429.
func TestLimitRightBearerNeverRefused(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	_, h, clock := limitConsole(t, Options{Token: token})
	const from = "203.0.113.9:1234"
	for i := range 500 {
		if w := limitGet(h, "/login", from, limitBearer(token)); w.Code == http.StatusTooManyRequests {
			t.Fatalf("request %d: 429", i)
		}
		// routes that need no Redis on success are not at hand: check the limit's answer itself
		if ok, wait := newLoginLimitFrom(clock).check("x", func() bool { return true }); !ok || wait != 0 {
			t.Fatal("right credentials refused")
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 200 {
		wg.Go(func() {
			w := limitGet(h, "/nope", from, limitBearer(token)) // 404 past auth, no Redis
			mu.Lock()
			codes[w.Code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for range 200 {
		w := limitGet(h, "/nope", from, limitBearer(token))
		codes[w.Code]++
	}
	if codes[http.StatusTooManyRequests] > 0 || codes[http.StatusNotFound] != 400 {
		t.Errorf("right bearer token: codes %v, want 400 answered past authentication (404), none 429", codes)
	}
}

func newLoginLimitFrom(c *fakeClock) *loginLimit {
	l := newLoginLimit()
	l.now = c.now
	return l
}

// TestLimitSessionWithWrongBearer: a request with a valid session
// cookie and a wrong bearer token goes through and is not counted, even
// from a refused address; without the session it is counted.
func TestLimitSessionWithWrongBearer(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	c, h, _ := limitConsole(t, Options{Token: token})
	const from = "203.0.113.7:50000"
	session := c.newSession()
	both := func(r *http.Request) {
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
		r.Header.Set("Authorization", "Bearer wrong")
	}
	for range 50 {
		if w := limitGet(h, "/nope", from, both); w.Code != http.StatusNotFound {
			t.Fatalf("session + wrong bearer: %d, want 404 past auth", w.Code)
		}
	}
	for i := range loginFailures {
		if w := limitGet(h, "/nope", from, limitBearer("wrong")); w.Code == http.StatusTooManyRequests {
			t.Fatalf("wrong bearer %d after 50 session+wrong-bearer requests: 429 (those were counted)", i+1)
		}
	}
	if w := limitGet(h, "/nope", from, limitBearer("wrong")); w.Code != http.StatusTooManyRequests {
		t.Fatalf("setup: wrong bearer %d: %d, want 429", loginFailures+1, w.Code)
	} else if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || strings.Contains(w.Body.String(), "wrong") {
		t.Errorf("429: %q %q", ct, w.Body.String())
	}
	if w := limitGet(h, "/nope", from, both); w.Code != http.StatusNotFound {
		t.Errorf("session + wrong bearer from a refused address: %d, want 404 past auth (the docs: a session cookie is not counted)", w.Code)
	}
	// a refused address's browser keeps its session on /events too
	if w := limitGet(h, "/nope", from, func(r *http.Request) { r.AddCookie(&http.Cookie{Name: sessionCookie, Value: session}) }); w.Code != http.StatusNotFound {
		t.Errorf("session from a refused address: %d", w.Code)
	}
}

// TestLimitExemptPaths: credentials sent to the open paths are neither
// checked nor counted, and the path tricks do not reach a page.
func TestLimitExemptPaths(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	_, h, _ := limitConsole(t, Options{Token: token, User: "ops", Password: "pw"})
	const from = "203.0.113.7:50000"
	for range 20 {
		for _, p := range []string{"/static/app.js", "/login"} {
			limitGet(h, p, from, limitBearer("wrong"))
			limitGet(h, p, from, func(r *http.Request) { r.SetBasicAuth("ops", "wrong") })
		}
	}
	if w := limitGet(h, "/nope", from, limitBearer(token)); w.Code != http.StatusNotFound {
		t.Errorf("right bearer after wrong ones on open paths: %d, want 404 past auth (open paths counted?)", w.Code)
	}
	for _, p := range []string{"/static/../workers", "/static/%2e%2e/workers", "/static/..%2fworkers", "/login/../workers", "/static//..//workers"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL, _ = url.Parse(p)
		req.RequestURI = p
		req.RemoteAddr = from
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == http.StatusOK && strings.Contains(w.Body.String(), "orker") && !strings.Contains(w.Body.String(), "Log in") {
			t.Errorf("%s without credentials: 200 workers page", p)
		}
	}
}

// TestLimitWindowEdge: refused until the very end of the minute, with
// Retry-After rounded up to 1 at its last nanosecond; checked again at its
// end.
func TestLimitWindowEdge(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	l := newLoginLimitFrom(clock)
	start := clock.now()
	for range loginFailures {
		l.check("a", func() bool { return false })
	}
	clock.add(loginWindow - time.Nanosecond)
	ran := false
	if _, wait := l.check("a", func() bool { ran = true; return false }); wait != time.Nanosecond || ran {
		t.Errorf("at the window's last ns: wait %v, checked %v", wait, ran)
	}
	w := httptest.NewRecorder()
	if s := retryAfter(w, time.Nanosecond); s != 1 || w.Header().Get("Retry-After") != "1" {
		t.Errorf("Retry-After %d", s)
	}
	clock.add(time.Nanosecond)
	ran = false
	if _, wait := l.check("a", func() bool { ran = true; return false }); wait != 0 || !ran {
		t.Errorf("at the window's end (%v after %v): wait %v, checked %v", clock.now().Sub(start), start, wait, ran)
	}
}

// TestLimitClockBack: with the clock moving back and forth, the
// remembered addresses and the order stay bounded.
func TestLimitClockBack(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	l := newLoginLimitFrom(clock)
	for i := range 6 * loginAddressesMax {
		if i%3 == 0 {
			clock.add(-time.Hour)
		} else {
			clock.add(2 * time.Minute)
		}
		l.check("a"+strconv.Itoa(i%(3*loginAddressesMax)), func() bool { return false })
		if len(l.fails) > loginAddressesMax+1 || len(l.order) > 2*loginAddressesMax+2 {
			t.Fatalf("after %d: %d addresses, %d in order", i, len(l.fails), len(l.order))
		}
	}
}

// TestLimitCancelledOverview: a request cancelled while counting the
// registry errs; it does not render an Uncounted page.
func TestLimitCancelledOverview(t *testing.T) {
	t.Parallel()
	o := cancelCountOps{}
	var logged []error
	hb := newHub(o, time.Second, func(err error) { logged = append(logged, err) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	snap, err := hb.current(ctx, time.Hour)
	if err == nil {
		t.Errorf("cancelled read: snapshot Uncounted=%v, no error", snap.Uncounted)
	}
	if len(logged) > 0 {
		t.Errorf("cancelled read logged %v", logged)
	}
}

type cancelCountOps struct{ ops }

func (cancelCountOps) Workers(context.Context) ([]sluicetype.WorkerInfo, error) { return nil, nil }

func (cancelCountOps) QueuesLive(ctx context.Context, queues map[string]int) ([]admin.QueueLive, error) {
	out := make([]admin.QueueLive, admin.MaxQueuesListed)
	for i := range out {
		out[i] = admin.QueueLive{Queue: "q" + strconv.Itoa(i), Partitions: 1, Err: errNotRead}
	}
	return out, nil
}

func (cancelCountOps) QueueCount(ctx context.Context) (int, error) { return 0, ctx.Err() }

// TestLimitLoopbackRotation: a local client (another user of the host, a
// console on loopback with a token) that binds its connections to other
// addresses of 127.0.0.0/8 is counted as one: no more than loginFailures
// wrong tokens checked in a minute.
func TestLimitLoopbackRotation(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	_, h, _ := limitConsole(t, Options{Token: token})
	srv := httptest.NewServer(h)
	defer srv.Close()
	checked := 0
	for a := 2; a <= 7; a++ {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(a))}}
		cl := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for range loginFailures + 2 {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/nope", nil)
			req.Header.Set("Authorization", "Bearer wrong")
			resp, err := cl.Do(req)
			testkit.Must(t, err)
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests {
				checked++
			}
		}
	}
	if checked > loginFailures {
		t.Errorf("one local client had %d wrong bearer tokens checked in a minute from 6 loopback addresses, want at most %d", checked, loginFailures)
	}
}
