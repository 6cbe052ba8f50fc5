package web

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// login logs a new client in with token and returns it, its CSRF token
// and its session cookie's value.
func (f *fixture) login(token string) (*http.Client, string, string) {
	f.t.Helper()
	c := client()
	_, body := f.get(c, "/login")
	tok := csrfOf(body)
	if code, _, _ := f.post(c, "/login", url.Values{"token": {token}, "csrf": {tok}}); code != http.StatusSeeOther {
		f.t.Fatalf("login: %d", code)
	}
	u, _ := url.Parse(f.url + "/")
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			return c, tok, ck.Value
		}
	}
	f.t.Fatal("no session cookie after login")
	return nil, "", ""
}

// TestLogoutEndsSession: after "Log out", a copy of the session's cookie
// (another tab's, a proxy's log, a shared machine's profile) no longer
// opens the console; another session of the same second goes on. A
// helper's audit found the logout dropped the browser's cookie only, the
// session valid on the server for the rest of its 12 hours.
func TestLogoutEndsSession(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	f := newFixture(t, Options{Token: token}, false)
	c, tok, session := f.login(token)
	_, _, other := f.login(token)
	if code, _, _ := f.post(c, "/logout", url.Values{"csrf": {tok}}); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	if code, _ := f.get(client(), "/", "Cookie", sessionCookie+"="+session); code != http.StatusSeeOther {
		t.Errorf("the session's cookie replayed after its logout: %d, want a redirect to the login page", code)
	}
	if code, _ := f.get(client(), "/", "Cookie", sessionCookie+"="+other); code != http.StatusOK {
		t.Errorf("another session, after the first's logout: %d, want the page", code)
	}
}

// TestLogoutEndsOpenStream: a live stream opened with a session ends once
// that session is logged out (a copy of its cookie, in another tab or
// another's hands, no longer reads the console), while a stream of
// another session goes on. A review found the stream, checked once as it
// opened, streamed the counts and the followed job's changes for as long
// as its connection stayed open, past the logout and past the session's
// 12 hours.
func TestLogoutEndsOpenStream(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	f := newFixture(t, Options{Token: token}, false)
	c, tok, session := f.login(token)
	_, _, other := f.login(token)
	open := func(session string) (*bufio.Reader, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/events", nil)
		testkit.Must(t, err)
		req.Header.Set("Accept", "text/event-stream")
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
		resp, err := http.DefaultClient.Do(req)
		testkit.Must(t, err)
		br := bufio.NewReader(resp.Body)
		if line, _ := br.ReadString('\n'); resp.StatusCode != http.StatusOK || line != "retry: 3000\n" {
			t.Fatalf("/events with a session: %d, first line %q; want the stream", resp.StatusCode, line)
		}
		return br, func() { resp.Body.Close(); cancel() }
	}
	stream, done := open(session)
	defer done()
	others, done2 := open(other)
	defer done2()
	if code, _, _ := f.post(c, "/logout", url.Values{"csrf": {tok}}); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	rest, err := io.ReadAll(stream)
	if err != nil {
		t.Fatalf("the stream of a session logged out did not end: %v (read %.200q)", err, rest)
	}
	// the other session's stream still sends the overview every poll
	for {
		line, err := others.ReadString('\n')
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("another session's stream sent no event")
			}
			t.Fatalf("another session's stream ended with the first's logout: %v", err)
		}
		if strings.HasPrefix(line, "event: overview") {
			break
		}
	}
}
