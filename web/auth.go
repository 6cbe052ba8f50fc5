package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Cookies of the console.
const (
	sessionCookie = "sluice_session"
	csrfCookie    = "sluice_csrf"
	flashCookie   = "sluice_flash"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
	sessionTTL    = 12 * time.Hour
)

// authenticate lets a request through when Options.Auth let it reach here
// and no Token or basic auth is set, or when it carries a session cookie,
// the bearer token or the basic auth credentials. The login page and the
// static files need none. Bearer and basic credentials count against the
// failed-login limit (loginLimit) as the login form's token does: from an
// address it refuses they are answered 429, not checked.
//
// A request that carries wrong credentials of a scheme the console checks
// is answered 401 with that scheme's challenge, whatever its method: it
// comes from a client that authenticates itself (a script, curl), which a
// redirect to the login page would answer with a 200 page it cannot use.
// A browser's GET with no credentials is sent to the login page.
func (c *console) authenticate(next http.Handler) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.o.Token == "" && c.o.User == "" || open(r) || c.session(r) {
			next.ServeHTTP(w, r)
			return
		}
		if scheme := c.credentials(r); scheme != "" {
			ok, wait := c.logins.check(clientAddress(r), func() bool { return c.rightCredentials(r) })
			if wait > 0 {
				secs := retryAfter(w, wait)
				http.Error(w, fmt.Sprintf("sluice web: too many failed logins from your address: wait %d seconds", secs),
					http.StatusTooManyRequests)
				return
			}
			if ok {
				next.ServeHTTP(w, r)
				return
			}
			// counted once, above; the challenge is of the scheme sent
			if scheme == schemeBearer {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sluice", error="invalid_token"`)
			} else {
				w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
			}
			http.Error(w, "sluice web: wrong credentials", http.StatusUnauthorized)
			return
		}
		if c.o.User != "" && c.o.Token == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
			http.Error(w, "sluice web: authentication required", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
			http.Redirect(w, r, c.path("/login"), http.StatusSeeOther)
			return
		}
		// a 401 names the schemes that would be let through (RFC 9110)
		w.Header().Add("WWW-Authenticate", `Bearer realm="sluice"`)
		if c.o.User != "" {
			w.Header().Add("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
		}
		http.Error(w, "sluice web: authentication required", http.StatusUnauthorized)
	})
	if c.o.Auth != nil {
		wrapped := c.o.Auth(inner)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/static/") {
				inner.ServeHTTP(w, r)
				return
			}
			wrapped.ServeHTTP(w, r)
		})
	}
	return inner
}

// open reports whether r is for a page anyone may load: the login page
// (and its form) and the static files.
func open(r *http.Request) bool {
	return r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/static/")
}

// session reports whether r carries a valid session cookie (the login
// form's, with a Token set).
func (c *console) session(r *http.Request) bool {
	if c.o.Token == "" {
		return false
	}
	ck, err := r.Cookie(sessionCookie)
	return err == nil && c.validSession(ck.Value)
}

// Authorization schemes the console checks.
const (
	schemeBearer = "Bearer"
	schemeBasic  = "Basic"
)

// credentials returns the scheme of the credentials r carries that the
// console checks: Bearer with a Token set, Basic with a User set; "" for
// none.
func (c *console) credentials(r *http.Request) string {
	scheme, _ := authorization(r)
	switch {
	case c.o.Token != "" && scheme == schemeBearer:
		return schemeBearer
	case c.o.User != "" && scheme == schemeBasic:
		return schemeBasic
	}
	return ""
}

// rightCredentials reports whether r carries the bearer token or the
// basic auth credentials.
func (c *console) rightCredentials(r *http.Request) bool {
	scheme, cred := authorization(r)
	switch {
	case c.o.Token != "" && scheme == schemeBearer:
		return equal(cred, c.o.Token)
	case c.o.User != "" && scheme == schemeBasic:
		b, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return false
		}
		u, p, ok := strings.Cut(string(b), ":")
		return ok && equal(u, c.o.User) && equal(p, c.o.Password)
	}
	return false
}

