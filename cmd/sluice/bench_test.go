package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
)

// TestBench: sluice bench runs the benchmark with its own flags on the
// Redis of --redis, prints its figures as JSON with --json, lists its
// flags for -h and exits 2 on a bad flag.
func TestBench(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	out, errs, code := f.sluice("--redis", f.url, "--json", "bench", "-scenario", "throughput",
		"-jobs", "200", "-producers", "2", "-batch", "20", "-concurrency", "4")
	if code != exitOK {
		t.Fatalf("sluice bench: exit %d\nstderr: %s", code, errs)
	}
	var rep struct {
		Topology   string
		Throughput struct {
			Runs []struct {
				ProcessedPerSec float64 `json:"processed_per_sec"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("sluice bench --json: %v\n%s", err, out)
	}
	if rep.Topology != "url" || len(rep.Throughput.Runs) != 4 || rep.Throughput.Runs[0].ProcessedPerSec <= 0 {
		t.Fatalf("sluice bench --json: %+v", rep)
	}
	if !strings.Contains(errs, "Throughput: 200 no-op jobs") {
		t.Fatalf("sluice bench --json: no table on stderr:\n%s", errs)
	}

	if _, errs, code := f.sluice("bench", "-h"); code != exitOK || !strings.Contains(errs, "-scenario") {
		t.Fatalf("sluice bench -h: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := f.sluice("bench", "-scenario", "nope"); code != exitUsage || !strings.Contains(errs, `unknown scenario "nope"`) {
		t.Fatalf("sluice bench -scenario nope: exit %d, stderr %q", code, errs)
	}
	// global flags the benchmark would not use are refused, not ignored
	for _, args := range [][]string{{"--namespace", "x", "bench"}, {"--partitions", "q=2", "bench"}} {
		if _, errs, code := f.sluice(args...); code != exitUsage || !strings.Contains(errs, "bench takes --redis and --json") {
			t.Errorf("sluice %v: exit %d, stderr %q; want a usage error", args, code, errs)
		}
	}
}

// TestBenchSplit: the global flags before "bench" are the CLI's, whatever
// their values, and everything after it is the benchmark's.
func TestBenchSplit(t *testing.T) {
	t.Parallel()
	var c cli
	fs := pflag.NewFlagSet("sluice", pflag.ContinueOnError)
	c.globalFlags(fs)
	for _, tc := range []struct{ args, pre, own []string }{
		{[]string{"bench", "-json", "out.json"}, []string{}, []string{"-json", "out.json"}},
		{[]string{"--namespace", "bench", "--json", "bench", "-redis", "x"}, []string{"--namespace", "bench", "--json"}, []string{"-redis", "x"}},
		{[]string{"--redis=redis://h", "bench"}, []string{"--redis=redis://h"}, []string{}},
	} {
		pre, own := benchSplit(fs, tc.args)
		if !cmp.Equal(pre, tc.pre, cmpopts.EquateEmpty()) || !cmp.Equal(own, tc.own, cmpopts.EquateEmpty()) {
			t.Errorf("benchSplit(%q) = %q, %q; want %q, %q", tc.args, pre, own, tc.pre, tc.own)
		}
	}
}
