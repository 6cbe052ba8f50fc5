package web

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestSecureCookies: with Options.SecureCookies every cookie the console
// sets (CSRF, session, flash, and the clearing of flash and session) is
// Secure over plain HTTP, as a console behind a TLS-terminating proxy
// sees its requests; without it none is. A helper's audit found the
// cookies Secure only when the console served TLS itself, so behind such
// a proxy the session cookie could go out over plain HTTP.
func TestSecureCookies(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		const token = "s3cret-token"
		f := newFixture(t, Options{Token: token, SecureCookies: secure}, false)
		id := f.enqueue(work{})
		// the jar sends no Secure cookie over http: the test keeps them
		jar := map[string]string{}
		hc := &http.Client{Timeout: testkit.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		seen := map[string]bool{} // "name" set, "name-" cleared
		do := func(method, path string, form url.Values) {
			t.Helper()
			req, err := http.NewRequest(method, f.url+path, strings.NewReader(form.Encode()))
			testkit.Must(t, err)
			if method == http.MethodPost {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			for n, v := range jar {
				req.AddCookie(&http.Cookie{Name: n, Value: v})
			}
			resp, err := hc.Do(req)
			testkit.Must(t, err)
			resp.Body.Close()
			if resp.StatusCode >= 400 {
				t.Fatalf("SecureCookies %v: %s %s: %d", secure, method, path, resp.StatusCode)
			}
			for _, ck := range resp.Cookies() {
				name := ck.Name
				if ck.MaxAge < 0 {
					name += "-"
					delete(jar, ck.Name)
				} else {
					jar[ck.Name] = ck.Value
				}
				seen[name] = true
				if ck.Secure != secure {
					t.Errorf("SecureCookies %v: %s %s set cookie %s (%q) with Secure %v", secure, method, path, name, ck.String(), ck.Secure)
				}
			}
		}
		do(http.MethodGet, "/login", nil)
		csrf := url.Values{"csrf": {jar[csrfCookie]}}
		do(http.MethodPost, "/login", url.Values{"token": {token}, "csrf": {jar[csrfCookie]}})
		do(http.MethodPost, "/act/cancel", url.Values{"id": {id}, "csrf": {jar[csrfCookie]}})
		do(http.MethodGet, jobPath(id), nil) // takes the flash
		do(http.MethodPost, "/logout", csrf)
		var names []string
		for n := range seen {
			names = append(names, n)
		}
		slices.Sort(names)
		want := []string{flashCookie, flashCookie + "-", csrfCookie, sessionCookie, sessionCookie + "-"}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("SecureCookies %v: cookies set %v, want %v", secure, names, want)
		}
	}
}
