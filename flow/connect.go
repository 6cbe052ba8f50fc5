package flow

import (
	"fmt"
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
//	redis+cluster://[user:password@]host:port[,host:port...][?option=value...]
//	rediss+cluster://...                                           a cluster over TLS
//
// A URL whose host part lists several comma-separated addresses is a
// cluster as well, whatever its scheme's suffix. user and password are the
// Redis ACL user and password (a password alone is the default user's);
// percent-encode special characters. The options are go-redis's
// (redis.ParseURL for a server, redis.ParseClusterURL for a cluster), for
// example dial_timeout=3s, read_timeout=2s, pool_size=20. A cluster is
// discovered from its seed addresses; Sentinel is not handled here: build
// a redis.NewFailoverClient yourself.
func Connect(rawURL string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("%w: Redis URL %q has no scheme (want redis://, rediss://, redis+cluster:// or rediss+cluster://)", ErrInvalid, redact(rawURL))
	}
	base, cluster := strings.CutSuffix(scheme, "+cluster")
	if base != "redis" && base != "rediss" {
		return nil, fmt.Errorf("%w: Redis URL scheme %q (want redis, rediss, redis+cluster or rediss+cluster)", ErrInvalid, scheme)
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
	if len(addrs) > 1 {
		cluster = true
	}
	for _, a := range addrs {
		if a == "" {
			return nil, fmt.Errorf("%w: Redis URL %q has an empty address", ErrInvalid, redact(rawURL))
		}
	}
	if !cluster {
		opts, err := redis.ParseURL(base + "://" + rest)
		if err != nil {
			return nil, fmt.Errorf("%w: Redis URL %q: %v", ErrInvalid, redact(rawURL), err)
		}
		return redis.NewClient(opts), nil
	}
	path, query, _ := strings.Cut(tail, "?")
	if strings.Trim(path, "/") != "" {
		return nil, fmt.Errorf("%w: Redis URL %q: a cluster has no database number", ErrInvalid, redact(rawURL))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("%w: Redis URL %q: %v", ErrInvalid, redact(rawURL), err)
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
		return nil, fmt.Errorf("%w: Redis URL %q: %v", ErrInvalid, redact(rawURL), err)
	}
	return redis.NewClusterClient(opts), nil
}

// redact hides the password of a URL in error messages.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	i := strings.LastIndexByte(rest[:end], '@')
	if i < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:i], ":")
	if !hasPass {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[i:]
}