// authorization splits r's Authorization header into its scheme, Bearer
// or Basic (another is returned as it is), and its credentials. A scheme
// is matched case-insensitively, as RFC 7235 (section 2.1) has it: a
// client's "bearer" or "BASIC" is checked, not taken for no credentials
// (a wrong one went uncounted, a right one to the login page); the
// spaces after it are skipped (1*SP).
func authorization(r *http.Request) (scheme, cred string) {
	scheme, cred, _ = strings.Cut(r.Header.Get("Authorization"), " ")
	for _, s := range []string{schemeBearer, schemeBasic} {
		if strings.EqualFold(scheme, s) {
			scheme = s
		}
	}
	return scheme, strings.TrimLeft(cred, " ")
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// A session cookie is its expiry (unix seconds), a random name and the
// MAC of both under the console's secret: valid until then, only for
// this console process, and until its logout (revoked).
func (c *console) newSession() string {
	b := make([]byte, 16)
	rand.Read(b)
	head := strconv.FormatInt(time.Now().Add(sessionTTL).Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(b)
	return head + "." + c.mac(head)
}

// sessionExpiry is when session v ends, if it is one this console signed.
func (c *console) sessionExpiry(v string) (int64, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || !equal(v[i+1:], c.mac(v[:i])) {
		return 0, false
	}
	exp, _, ok := strings.Cut(v[:i], ".")
	t, err := strconv.ParseInt(exp, 10, 64)
	return t, ok && err == nil
}

func (c *console) validSession(v string) bool {
	t, ok := c.sessionExpiry(v)
	if !ok || time.Now().Unix() >= t {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, gone := c.revoked[v]
	return !gone
}

// revoke ends session v before its expiry: a copy of its cookie (another
// tab's, a proxy's log) no longer opens the console after the logout.
// Sessions past their expiry are forgotten.
func (c *console) revoke(v string) {
	t, ok := c.sessionExpiry(v)
	now := time.Now().Unix()
	c.mu.Lock()
	defer c.mu.Unlock()
	for s, exp := range c.revoked {
		if exp <= now {
			delete(c.revoked, s)
		}
	}
	if ok && t > now {
		if c.revoked == nil {
			c.revoked = map[string]int64{}
		}
		c.revoked[v] = t
	}
}

func (c *console) mac(s string) string {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(s))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfToken returns the request's CSRF token, setting a new one in a
// cookie when it has none. Every form carries it back in a field; a
// script sends it in the X-CSRF-Token header.
func (c *console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
		return ck.Value
	}
	b := make([]byte, 32)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: c.cookiePath(), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure(r)})
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: tok})
	return tok
}

// validCSRF reports whether r carries, in its form or header, the token
// of its CSRF cookie.
func (c *console) validCSRF(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) < 32 {
		return false
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return equal(got, ck.Value)
}

// secure reports whether the cookies of the answer to r are Secure:
// always with Options.SecureCookies (a proxy terminates TLS), else when
// the console serves TLS itself.
func (c *console) secure(r *http.Request) bool {
	return c.o.SecureCookies || r.TLS != nil
}

func (c *console) cookiePath() string {
	if c.o.Prefix == "" {
		return "/"
	}
	return c.o.Prefix + "/"
}

// loginPage shows the token form.
func (c *console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.o.Token == "" {
		http.Redirect(w, r, c.path("/"), http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "login", "Log in", map[string]any{})
}

// login checks the token and sets a session cookie. An address that gave
// too many wrong credentials lately (loginLimit) is answered 429, its
// token not checked.
func (c *console) login(w http.ResponseWriter, r *http.Request) {
	if c.o.Token == "" {
		c.render(w, r, http.StatusUnauthorized, "login", "Log in", map[string]any{"Error": "That token is not the console's."})
		return
	}
	// the body is read before the limit is asked: a client holding it
	// back holds no check open
	tok := r.PostFormValue("token")
	ok, wait := c.logins.check(clientAddress(r), func() bool { return equal(tok, c.o.Token) })
	if wait > 0 {
		secs := retryAfter(w, wait)
		c.render(w, r, http.StatusTooManyRequests, "login", "Log in", map[string]any{"Error": fmt.Sprintf(
			"Too many failed logins from your address: wait %d seconds, then try again.", secs)})
		return
	}
	if !ok {
		c.render(w, r, http.StatusUnauthorized, "login", "Log in", map[string]any{"Error": "That token is not the console's."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: c.newSession(), Path: c.cookiePath(), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure(r), MaxAge: int(sessionTTL / time.Second)})
	http.Redirect(w, r, c.path("/"), http.StatusSeeOther)
}

// logout ends the session and drops its cookie.
func (c *console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		c.revoke(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: c.cookiePath(), MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure(r)})
	http.Redirect(w, r, c.path("/login"), http.StatusSeeOther)
}

// flash sets a message for the next page the browser loads.
func (c *console) flash(w http.ResponseWriter, r *http.Request, msg string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(msg)),
		Path: c.cookiePath(), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r), MaxAge: 60})
}

// takeFlash returns the flash message of r, if any, and clears it.
func (c *console) takeFlash(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: c.cookiePath(), MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure(r)})
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return ""
	}
	return string(b)
}
