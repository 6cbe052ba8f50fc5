package store_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// commandsRun is how many commands the server ran since its stats were
// reset, scripts' own calls (FCALL) left out: the commands inside them.
func commandsRun(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_fcall" || name == "cmdstat_info" || name == "cmdstat_config|resetstat" {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		c, _ := strconv.Atoi(calls)
		n += c
	}
	return n
}

// TestEnqueueCommandsPerJob: what one more job in an enqueue call costs
// Redis, in commands run inside the script, for each shape of job: the
// budget of the hot path. A write made per job where one per call would
// do (a pin-list index written once per pinned job, found by a re-read)
// shows here as a job costing more than its budget. Measured on a
// redis-server of its own, whose stats no other test moves.
func TestEnqueueCommandsPerJob(t *testing.T) {
	if os.Getenv(redisproc.EnvExternalAddr) != "" {
		t.Skip("an external server's command stats count other tests' commands too")
	}
	srv, err := redisproc.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rdb := srv.Client()
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	shapes := []struct {
		name   string
		budget int
		job    func() store.NewJob
	}{
		{"plain", 1, func() store.NewJob { return store.NewJob{} }},
		{"priority", 1, func() store.NewJob { return store.NewJob{Priority: 3} }},
		{"delayed", 3, func() store.NewJob { return store.NewJob{RunAt: time.Now().Add(time.Minute)} }},
		{"pinned, waits", 2, func() store.NewJob { return store.NewJob{Sticky: store.Sticky{Worker: "w", Mode: "w"}} }},
		{"pinned, falls back", 3, func() store.NewJob {
			return store.NewJob{Sticky: store.Sticky{Worker: "w", Mode: "a", After: time.Minute}}
		}},
	}
	for _, sh := range shapes {
		cost := func(n int) int {
			st := store.New(rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: time.Hour})
			p := st.Partition("q", 0)
			jobs := make([]store.NewJob, n)
			for i := range jobs {
				jobs[i] = sh.job()
				jobs[i].Local, jobs[i].Kind, jobs[i].Payload, jobs[i].MaxAttempts = "j"+strconv.Itoa(i), "k", []byte("p"), 3
			}
			if _, err := st.Enqueue(ctx, p, jobs[:1]); err != nil { // the queue's first call sets it up
				t.Fatal(err)
			}
			rdb.ConfigResetStat(ctx)
			if _, err := st.Enqueue(ctx, p, jobs[1:]); err != nil {
				t.Fatal(err)
			}
			return commandsRun(t, rdb)
		}
		few, many := cost(11), cost(51)
		if per := float64(many-few) / 40; per > float64(sh.budget) {
			t.Errorf("%s: %.2f commands per job (%d for 10 jobs, %d for 50), budget %d", sh.name, per, few, many, sh.budget)
		} else {
			t.Logf("%s: %.2f commands per job, budget %d", sh.name, per, sh.budget)
		}
	}
}
