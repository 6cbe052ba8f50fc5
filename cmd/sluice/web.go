package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/web"
)

func (c *cli) webCmd() *cobra.Command {
	var (
		addr string
		o    web.Options
	)
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve the web console until interrupted",
		Long: `Serve the operator console (package web, docs/web.md) on --addr until
interrupted (Ctrl-C or SIGTERM: exit 0); the URL is printed once the
address accepts connections. --token, --user and --password default to
$SLUICE_WEB_TOKEN, $SLUICE_WEB_USER and $SLUICE_WEB_PASSWORD, each on
its own (--user on the command line, the password in the environment,
out of the process list); a user without a password exits 2. An address
beyond loopback needs authentication (or --insecure): without it the
command exits 2, as with any other invalid option; an address in use
exits 1. Without authentication the console answers only requests
addressed to localhost, 127.0.0.1 or [::1] (DNS rebinding), so browse it
by one of those names. The console lists the queues registered in the namespace (as
'sluice queues list' does), with the partition counts Redis records;
--partitions, as for every command, only checks those counts.`,
		Example: `  sluice web
  SLUICE_WEB_TOKEN=$(openssl rand -hex 16) sluice web --addr 0.0.0.0:8080
  sluice web --read-only --hide-args --prefix /sluice`,
		Args: noArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "`HOST:PORT` to listen on")
	fs.StringVar(&o.Prefix, "prefix", "", "path prefix `P`, e.g. /sluice behind a proxy")
	// each refuses an empty value (given): "--token $TOKEN" with the
	// variable unset served the console with no authentication at all
	fs.Var(given{&o.Token, "the token"}, "token", "bearer `TOKEN` every request must carry (default $SLUICE_WEB_TOKEN)")
	fs.Var(given{&o.User, "the user"}, "user", "basic auth `USER` (default $SLUICE_WEB_USER)")
	fs.Var(given{&o.Password, "the password"}, "password", "basic auth `PASSWORD` (default $SLUICE_WEB_PASSWORD)")
	fs.BoolVar(&o.ReadOnly, "read-only", false, "show no action and refuse every one")
	fs.BoolVar(&o.HideArgs, "hide-args", false, "hide arguments, headers, results and signal payloads")
	fs.BoolVar(&o.Insecure, "insecure", false, "serve beyond loopback with no authentication at all")
	fs.BoolVar(&o.SecureCookies, "secure-cookies", false, "mark every cookie Secure (the console is served over HTTPS by a proxy)")
	fs.DurationVar(&o.PollInterval, "poll", web.DefaultPollInterval, "how often the live pages read the counters (at least 100ms)")
	cmd.RunE = c.runE(func(cmd *cobra.Command, _ []string) error {
		if _, port, err := net.SplitHostPort(addr); err != nil || !validPort(port) {
			return usagef("--addr %q: want HOST:PORT with a port in 1..65535", addr)
		}
		if o.PollInterval < 100*time.Millisecond { // 0 too: web.Options reads 0 as its default
			return usagef("--poll %s: at least 100ms", o.PollInterval)
		}
		// each of --token, --user and --password falls back to its own
		// variable: --user on the command line, the password in the
		// environment (kept out of the process list)
		o.LoadEnv(c.getenv)
		switch {
		case o.User != "" && o.Password == "":
			return usagef("web: basic auth user %q (--user or $%s) has no password: give --password or set $%s",
				o.User, web.EnvUser, web.EnvPassword)
		case o.User == "" && o.Password != "":
			return usagef("web: a basic auth password (--password or $%s) but no user: give --user or set $%s",
				web.EnvPassword, web.EnvUser)
		}
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		// a console of a namespace with no queue shows nothing, most often
		// for a mistyped --namespace: said at once, on stderr; it serves
		// anyway, as a console deployed before any worker has run must
		// (refused, it would restart in a loop until one had)
		if err := namespaceUsed(cmd.Context(), client); err != nil {
			var missing missingError
			if !errors.As(err, &missing) {
				return err
			}
			fmt.Fprintf(c.stderr, "sluice: warning: %s\n", bare(err))
		}
		o.Admin = client
		return c.serveWeb(cmd.Context(), addr, client.Namespace(), o)
	})
	return cmd
}

// serveWeb listens on addr (web.Listen: refused without authentication
// beyond loopback, or taken), says where the console is once it listens,
// and serves until ctx is done. An address of no host (":8080", every
// interface) is said as localhost's, an address a browser opens.
func (c *cli) serveWeb(ctx context.Context, addr, ns string, o web.Options) error {
	ln, h, err := web.Listen(addr, o)
	if err != nil {
		return webError(err)
	}
	at := addr
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		at = net.JoinHostPort("localhost", port)
	}
	fmt.Fprintf(c.stdout, "serving the console of namespace %q at http://%s%s/ until interrupted\n", ns, at, o.Prefix)
	return webError(web.Serve(ctx, ln, h))
}

// validPort: a port number the console's URL can name (not 0: the
// system's choice, which ListenAndServe would not report).
func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// webError is an options error of the console as a usage error (exit 2).
func webError(err error) error {
	if errors.Is(err, web.ErrOptions) {
		return usagef("web: %s", strings.TrimPrefix(err.Error(), web.ErrOptions.Error()+": "))
	}
	return err
}
