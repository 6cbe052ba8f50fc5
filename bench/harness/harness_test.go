package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tiny are flags that make every scenario small: the tests check that each
// runs and reports, not how fast.
var tiny = []string{
	"-jobs", "300", "-producers", "2", "-batch", "50", "-concurrency", "8",
	"-rate", "100", "-duration", "100ms", "-workflows", "30", "-children", "40",
	"-pending", "500", "-payload", "16", "-crash-samples", "1", "-lease", "300ms",
	"-soak-jobs", "400", "-soak-retention", "100ms", "-timeout", "1m",
}

// TestFlags: what the command line selects, and the usage errors.
func TestFlags(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	tests := []struct {
		args       []string
		scenarios  []string
		topologies []string
	}{
		{nil, defaultScenarios(), []string{TopologySingle}},
		{[]string{"-scenario", "all"}, scenarioNames(), []string{TopologySingle}},
		{[]string{"-scenario", "soak, memory,soak"}, []string{"soak", "memory"}, []string{TopologySingle}},
		{[]string{"-cluster"}, defaultScenarios(), []string{TopologyCluster}},
		{[]string{"-topology", "single,cluster"}, defaultScenarios(), []string{TopologySingle, TopologyCluster}},
		{[]string{"-redis", "redis+cluster://a:1,b:2", "-scenario", "throughput,latency,chained,workflow", "-json", "-"},
			[]string{"throughput", "latency", "chained", "workflow"}, []string{TopologyURL}},
	}
	for _, tt := range tests {
		o, err := flags(tt.args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if d := cmp.Diff(tt.scenarios, o.cfg.Scenarios); d != "" {
			t.Errorf("%q: scenarios (-want +got):\n%s", tt.args, d)
		}
		if d := cmp.Diff(tt.topologies, o.topologies); d != "" {
			t.Errorf("%q: topologies (-want +got):\n%s", tt.args, d)
		}
	}
	if slices.Contains(defaultScenarios(), "soak") {
		t.Errorf("the default scenarios include the soak: %v", defaultScenarios())
	}

	for _, args := range [][]string{
		{"-scenario", "nope"}, {"-scenario", ","}, {"-jobs", "0"}, {"-topology", "triple"},
		{"-cluster", "-topology", "single"}, {"-redis", "redis://x:1", "-cluster"}, {"-partitions", "2000"},
		{"-lease", "1ms"}, {"-rounds", "0"}, {"extra"}, {"-bogus"}, {"-redis", "redis+sentinel://s:1?master_name=m"},
	} {
		var usage *UsageError
		if _, err := flags(args, io.Discard); !errors.As(err, &usage) {
			t.Errorf("%q: %v, want a *UsageError", args, err)
		}
	}
	if _, err := flags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	// $REDIS_URL is a default that -cluster overrides.
	t.Setenv("REDIS_URL", "redis://x:1")
	if o, err := flags([]string{"-cluster"}, io.Discard); err != nil || o.redisURL != "" {
		t.Errorf("-cluster with $REDIS_URL: %+v, %v", o, err)
	}
}

// run runs Main with JSON on stdout and returns it, failing the test on an
// error.
func run(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Main(ctx, append(args, "-json", "-"), &stdout, &stderr); err != nil {
		t.Fatalf("Main(%q): %v\nstderr:\n%s", args, err, stderr.String())
	}
	t.Logf("%s", stderr.String())
	return stdout.Bytes()
}

// TestEveryScenario runs every scenario, the soak too, small, on a
// private redis-server, and checks what each reports.
func TestEveryScenario(t *testing.T) {
	t.Parallel()
	out := run(t, append([]string{"-scenario", "all"}, tiny...)...)
	var rep report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Topology != TopologySingle || rep.Config.Partitions != 1 || len(rep.Errors) > 0 {
		t.Fatalf("report: topology %q, %d partitions, errors %q", rep.Topology, rep.Config.Partitions, rep.Errors)
	}
	if rep.Throughput == nil || len(rep.Throughput.Runs) != 4 || rep.Limits == nil || rep.Latency == nil ||
		rep.Workflow == nil || rep.Chained == nil || rep.Fanout == nil {
		t.Fatalf("a scenario did not report: %+v", rep)
	}
	checkMemory(t, rep.Memory)
	checkCrash(t, rep.CrashResume)
	if l := rep.Latency; l.Ping.P50 <= 0 || l.Ping.P50 > l.Ping.Max || l.EnqueueCall.P50 <= 0 {
		t.Errorf("latency: PING yardstick %+v, Enqueue call %+v", l.Ping, l.EnqueueCall)
	}

	s := rep.Soak
	if s == nil || s.Jobs != 400 || s.JobsPerSec <= 0 {
		t.Fatalf("soak: %+v", s)
	}
	if s.WorkerRSSBaseline <= 0 || s.WorkerRSSFinal <= 0 || s.RedisBaseline <= 0 {
		t.Errorf("soak: no memory figures: %+v", s)
	}
	// 400 jobs kept 100ms: the sweeps delete them within seconds.
	if !s.RedisReturned || s.RedisFinal > s.RedisBaseline+s.ToleranceBytes {
		t.Errorf("soak: Redis memory %d, baseline %d: not back after %.1fs", s.RedisFinal, s.RedisBaseline, s.SettleSeconds)
	}

	// The JSON field names other programs read (bench/peers).
	var raw map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	run0 := raw["throughput"].(map[string]any)["runs"].([]any)[0].(map[string]any)
	for _, field := range []string{"processed_per_sec", "enqueue_per_sec", "redis"} {
		if _, ok := run0[field]; !ok {
			t.Errorf("throughput run without %q: %v", field, run0)
		}
	}
}

// TestClusterAgainstSingle runs throughput, memory and crash-resume on a
// private redis-server and on a private 3-node cluster, and compares them.
func TestClusterAgainstSingle(t *testing.T) {
	t.Parallel()
	out := run(t, append([]string{"-topology", "single,cluster", "-scenario", "throughput,memory,crash-resume", "-rounds", "3"}, tiny...)...)
	var cmp comparison
	if err := json.Unmarshal(out, &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Reports) != 2 || len(cmp.Throughput) != 4 {
		t.Fatalf("%d reports, %d throughput ratios, want 2 and 4", len(cmp.Reports), len(cmp.Throughput))
	}
	c := cmp.Reports[1]
	if c.Topology != TopologyCluster || !c.Redis.Cluster || c.Config.Partitions != 2*clusterNodes || len(c.Errors) > 0 {
		t.Fatalf("cluster report: %q, cluster %v, %d partitions, errors %q", c.Topology, c.Redis.Cluster, c.Config.Partitions, c.Errors)
	}
	for _, r := range cmp.Throughput {
		if r.Ratio <= 0 || r.Base != TopologySingle || r.Other != TopologyCluster {
			t.Errorf("ratio: %+v", r)
		}
	}
	// Each run is the median of three rounds.
	for _, rep := range cmp.Reports {
		for _, run := range rep.Throughput.Runs {
			sorted := slices.Sorted(slices.Values(run.RoundsPerSec))
			if rep.Throughput.Rounds != 3 || len(sorted) != 3 || run.ProcessedPerSec != sorted[1] {
				t.Errorf("%s %s, %s: %v rounds, processed/s %v, want the median of 3", rep.Topology, run.Mode, run.Retention,
					run.RoundsPerSec, run.ProcessedPerSec)
			}
		}
	}
	// The figures are summed over the three masters, and the round trips
	// counted on each node's client.
	cost := c.Throughput.Runs[0].Redis
	if cost.CommandsPerJob <= 0 || cost.ProducerTripsPerJob <= 0 || cost.WorkerTripsPerJob <= 0 {
		t.Errorf("cluster throughput cost: %+v", cost)
	}
	if run := c.Throughput.Runs[0]; run.CommandsPerSec < cost.CommandsPerJob*run.ProcessedPerSec*0.999 || run.CommandsPerSec <= 0 {
		t.Errorf("commands/s %v, want %v commands/job × %v jobs/s", run.CommandsPerSec, cost.CommandsPerJob, run.ProcessedPerSec)
	}
	checkMemory(t, c.Memory)
	checkCrash(t, c.CrashResume)
}

func checkMemory(t *testing.T, m *memoryResult) {
	t.Helper()
	if m == nil || m.Jobs != 500 || m.PayloadBytes < 16 {
		t.Fatalf("memory: %+v", m)
	}
	// At 500 jobs a reading's noise (the key table resizing, a lazy free
	// of an earlier scenario's keys) is as large as the jobs: the figures
	// per job must be there, and one job's hash must hold its payload.
	for _, st := range []memoryState{m.Ready, m.Delayed} {
		if st.BytesPerJob == 0 || st.PendingBytes <= 0 || st.JobHashBytes <= int64(m.PayloadBytes) {
			t.Errorf("memory: %+v", st)
		}
	}
	if p := m.Plain; p.BytesPerValue <= float64(m.PayloadBytes) || p.OverheadPerValue != p.BytesPerValue-float64(m.PayloadBytes) ||
		m.ReadyBeyondPlain != m.Ready.BytesPerJob-p.BytesPerValue {
		t.Errorf("memory: plain values %+v, ready jobs beyond them %v", p, m.ReadyBeyondPlain)
	}
}

func checkCrash(t *testing.T, c *crashResult) {
	t.Helper()
	if c == nil || len(c.Samples) != 1 {
		t.Fatalf("crash-resume: %+v", c)
	}
	s := c.Samples[0]
	// The lease must expire before the standby can take the job: the
	// reclaim takes at least most of it.
	if s.CrashAttempt != 1 || s.ReclaimSeconds < 0.5*c.LeaseSeconds || s.FinishSeconds <= 0 ||
		s.StepsRerun < 1 || s.StepsRerun > WorkflowSteps-crashKillAfter-1 {
		t.Errorf("crash-resume sample: %+v (lease %gs)", s, c.LeaseSeconds)
	}
}
