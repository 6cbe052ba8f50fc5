package harness

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/lua"
)

// countedClient is a go-redis client that counts its round trips: every
// command sent on its own and every pipeline to one Redis is one. On a
// cluster it counts on each node's client, so a pipeline that spans three
// masters counts three. It also counts them by Sluice script (an EVALSHA of
// lua.Step is a "step" trip), "other" for the rest. Sluice's clients and
// workers get its UniversalClient, the go-redis client itself, as a
// user's code would hand it over (a single server's calls then declare
// one key, internal/store declaresOne); the hooks count all the same.
type countedClient struct {
	redis.UniversalClient
	trips    atomic.Int64
	byScript map[string]*atomic.Int64 // never written after creation
}

// scripts are Sluice's scripts, by name.
var scripts = map[string]*lua.Script{
	"enqueue": lua.Enqueue, "claim": lua.Claim, "renew": lua.Renew, "ack": lua.Ack,
	"maintain": lua.Maintain, "step": lua.Step,
	"notify": lua.Notify, "relay": lua.Relay,
}

// scriptNames maps each script's function name and SHA1 (FCALL's and
// EVALSHA's first argument) to its name.
var scriptNames = func() map[string]string {
	m := make(map[string]string, 2*len(scripts))
	for name, sc := range scripts {
		m[sc.Hash()] = name
		m[sc.Function()] = name
	}
	return m
}()

// newCountedClient returns a counting client with the options of base
// (made from url) and, if poolSize is not zero, that pool size.
func newCountedClient(base redis.UniversalClient, url string, poolSize int) *countedClient {
	c := &countedClient{UniversalClient: newClient(base, url, poolSize), byScript: map[string]*atomic.Int64{"other": {}}}
	for name := range scripts {
		c.byScript[name] = &atomic.Int64{}
	}
	switch rdb := c.UniversalClient.(type) {
	case *redis.ClusterClient:
		// Before any command: node clients are made on first use.
		rdb.OnNewNode(func(node *redis.Client) { node.AddHook(tripCounter{c}) })
	default:
		rdb.AddHook(tripCounter{c})
	}
	return c
}

// scriptTrips reads the round trips by script.
func (c *countedClient) scriptTrips() map[string]int64 {
	m := make(map[string]int64, len(c.byScript))
	for name, n := range c.byScript {
		m[name] = n.Load()
	}
	return m
}

// tripCounter is the go-redis hook behind countedClient. Retries happen
// below hooks, so a retried command counts once; a script run that falls
// back from EVALSHA to EVAL counts twice (the EVAL as "other"), as it
// costs two round trips.
type tripCounter struct{ c *countedClient }

func (h tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.trips.Add(1)
		name := "other"
		if args := cmd.Args(); len(args) > 1 && (cmd.Name() == "fcall" || cmd.Name() == "evalsha") {
			if sha, ok := args[1].(string); ok && scriptNames[sha] != "" {
				name = scriptNames[sha]
			}
		}
		h.c.byScript[name].Add(1)
		return next(ctx, cmd)
	}
}

func (h tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.c.trips.Add(1)
		h.c.byScript["other"].Add(1)
		return next(ctx, cmds)
	}
}
