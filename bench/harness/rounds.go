package harness

import (
	"context"
	"fmt"
	"slices"
)

// Throughput rounds: on a shared machine one run says little, and runs
// minutes apart on two topologies say less. With -rounds N the throughput
// scenario runs N times on every topology, interleaved (single, cluster,
// single, cluster, ...) so that drifting load slows them alike, and each
// mode's median run is reported.

// runThroughputRounds runs the throughput scenario cfg.Rounds times on each
// target, interleaved, and stores each target's medians in its report.
func runThroughputRounds(ctx context.Context, targets []*target, reps []*report, cfg config) {
	s := scenarioByName("throughput")
	results := make([][]*throughputResult, len(targets))
	for round := range cfg.Rounds {
		for i, t := range targets {
			if ctx.Err() != nil {
				return
			}
			if cfg.Rounds > 1 {
				t.progress("throughput: round %d of %d", round+1, cfg.Rounds)
			}
			part := &report{}
			err := runScenario(ctx, s, t, reps[i].Config, part)
			if part.Throughput != nil {
				results[i] = append(results[i], part.Throughput)
				reps[i].Throughput = medianThroughput(results[i])
			}
			if err != nil {
				fmt.Fprintf(t.stderr, "bench: %s: throughput: %v\n", t.topology, err)
				reps[i].Errors = append(reps[i].Errors, fmt.Sprintf("throughput, round %d: %v", round+1, err))
			}
		}
	}
}

// medianThroughput is rs (rounds of one topology) in one result: for each
// mode and retention, the run with the median processed/s, with every
// round's processed/s alongside.
func medianThroughput(rs []*throughputResult) *throughputResult {
	res := *rs[0]
	res.Runs = nil
	res.Rounds = len(rs)
	for k := range rs[0].Runs {
		var runs []throughputRun
		for _, r := range rs {
			if k < len(r.Runs) {
				runs = append(runs, r.Runs[k])
			}
		}
		perSec := make([]float64, len(runs))
		for i, r := range runs {
			perSec[i] = r.ProcessedPerSec
		}
		slices.SortFunc(runs, func(a, b throughputRun) int {
			switch {
			case a.ProcessedPerSec < b.ProcessedPerSec:
				return -1
			case a.ProcessedPerSec > b.ProcessedPerSec:
				return 1
			}
			return 0
		})
		median := runs[(len(runs)-1)/2]
		if len(rs) > 1 {
			median.RoundsPerSec = perSec
		}
		res.Runs = append(res.Runs, median)
	}
	return &res
}
