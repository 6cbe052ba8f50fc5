package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/flow/admin"
)

// Environment variables LoadEnv reads.
const (
	EnvToken    = "SLUICE_WEB_TOKEN"
	EnvUser     = "SLUICE_WEB_USER"
	EnvPassword = "SLUICE_WEB_PASSWORD"
)

// DefaultPollInterval is how often the live stream reads the counters.
const DefaultPollInterval = time.Second

// Options configure the console.
type Options struct {
	// Admin is the operator client every page reads through and every
	// action calls. Required.
	Admin *admin.Client
	// Prefix is the path the console is mounted under ("/sluice"), without
	// a trailing slash; "" for the root.
	Prefix string

	// Token, when set, is a bearer token every request must carry:
	// "Authorization: Bearer <token>", or a session cookie got by logging
	// in with it on the login page.
	Token string
	// User and Password, when set, are HTTP basic auth credentials every
	// request may use instead.
	User, Password string
	// Auth, when set, wraps the console with the embedding application's
	// own authentication middleware; requests it lets through need no
	// Token or basic auth unless those are set too.
	Auth func(http.Handler) http.Handler
	// Insecure lets a console with no authentication at all answer
	// requests from beyond loopback (and ListenAndServe listen there).
	Insecure bool
	// SecureCookies marks every cookie the console sets (session, CSRF,
	// flash message) Secure, whatever the request: set it when the
	// console is served over HTTPS by a proxy that terminates TLS, as
	// the console sees plain HTTP then. Without it a cookie is Secure
	// only when the console serves TLS itself.
	SecureCookies bool

	// ReadOnly shows no action and refuses every state-changing request.
	ReadOnly bool
	// HideArgs hides job arguments, headers, results, step results and
	// signal payloads, for sensitive payloads.
	HideArgs bool

	// PollInterval is how often the live stream reads the counters.
	// Default DefaultPollInterval; at least 100ms.
	PollInterval time.Duration
	// Logger receives the console's errors; default slog.Default().
	Logger *slog.Logger

	// ops replaces the operator calls in tests.
	ops ops
}

// LoadEnv fills Token, User and Password from the environment variables
// EnvToken, EnvUser and EnvPassword (read with getenv, os.Getenv for
// example), each where it is not set already: a User given in code (or
// on a command line) takes its Password from EnvPassword, the way to keep
// a password out of the process list.
func (o *Options) LoadEnv(getenv func(string) string) {
	if o.Token == "" {
		o.Token = getenv(EnvToken)
	}
	if o.User == "" {
		o.User = getenv(EnvUser)
	}
	if o.Password == "" {
		o.Password = getenv(EnvPassword)
	}
}

// authConfigured reports whether any authentication is set.
func (o *Options) authConfigured() bool {
	return o.Token != "" || o.User != "" || o.Auth != nil
}

// ErrOptions: the options are invalid.
var ErrOptions = errors.New("sluice web: invalid options")

func (o Options) withDefaults() (Options, error) {
	if o.Admin == nil && o.ops == nil {
		return o, fmt.Errorf("%w: Admin is required", ErrOptions)
	}
	if o.Prefix != "" && (!strings.HasPrefix(o.Prefix, "/") || strings.HasSuffix(o.Prefix, "/")) {
		return o, fmt.Errorf("%w: Prefix %q must start with / and not end with one", ErrOptions, o.Prefix)
	}
	switch {
	case o.User != "" && o.Password == "":
		return o, fmt.Errorf("%w: basic auth needs both User and Password: User %q has no Password (LoadEnv reads it from %s)",
			ErrOptions, o.User, EnvPassword)
	case o.User == "" && o.Password != "":
		return o, fmt.Errorf("%w: basic auth needs both User and Password: a Password is set, no User (LoadEnv reads it from %s)",
			ErrOptions, EnvUser)
	}
	switch {
	case o.PollInterval == 0:
		o.PollInterval = DefaultPollInterval
	case o.PollInterval < 100*time.Millisecond:
		return o, fmt.Errorf("%w: PollInterval %s below 100ms", ErrOptions, o.PollInterval)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ops == nil {
		o.ops = adminOps{o.Admin}
	}
	return o, nil
}
