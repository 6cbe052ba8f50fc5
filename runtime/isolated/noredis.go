package isolated

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// errNoRedis answers every Redis command of a child's attempt state.
var errNoRedis = errors.New("isolated: a child process has no Redis connection: spawn and join child jobs in the worker")

// noRedis is the Redis client of a child's attempt state: the child talks
// to Redis only through its parent, so what would need a connection of
// its own (flow.Spawn, flow.Join) fails at once with errNoRedis.
func noRedis() *redis.Client {
	c := redis.NewClient(&redis.Options{})
	c.AddHook(refuse{})
	return c
}

// refuse is a go-redis hook that never dials and fails every command.
type refuse struct{}

func (refuse) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return nil, errNoRedis }
}

func (refuse) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		cmd.SetErr(errNoRedis)
		return errNoRedis
	}
}

func (refuse) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			cmd.SetErr(errNoRedis)
		}
		return errNoRedis
	}
}
