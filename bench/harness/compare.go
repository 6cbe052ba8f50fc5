package harness

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// clusterFloor is the requirement: the 3-node cluster on the same machine
// keeps at least this share of the single Redis's throughput.
const clusterFloor = 0.8

// comparison is what -topology with several set-ups writes as JSON: each
// one's report, and the throughput of each against the first.
type comparison struct {
	Reports []*report `json:"reports"`
	// Throughput compares each throughput run (mode and retention) of
	// every later topology with the same run on the first.
	Throughput []throughputRatio `json:"throughput_ratios,omitempty"`
}

// throughputRatio is one throughput run on two topologies.
type throughputRatio struct {
	Mode        string  `json:"mode"`
	Retention   string  `json:"retention"`
	Base        string  `json:"base_topology"`
	Other       string  `json:"topology"`
	BasePerSec  float64 `json:"base_processed_per_sec"`
	OtherPerSec float64 `json:"processed_per_sec"`
	// Ratio is OtherPerSec / BasePerSec; against a single Redis, a
	// cluster should keep Floor of it.
	Ratio float64 `json:"ratio"`
	Floor float64 `json:"floor"`
	Pass  bool    `json:"pass"`
}

// compare sets the reports side by side.
func compare(reps []*report) *comparison {
	c := &comparison{Reports: reps}
	base := reps[0]
	if base.Throughput == nil {
		return c
	}
	for _, other := range reps[1:] {
		if other.Throughput == nil {
			continue
		}
		for _, b := range base.Throughput.Runs {
			for _, o := range other.Throughput.Runs {
				if o.Mode != b.Mode || o.Retention != b.Retention || b.ProcessedPerSec <= 0 {
					continue
				}
				r := throughputRatio{
					Mode: b.Mode, Retention: b.Retention, Base: base.Topology, Other: other.Topology,
					BasePerSec: b.ProcessedPerSec, OtherPerSec: o.ProcessedPerSec,
					Ratio: o.ProcessedPerSec / b.ProcessedPerSec, Floor: clusterFloor,
				}
				r.Pass = r.Ratio >= r.Floor
				c.Throughput = append(c.Throughput, r)
			}
		}
	}
	return c
}

func (c *comparison) writeTable(w io.Writer) {
	if len(c.Throughput) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Throughput by topology (processed/s; requirement for a cluster: at least %.2f of single)\n", clusterFloor)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tcompleted\tbase\tprocessed/s\tother\tprocessed/s\tratio\t\t")
	for _, r := range c.Throughput {
		verdict := "meets"
		if !r.Pass {
			verdict = "below"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t\n", r.Mode, r.Retention, r.Base, Thousands(r.BasePerSec),
			r.Other, Thousands(r.OtherPerSec), r.Ratio, verdict)
	}
	tw.Flush()
}
