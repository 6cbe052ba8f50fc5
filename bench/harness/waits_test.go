package harness

import (
	"encoding/json"
	"testing"
)

// TestWaitScenarios runs the signal and sleep scenarios, small, on a
// private redis-server and a private 3-node cluster, and checks what they
// report: every workflow resumed, and the figures are there.
func TestWaitScenarios(t *testing.T) {
	t.Parallel()
	out := run(t, append([]string{"-topology", "single,cluster", "-scenario", "signal,sleep"}, tiny...)...)
	var cmp comparison
	if err := json.Unmarshal(out, &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Reports) != 2 {
		t.Fatalf("%d reports, want 2", len(cmp.Reports))
	}
	for _, rep := range cmp.Reports {
		if len(rep.Errors) > 0 {
			t.Fatalf("%s: errors %q", rep.Topology, rep.Errors)
		}
		s := rep.Signal
		// -rate 100 -duration 100ms: 10 signals.
		if s == nil || s.Signals != 10 || s.AfterSend.P50 <= 0 || s.AfterSend.Max < s.AfterReturn.Max ||
			s.SignalCall.P50 <= 0 || s.Redis.CommandsPerJob <= 0 || s.Redis.ProducerTripsPerJob < 1 {
			t.Errorf("%s: signal: %+v", rep.Topology, s)
		}
		z := rep.Sleep
		if z == nil || z.Jobs != 500 || z.PayloadBytes < 16 || z.DuePerSec != sleepDuePerSec {
			t.Fatalf("%s: sleep: %+v", rep.Topology, z)
		}
		// A sleep before the first step needs no steps hash (the timer is
		// in the job's hash), and each job resumed at or after its wake
		// time. At 500 jobs the readings per job are as noisy as they are
		// large (checkMemory): they must be there, and a job's hash must
		// hold its payload.
		if z.ReadyPerJob == 0 || z.SleepingPerJob == 0 || z.StepsHashBytes != 0 ||
			float64(z.ReadyJobHashBytes) <= z.PayloadBytes || float64(z.SleepingJobHashBytes) <= z.PayloadBytes ||
			z.SleepingSteady != z.SleepingBeyondPayload-z.CallRecordBytes {
			t.Errorf("%s: sleep memory: %+v", rep.Topology, z)
		}
		if z.Lag.P50 < 0 || z.Lag.Max < z.Lag.P99 || z.StartLag.P50 > z.Lag.P50 || z.Redis.CommandsPerJob <= 0 {
			t.Errorf("%s: sleep lag: %+v", rep.Topology, z)
		}
	}
}
