package web

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// limitDo sends a method request to path from remote with the
// Authorization header auth ("" for none); one that is not a GET carries
// a CSRF token, which the console's guard asks for before authentication.
func limitDo(h http.Handler, method, path, remote, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if method != http.MethodGet {
		csrf := strings.Repeat("c", 43)
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
		req.Header.Set(csrfHeader, csrf)
	}
	req.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// TestWrongCredentials401: wrong credentials of a scheme the console
// checks are answered 401 with that scheme's challenge, a GET's too (it
// was sent to the login page, a 303 a script follows to a 200 page), and
// each counts once against the failed-login limit: the fifth wrong one is
// still checked and refused 401, the right token after it 429. A GET
// with no credentials (a browser's) is still sent to the login page, a
// POST with none still refused 401, with the challenges of both schemes
// (a 401 without one was against RFC 9110). With no User set, a Basic header is
// not the console's (a proxy's in front of it): that GET goes to the
// login page too.
func TestWrongCredentials401(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	_, h, _ := limitConsole(t, Options{Token: token, User: "ops", Password: "pw"})
	const from = "203.0.113.7:50000"
	for i, tc := range []struct {
		method, auth, challenge string
	}{
		{http.MethodGet, "Bearer wrong", "Bearer "},
		{http.MethodPost, "Bearer wrong", "Bearer "},
		{http.MethodGet, "bearer wrong", "Bearer "},
		{http.MethodGet, basic("ops", "wrong"), "Basic "},
		{http.MethodDelete, "BEARER wrong", "Bearer "},
	} {
		w := limitDo(h, tc.method, "/workers", from, tc.auth)
		if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), tc.challenge) {
			t.Errorf("wrong credentials %d (%s %q): %d, WWW-Authenticate %q; want 401 with a %q challenge (Location %q)",
				i+1, tc.method, tc.auth, w.Code, w.Header().Get("WWW-Authenticate"), tc.challenge, w.Header().Get("Location"))
		}
	}
	if w := limitDo(h, http.MethodGet, "/nope", from, "Bearer "+token); w.Code != http.StatusTooManyRequests {
		t.Errorf("the right token after %d wrong credentials: %d, want 429 (each counted once)", loginFailures, w.Code)
	}

	const other = "198.51.100.2:40000"
	if w := limitDo(h, http.MethodGet, "/workers", other, ""); w.Code != http.StatusSeeOther || !strings.HasSuffix(w.Header().Get("Location"), "/login") {
		t.Errorf("a GET with no credentials: %d to %q, want 303 to the login page", w.Code, w.Header().Get("Location"))
	}
	if w := limitDo(h, http.MethodPost, "/act/cancel", other, ""); w.Code != http.StatusUnauthorized ||
		strings.Join(w.Header().Values("WWW-Authenticate"), "; ") != `Bearer realm="sluice"; Basic realm="sluice", charset="UTF-8"` {
		t.Errorf("a POST with no credentials: %d, challenges %q; want 401 naming Bearer and Basic", w.Code, w.Header().Values("WWW-Authenticate"))
	}

	_, only, _ := limitConsole(t, Options{Token: token})
	if w := limitDo(only, http.MethodGet, "/workers", other, basic("ops", "pw")); w.Code != http.StatusSeeOther {
		t.Errorf("a Basic header to a console with no User: %d, want 303 to the login page (not its credentials)", w.Code)
	}
}

// TestAuthSchemeCaseInsensitive: the Bearer and Basic schemes are matched
// case-insensitively (RFC 7235, section 2.1), with one or more spaces
// after them: "bearer <token>" was taken for no credentials, a GET sent
// to the login page.
func TestAuthSchemeCaseInsensitive(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	_, h, _ := limitConsole(t, Options{Token: token, User: "ops", Password: "pw"})
	const from = "203.0.113.7:50000"
	right := strings.TrimPrefix(basic("ops", "pw"), "Basic ")
	for _, auth := range []string{"Bearer " + token, "bearer " + token, "BEARER " + token, "BeArEr  " + token,
		"Basic " + right, "basic " + right, "BASIC " + right} {
		// /nope: 404 once past authentication (no Redis read)
		if w := limitDo(h, http.MethodGet, "/nope", from, auth); w.Code != http.StatusNotFound {
			t.Errorf("%q: %d, want 404 past authentication (Location %q)", auth, w.Code, w.Header().Get("Location"))
		}
	}
}
