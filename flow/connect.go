package flow

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Connect opens a Redis client from a URL. The client is the caller's:
// pass it to NewClient and runtime.NewWorker, and Close it when done (Sluice
// never closes a client it was given).
//
// Accepted forms:
//
//	redis://[user:password@]host[:port][/db][?option=value...]    one server
//	rediss://...                                                   the same over TLS
//	redis+cluster://[user:password@]host[:port][,host[:port]...][?option=value...]
//	rediss+cluster://...                                           a cluster over TLS
//	redis+sentinel://[user:password@]host[:port][,host[:port]...][/db]?master_name=name[&option=value...]
//	rediss+sentinel://...                                          the same over TLS
//
// A URL whose host part lists several comma-separated addresses is a
// cluster as well, whatever its scheme's suffix, unless it is a Sentinel
// URL. An address without a port has Redis's: 6379, or 26379 for a
// Sentinel. user and password are the
// Redis ACL user and password (a password alone is the default user's);
// percent-encode special characters. The options are go-redis's
// (redis.ParseURL for a server, redis.ParseClusterURL for a cluster), for
// example dial_timeout=3s, read_timeout=2s, pool_size=20. A cluster is
// discovered from its seed addresses.
//
// A Sentinel URL lists the Sentinels' addresses and names the master they
// watch (master_name, required); the client asks them for the current
// master and follows it when they fail over (redis.NewFailoverClient).
// user and password are the master's, as in the other forms; Sentinels
// that require a password of their own take sentinel_username and
// sentinel_password options. The other options are go-redis's
// (redis.ParseFailoverURL).
func Connect(rawURL string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("%w: Redis URL %q has no scheme (want redis://, rediss://, redis+cluster://, redis+sentinel:// or their rediss forms)", ErrInvalid, redact(rawURL))
	}
	base, cluster := strings.CutSuffix(scheme, "+cluster")
	base, sentinel := strings.CutSuffix(base, "+sentinel")
	if (base != "redis" && base != "rediss") || (cluster && sentinel) {
		return nil, fmt.Errorf("%w: Redis URL scheme %q (want redis, rediss, redis+cluster, rediss+cluster, redis+sentinel or rediss+sentinel)", ErrInvalid, scheme)
	}
	// authority is userinfo@hosts, up to the path or query
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	user, hosts := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		user, hosts = authority[:i+1], authority[i+1:]
	}
	addrs := strings.Split(hosts, ",")
	for _, a := range addrs {
		if a == "" {
			return nil, fmt.Errorf("%w: Redis URL %q has an empty address", ErrInvalid, redact(rawURL))
		}
	}
	if sentinel {
		return failoverClient(rawURL, base, user, defaultPort(addrs, "26379"), tail)
	}
	if len(addrs) > 1 {
		cluster = true
		// go-redis gives the first address a port, not the others
		addrs = defaultPort(addrs, "6379")
	}
	if !cluster {
		opts, err := redis.ParseURL(base + "://" + rest)
		if err != nil {
			return nil, badURL(rawURL, err)
		}
		return redis.NewClient(opts), nil
	}
	path, query, _ := strings.Cut(tail, "?")
	if strings.Trim(path, "/") != "" {
		return nil, fmt.Errorf("%w: Redis URL %q: a cluster has no database number", ErrInvalid, redact(rawURL))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, badURL(rawURL, err)
	}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u := base + "://" + user + addrs[0]
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	opts, err := redis.ParseClusterURL(u)
	if err != nil {
		return nil, badURL(rawURL, err)
	}
	return redis.NewClusterClient(opts), nil
}

// defaultPort gives port to each address of addrs that has none
// ("h", "[::1]"), as go-redis does to a URL's host alone.
func defaultPort(addrs []string, port string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		u, err := url.Parse("redis://" + a)
		if err == nil && u.Port() == "" && !strings.HasSuffix(a, ":") && u.Hostname() != "" {
			a = net.JoinHostPort(u.Hostname(), port)
		}
		out[i] = a
	}
	return out
}

// failoverClient is Connect for a Sentinel URL: base is its scheme
// without "+sentinel", user its "user:password@" part (or ""), addrs the
// Sentinels' addresses and tail the rest from the path on.
func failoverClient(rawURL, base, user string, addrs []string, tail string) (redis.UniversalClient, error) {
	path, query, _ := strings.Cut(tail, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, badURL(rawURL, err)
	}
	if len(q["master_name"]) != 1 || q.Get("master_name") == "" {
		return nil, fmt.Errorf("%w: Redis URL %q: a Sentinel URL names the master it watches, once (master_name=...)", ErrInvalid, redact(rawURL))
	}
	sentinelUser, sentinelPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	// go-redis reads the URL's user and password as the Sentinels'; here
	// they are the master's, as in every other form
	opts, err := redis.ParseFailoverURL(base + "://" + addrs[0] + path + "?" + q.Encode())
	if err != nil {
		return nil, badURL(rawURL, err)
	}
	if user != "" {
		u, err := url.Parse(base + "://" + user + addrs[0])
		if err != nil {
			return nil, badURL(rawURL, err)
		}
		opts.Username = u.User.Username()
		if pass, ok := u.User.Password(); ok {
			opts.Password = pass
		}
	}
	opts.SentinelUsername, opts.SentinelPassword = sentinelUser, sentinelPass
	if opts.TLSConfig != nil {
		// go-redis names the first Sentinel as the server to verify on
		// every connection, the master's too; empty, each connection
		// verifies the host it dials
		opts.TLSConfig.ServerName = ""
	}
	return redis.NewFailoverClient(opts), nil
}

// badURL is the ErrInvalid error for rawURL, for the reason err gives. A
// *url.Error quotes the URL it failed on, password and all: only its cause
// is kept.
func badURL(rawURL string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if pass := urlPassword(rawURL); pass != "" {
		// the parser's cause may quote a piece of it (an unencoded '/' or
		// '?' cuts the password where the parser thought the host ends)
		for _, piece := range strings.FieldsFunc(pass, func(r rune) bool { return strings.ContainsRune("/?#@:", r) }) {
			if len(piece) >= 2 {
				msg = strings.ReplaceAll(msg, piece, "xxxxx")
			}
		}
	}
	return fmt.Errorf("%w: Redis URL %q: %s", ErrInvalid, redact(rawURL), msg)
}

// urlPassword is the password of raw's user, as redact finds it, or "".
func urlPassword(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '@')
	if i < 0 {
		return ""
	}
	_, pass, _ := strings.Cut(rest[:i], ":")
	return pass
}

// redact hides the passwords of a URL in error messages: its user's, and
// any option named *password (sentinel_password, password). The user's
// ends at the URL's last '@': a password a caller forgot to
// percent-encode may hold '/', '?' or '@', and hiding a host that a query
// value's '@' follows is the safer mistake.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		if user, _, hasPass := strings.Cut(rest[:i], ":"); hasPass && !strings.ContainsAny(user, "/?") {
			rest = user + ":xxxxx" + rest[i:]
		}
	}
	if head, query, ok := strings.Cut(rest, "?"); ok {
		opts := strings.Split(query, "&")
		for i, o := range opts {
			if k, _, ok := strings.Cut(o, "="); ok && strings.HasSuffix(k, "password") {
				opts[i] = k + "=xxxxx"
			}
		}
		rest = head + "?" + strings.Join(opts, "&")
	}
	return scheme + "://" + rest
}
