package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sluicetype"
)

// connect opens the client once: the URL and namespace from the flags or
// the environment, partitions from the flag or the workers' registry.
func (c *cli) connect(ctx context.Context) (*admin.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	url := firstOf(c.redisURL, c.getenv("REDIS_URL"), "redis://localhost:6379")
	ns := firstOf(c.namespace, c.getenv("SLUICE_NAMESPACE"), "sluice")
	rdb, err := flow.Connect(url)
	if err != nil {
		return nil, usagef("--redis: %v", bare(err))
	}
	c.rdb = rdb
	if c.rdb, err = asCluster(ctx, rdb); err != nil {
		return nil, fmt.Errorf("redis %s: %w", redacted(url), err)
	}
	rdb = c.rdb
	if c.connected != nil {
		c.connected(rdb)
	}
	// Queue layouts are read from Redis; --partitions only checks them.
	opts := flow.ClientOptions{Namespace: ns, Clock: c.clock, Partitions: map[string]int(c.partitions), RetainCancelled: c.retainCancelled}
	fc, err := flow.NewClient(rdb, opts)
	if err != nil {
		return nil, usagef("%v", bare(err))
	}
	c.client = admin.New(fc)
	if err := c.checkPartitions(ctx); err != nil {
		c.client = nil // connect again finds it so again
		return nil, err
	}
	return c.client, nil
}

// checkPartitions checks --partitions against the layouts Redis records,
// for every command: a queue it names must exist and have that count.
// (The client checks a queue's count only when a command looks its
// layout up, so a command by job ID, or one that lists queues, took a
// wrong count, or an unknown queue, without a word.)
func (c *cli) checkPartitions(ctx context.Context) error {
	if len(c.partitions) == 0 {
		return nil
	}
	// each queue's entry read alone: another queue's corrupt entry does
	// not concern --partitions, and a listing stops at MaxQueuesListed
	for _, q := range slices.Sorted(maps.Keys(c.partitions)) {
		l, err := c.client.QueueLayout(ctx, q)
		if err != nil {
			return c.queueError(q, err, "--partitions names it; sluice queues list shows the queues that exist")
		}
		if l.Partitions != c.partitions[q] {
			return &sluicetype.LayoutMismatchError{Namespace: c.client.Namespace(), Queue: q, Configured: c.partitions[q], Recorded: l.Partitions}
		}
	}
	return nil
}

// redacted is a Redis URL without its passwords: its user's, and any
// option named *password (a Sentinel URL's sentinel_password), as
// flow.Connect's errors hide them.
func redacted(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		user, _, _ := strings.Cut(rest[:at], ":")
		rest = user + ":***" + rest[at:]
	}
	if head, query, ok := strings.Cut(rest, "?"); ok {
		opts := strings.Split(query, "&")
		for i, o := range opts {
			if k, _, ok := strings.Cut(o, "="); ok && strings.HasSuffix(strings.ToLower(k), "password") {
				opts[i] = k + "=***"
			}
		}
		rest = head + "?" + strings.Join(opts, "&")
	}
	return scheme + "://" + rest
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// partitionsFlag is --partitions Q=N,...
type partitionsFlag map[string]int

func (p *partitionsFlag) String() string {
	var parts []string
	for q, n := range *p {
		parts = append(parts, q+"="+strconv.Itoa(n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (p *partitionsFlag) Set(s string) error {
	if *p == nil {
		*p = partitionsFlag{}
	}
	for _, kv := range strings.Split(s, ",") {
		q, n, ok := strings.Cut(kv, "=")
		v, err := strconv.Atoi(n)
		if !ok || q == "" || err != nil || v < 1 {
			return fmt.Errorf("want QUEUE=N with N at least 1, got %q", kv)
		}
		if was, ok := (*p)[q]; ok && was != v {
			return fmt.Errorf("queue %q given %d and %d partitions", q, was, v)
		}
		(*p)[q] = v
	}
	return nil
}

func (p *partitionsFlag) Type() string { return "Q=N,..." }
