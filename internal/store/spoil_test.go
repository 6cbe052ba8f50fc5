package store_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/lua"
)

// spoilCalls edits the arguments of each call of script sc before it is
// sent (a call the store could not have made), in place.
type spoilCalls struct {
	sc   *lua.Script
	edit func(args []any) // the command's, its name first
}

func (spoilCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (spoilCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (s spoilCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 3 && s.sc.Is(cmd.Name(), fmt.Sprint(args[1])) {
			s.edit(args)
		}
		return next(ctx, cmd)
	}
}
