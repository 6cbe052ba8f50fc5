package web

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// console is one mounted console.
type console struct {
	o      Options
	ops    ops
	hub    *hub
	pages  *pages
	secret []byte // signs session cookies; new for every console
	cop    *http.CrossOriginProtection
	logins *loginLimit // failed logins per client address

	mu      sync.Mutex
	revoked map[string]int64 // sessions logged out, and when they expire
	once    onceRuns         // the runs of bulk actions' confirmations
}

// Handler returns the console as an http.Handler. Mount it at
// Options.Prefix + "/" (it strips the prefix itself):
//
//	mux.Handle("/sluice/", h)
//
// With no authentication configured (Token, User/Password, Auth) it
// answers only requests from loopback addresses that no proxy forwarded,
// unless Options.Insecure.
func Handler(o Options) (http.Handler, error) {
	c, err := newConsole(o)
	if err != nil {
		return nil, err
	}
	return c.routes(), nil
}

func newConsole(o Options) (*console, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	pg, err := loadPages()
	if err != nil {
		return nil, err
	}
	c := &console{o: o, ops: o.ops, pages: pg, secret: make([]byte, 32), cop: http.NewCrossOriginProtection(),
		logins: newLoginLimit()}
	rand.Read(c.secret)
	c.hub = newHub(o.ops, o.PollInterval, func(err error) { o.Logger.Error("sluice web: live stream", "err", err) })
	return c, nil
}

// ListenAndServe serves the console on addr (host:port) until ctx is
// done, then shuts the server down, giving open requests five seconds.
// It refuses an address beyond loopback (a non-loopback host, or none,
// which listens on every interface) unless authentication is configured
// or Options.Insecure is set.
func ListenAndServe(ctx context.Context, addr string, o Options) error {
	ln, h, err := Listen(addr, o)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, h)
}

// Listen is what ListenAndServe does before it serves: it checks addr
// against o (the same refusals), builds the handler and listens on addr.
// A caller that reports where the console is does so once Listen has
// returned (ln.Addr() is the address, with the port the system chose for
// port 0), then calls Serve.
func Listen(addr string, o Options) (ln net.Listener, h http.Handler, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: address %q: %v", ErrOptions, addr, err)
	}
	if !loopbackHost(host) && !o.authConfigured() && !o.Insecure {
		return nil, nil, fmt.Errorf("%w: %s is reachable beyond this machine: set a token (%s), basic auth (%s, %s) or an Auth middleware, or listen on 127.0.0.1", ErrOptions, addr, EnvToken, EnvUser, EnvPassword)
	}
	if h, err = Handler(o); err != nil {
		return nil, nil, err
	}
	if ln, err = net.Listen("tcp", addr); err != nil {
		return nil, nil, err
	}
	return ln, h, nil
}

// shutdownKey is the key, in a request's context, of a channel Serve
// closes as it starts to shut down: the live streams end then (Shutdown
// waits for every open request, and a stream ends only when its browser
// goes), the other requests get their five seconds.
type shutdownKey struct{}

// Serve serves h on ln until ctx is done, then shuts down as
// ListenAndServe does.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	return serve(ctx, ln, h, idleTimeout)
}

// idleTimeout is how long Serve keeps a keep-alive connection that waits
// for its next request.
const idleTimeout = 2 * time.Minute

// serve is Serve, closing keep-alive connections idle for idle.
func serve(ctx context.Context, ln net.Listener, h http.Handler, idle time.Duration) error {
	closing := make(chan struct{})
	// No ReadTimeout or WriteTimeout: they would cut the live streams
	// (server-sent events), which last as long as their page; IdleTimeout
	// counts only between requests.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle,
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), shutdownKey{}, closing)
		}}
	srv.RegisterOnShutdown(func() { close(closing) })
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	<-errc
	return err
}

// loopbackHost reports whether host names only this machine (a fully
// qualified "localhost." too).
func loopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackRequest reports whether r came from a loopback address and
// not through a proxy: a reverse proxy on this machine connects from
// loopback on behalf of anyone, and says so in a forwarding header.
func loopbackRequest(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	return err == nil && loopbackHost(host)
}

// loopbackHostHeader reports whether the request's Host names this
// machine by a loopback name: localhost or a loopback address, with any
// port. A page of another site whose name an attacker points at
// 127.0.0.1 (DNS rebinding) reaches a console on loopback from the
// browser with its own name in Host (and Origin, which the cross-origin
// check compares with Host): only a console with authentication may
// answer such names.
func loopbackHostHeader(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return loopbackHost(strings.ToLower(host))
}

