package flow_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
)

var env redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &env, true) }

// realRedis is a client of the shared server, closed when the test ends.
// Workers run with testkit.StartWorker, and tests wait for their jobs with
// testkit.WaitState on the workers' signals.
func realRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	return env.Client(t)
}

// joinKid spawns one child of args in the queue "kids" (step "kids") and
// joins it: the handler of the parents whose children other workers run,
// or none does.
func joinKid(ctx context.Context, args flow.Args) error {
	kids, err := flow.Spawn(ctx, "kids", flow.Item{Args: args, Opts: []flow.EnqueueOption{flow.WithQueue("kids")}})
	if err != nil {
		return err
	}
	_, err = flow.Join[struct{}](ctx, kids, flow.CollectAll)
	return err
}
