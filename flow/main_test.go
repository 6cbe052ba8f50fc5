package flow_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

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
