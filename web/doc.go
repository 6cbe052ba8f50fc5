// Package web is Sluice's operator console: server-rendered pages over the
// operator API (package flow/admin) to watch queues, inspect jobs and act
// on them. It has no build step: html/template pages, and a small
// hand-written script and stylesheet embedded in the binary.
//
// The sluice CLI serves it (sluice web); an application mounts it in its
// own mux under a path prefix:
//
//	ops := admin.New(flowClient)
//	h, err := web.Handler(web.Options{Admin: ops, Prefix: "/sluice", Auth: myAuth})
//	mux.Handle("/sluice/", h)
//
// Safe by default: ListenAndServe refuses to listen beyond loopback
// without authentication (a bearer token, basic auth, or the embedding
// application's middleware in Options.Auth), and with no authentication
// configured the handler answers only requests from loopback addresses
// that no proxy forwarded (by a forwarding header), addressed to a loopback name (Host localhost,
// 127.0.0.1 or [::1]: a rebound DNS name is refused).
// Every state-changing request needs the session's CSRF token and passes
// a cross-origin check (its body, read for the token before any
// credentials, is refused past 64 KiB, 413); an address that gives wrong credentials (a token
// to the login page, a bearer token, basic auth) 5 times in a minute is
// answered 429 until the minute ends, its credentials not checked; a
// session already open is not affected. Wrong bearer or basic credentials
// are answered 401 with their scheme's challenge, whatever the method (a
// browser's GET with none goes to the login page); schemes are matched
// case-insensitively.
// Options.SecureCookies marks the cookies Secure behind a proxy that
// terminates TLS; Options.ReadOnly removes every action and
// Options.HideArgs hides arguments, headers and results.
//
// The overview lists at most admin.MaxQueuesListed queues, and says so
// when the namespace has more; a queue it leaves out opens by name.
//
// Live pages share one Server-Sent Events stream per console: one poller
// goroutine reads the counters once per Options.PollInterval, whatever
// the number of open tabs, and stops when the last tab closes.
package web
