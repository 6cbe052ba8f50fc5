package web

import (
	"net/http"
	"net/url"
	"testing"
)

// TestLogoutEndsSession: after "Log out", a copy of the session's cookie
// (another tab's, a proxy's log, a shared machine's profile) no longer
// opens the console; another session of the same second goes on. A
// helper's audit found the logout dropped the browser's cookie only, the
// session valid on the server for the rest of its 12 hours.
func TestLogoutEndsSession(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	f := newFixture(t, Options{Token: token}, false)
	login := func() (*http.Client, string, string) {
		c := client()
		_, body := f.get(c, "/login")
		tok := csrfOf(body)
		if code, _, _ := f.post(c, "/login", url.Values{"token": {token}, "csrf": {tok}}); code != http.StatusSeeOther {
			t.Fatalf("login: %d", code)
		}
		u, _ := url.Parse(f.url + "/")
		for _, ck := range c.Jar.Cookies(u) {
			if ck.Name == sessionCookie {
				return c, tok, ck.Value
			}
		}
		t.Fatal("no session cookie after login")
		return nil, "", ""
	}
	c, tok, session := login()
	_, _, other := login()
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
