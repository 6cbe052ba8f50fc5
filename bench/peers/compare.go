package main

import (
	"slices"
)

// figures are one run's measurements by name, e.g. "latency pickup p50".
type figures map[string]float64

// comparison is one line of the side-by-side table: a Sluice figure next
// to an asynq figure that measures the same thing.
type comparison struct {
	Scenario string `json:"scenario"`
	Label    string `json:"label"`
	// Sluice and Asynq name the figures compared.
	Sluice string `json:"sluice_figure"`
	Asynq  string `json:"asynq_figure"`
	Unit   string `json:"unit"`
	// LowerBetter: a latency, not a rate.
	LowerBetter bool `json:"lower_better,omitempty"`
	// Target is the Sluice advantage the project claims (bench/RESULTS.md); 0 when
	// it claims none.
	Target float64 `json:"target,omitempty"`
}

// comparisons lists the table's lines, by scenario.
var comparisons = func() []comparison {
	var cs []comparison
	for _, m := range throughputModes {
		for _, what := range []string{"processed/s", "enqueue/s"} {
			c := comparison{
				Scenario: "throughput", Label: m.mode + ", " + m.retention + ": " + what, Unit: "/s",
				Sluice: throughputKey(m.mode, m.retention, what), Asynq: throughputKey(m.mode, m.retention, what),
			}
			if m.mode == modeConcurrent && m.retention == discardRetention && what == "processed/s" {
				c.Target = 3
			}
			cs = append(cs, c)
		}
	}
	for _, l := range []struct{ label, key string }{
		{"enqueue to handler p50", "latency pickup p50"},
		{"enqueue to handler p90", "latency pickup p90"},
		{"enqueue to handler p99", "latency pickup p99"},
		{"enqueue to handler max", "latency pickup max"},
		{"Enqueue call p50", "latency enqueue-call p50"},
		{"PING at the same pace p50 (the floor)", "latency ping p50"},
		{"producer's max lag behind schedule", "latency max send lag"},
	} {
		cs = append(cs, comparison{Scenario: "latency", Label: l.label, Sluice: l.key, Asynq: l.key, Unit: "ms", LowerBetter: true})
	}
	return append(cs,
		comparison{Scenario: "workflow", Label: "1 job of 10 durable steps vs 10 chained tasks", Unit: "/s",
			Sluice: workflowKey, Asynq: chainedKey, Target: 2},
		comparison{Scenario: "workflow", Label: "10 chained jobs vs 10 chained tasks", Unit: "/s",
			Sluice: chainedKey, Asynq: chainedKey},
	)
}()

// advantage is how many times better the Sluice figure s is than the
// asynq figure a: s/a for rates, a/s for latencies; 0 when undefined.
func (c comparison) advantage(s, a float64) float64 {
	if c.LowerBetter {
		s, a = a, s
	}
	if a <= 0 {
		return 0
	}
	return s / a
}

// median of vs (the mean of the middle two for an even count); 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}