// routes builds the console's handler: prefix stripping, then
// authentication, then the pages and actions.
func (c *console) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler()))
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	mux.HandleFunc("GET /{$}", c.overview)
	mux.HandleFunc("GET /queues/{queue}", c.queue)
	mux.HandleFunc("GET /jobs/{id...}", c.job)
	mux.HandleFunc("GET /find", c.find)
	mux.HandleFunc("GET /workers", c.workers)
	mux.HandleFunc("GET /schedules", c.schedules)
	mux.HandleFunc("GET /effects", c.effects)
	mux.HandleFunc("GET /events", c.events)
	mux.HandleFunc("GET /confirm/{action}", c.confirm)
	mux.HandleFunc("POST /act/{action}", c.act)
	var h http.Handler = mux
	h = c.authenticate(h)
	h = c.guard(h)
	if c.o.Prefix == "" {
		return h
	}
	prefix := c.o.Prefix
	inner := http.StripPrefix(prefix, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == prefix {
			// the console's address without its slash (sluice web
			// --prefix serves the handler at the root): the stripped path
			// is empty, and the mux sent it to / outside the prefix
			to := prefix + "/"
			if r.URL.RawQuery != "" {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, to, http.StatusMovedPermanently)
			return
		}
		inner.ServeHTTP(prefixedRedirects{ResponseWriter: w, prefix: prefix}, r)
	})
}

// prefixedRedirects keeps the redirects the mux answers on its own (to
// the cleaned path of /sluice//workers, to a subtree's root with its
// slash) under the prefix: the mux sees the path with the prefix
// stripped, so their Location lacked it. The console's own redirects are
// 303 See Other to paths that have the prefix (console.path); the mux's
// are 301 or 307.
type prefixedRedirects struct {
	http.ResponseWriter
	prefix string
}

func (p prefixedRedirects) WriteHeader(code int) {
	if code >= 300 && code < 400 && code != http.StatusSeeOther {
		if loc := p.Header().Get("Location"); strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") {
			p.Header().Set("Location", p.prefix+loc)
		}
	}
	p.ResponseWriter.WriteHeader(code)
}

// Flush flushes the stream (/events) through the wrapper.
func (p prefixedRedirects) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the connection's writer.
func (p prefixedRedirects) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// guard sets the headers every answer carries and refuses what no
// console accepts: a cross-origin or CSRF-less state-changing request; to
// a console without authentication, a request from beyond loopback or
// addressed to a name other than a loopback one (DNS rebinding).
func (c *console) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		if !c.o.authConfigured() && !c.o.Insecure {
			if !loopbackRequest(r) {
				http.Error(w, "sluice web: this console has no authentication configured and answers loopback requests only", http.StatusForbidden)
				return
			}
			if !loopbackHostHeader(r) {
				http.Error(w, fmt.Sprintf("sluice web: this console has no authentication configured and answers only requests addressed to localhost, 127.0.0.1 or [::1], not to %q: "+
					"browse it at http://localhost:<port>, or set a token (%s), basic auth (%s, %s) or an Auth middleware to serve it under another name",
					r.Host, EnvToken, EnvUser, EnvPassword), http.StatusMisdirectedRequest)
				return
			}
		}
		if crossSiteFetch(r) {
			// an <img>, a script or a fetch of another site's page: no
			// page of the console is one, and a bulk action's confirmation
			// would run its dry run (a scan) at another site's request
			http.Error(w, "sluice web: cross-site request refused (open the console's pages directly)", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := c.cop.Check(r); err != nil {
				http.Error(w, "sluice web: cross-origin request refused", http.StatusForbidden)
				return
			}
			// the CSRF token is read from the body before any credentials
			// are checked: read no more of it than a form of the console
			// takes, and read it here, once, so that a malformed one is
			// refused rather than read in part (the form parsed again
			// later returns no error)
			if err := readForm(w, r); err != nil {
				code := http.StatusBadRequest
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					code = http.StatusRequestEntityTooLarge
				}
				http.Error(w, "sluice web: the form could not be read: "+err.Error(), code)
				return
			}
			if !c.validCSRF(r) {
				http.Error(w, "sluice web: missing or wrong CSRF token; reload the page and try again", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// maxFormBytes bounds the body of a POST: the console's forms are a few
// short fields.
const maxFormBytes = 64 << 10

// readForm reads r's form, url-encoded or multipart, from a body of at
// most maxFormBytes.
func readForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return err
	}
	// (ParseForm leaves a multipart body unread; ParseMultipartForm,
	// after it, reads only that)
	if err := r.ParseMultipartForm(maxFormBytes); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return err
	}
	return nil
}

// crossSiteFetch reports whether the browser says r comes from another
// site and is not a top-level navigation (a link followed, a page
// opened): what an <img>, <script>, fetch or <iframe> of another site's
// page sends (Sec-Fetch-Site, Sec-Fetch-Mode, Sec-Fetch-Dest; absent
// from clients other than browsers, which are not refused). A frame is
// refused although the console's headers keep it from showing: its
// request would still run a bulk action's dry run.
func crossSiteFetch(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") != "cross-site" {
		return false
	}
	dest := r.Header.Get("Sec-Fetch-Dest")
	return r.Header.Get("Sec-Fetch-Mode") != "navigate" || dest != "" && dest != "document"
}

// path is p under the console's prefix.
func (c *console) path(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return c.o.Prefix + p
}
