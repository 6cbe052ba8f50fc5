package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/internal/redisproc"
)

// tiny is a run small enough for a test on a loaded machine.
var tiny = config{
	Rounds: 1, TunedCheck: time.Millisecond, Sizes: harness.Sizes{
		Jobs: 300, Producers: 4, Batch: 50, Concurrency: 10, Rate: 200,
		Duration: 300 * time.Millisecond, Workflows: 30, Timeout: time.Minute,
	},
}

// startTarget starts a private redis-server and connects to it.
func startTarget(t *testing.T) *target {
	t.Helper()
	srv, err := redisproc.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	tg, err := connect(t.Context(), "redis://"+srv.Addr(), tiny.Producers)
	if err != nil {
		_ = srv.Close()
		t.Fatal(err)
	}
	tg.server = srv // close stops it
	t.Cleanup(tg.close)
	return tg
}

// wantFigures checks that figs has every figure the comparisons of
// scenario take from side (Sluice or asynq), each positive.
func wantFigures(t *testing.T, scenario string, figs figures, key func(comparison) string) {
	t.Helper()
	for _, c := range comparisons {
		if c.Scenario != scenario {
			continue
		}
		if v, ok := figs[key(c)]; !ok || v <= 0 {
			t.Errorf("%s: figure %q = %v, %v; want a positive value", scenario, key(c), v, ok)
		}
	}
}

func asynqFigure(c comparison) string  { return c.Asynq }
func sluiceFigure(c comparison) string { return c.Sluice }

// TestAsynqScenarios runs each asynq scenario, small, on a real Redis:
// it yields every figure the table compares, and leaves no asynq key.
func TestAsynqScenarios(t *testing.T) {
	tg := startTarget(t)
	setups := tiny.setups()
	for _, s := range scenarios {
		// asynq's default setup polls an empty queue every ½ to 1½ s:
		// run it once, on the shortest scenario, to cover it.
		use := setups[1:]
		if s.name == "workflow" {
			use = setups
		}
		for _, setup := range use {
			figs, err := s.asynq(t.Context(), tg, tiny, setup)
			if err != nil {
				t.Fatalf("%s, %s: %v", s.name, setup.Name, err)
			}
			wantFigures(t, s.name, figs, asynqFigure)
			if s.name == "latency" {
				p50, p99, top := figs["latency pickup p50"], figs["latency pickup p99"], figs["latency pickup max"]
				if p50 > p99 || p99 > top {
					t.Errorf("%s: latency p50 %v, p99 %v, max %v: not in order", setup.Name, p50, p99, top)
				}
			}
		}
	}
	left, err := tg.admin.Keys(t.Context(), "asynq:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("asynq keys left after the runs: %q", left)
	}
}

// TestSluiceProgram builds the Sluice benchmark program from this
// checkout, runs every scenario it is compared in, small, on a real
// Redis, and reads every figure the table compares from its JSON report.
func TestSluiceProgram(t *testing.T) {
	tg := startTarget(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	bin, err := buildSluice(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for _, s := range scenarios {
		figs, err := runSluice(ctx, bin, tg.url, tiny, &log, s.sluice...)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		wantFigures(t, s.name, figs, sluiceFigure)
	}
	// On an external Redis the program deletes its keys.
	left, err := tg.admin.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if left > 0 {
		t.Errorf("%d keys left by the Sluice program", left)
	}
	if testing.Verbose() {
		_, _ = io.WriteString(os.Stderr, log.String())
	}
}

// TestParseSluiceReportRejects: output that is not a usable report is an
// errReport, not a table of zeros.
func TestParseSluiceReportRejects(t *testing.T) {
	t.Parallel()
	for name, out := range map[string]string{
		"not JSON":   "Sluice benchmark, 2026-01-01",
		"no figures": `{"redis": {"addr": "127.0.0.1:6379"}}`,
		"errors":     `{"throughput": {"runs": []}, "errors": ["throughput: boom"]}`,
	} {
		if _, err := parseSluiceReport([]byte(out)); !errors.Is(err, errReport) {
			t.Errorf("%s: got %v, want errReport", name, err)
		}
	}
}

// TestFinish: medians over rounds, Sluice's advantage for rates and for
// latencies, and the target verdict against every asynq setup.
func TestFinish(t *testing.T) {
	t.Parallel()
	rep := &report{Setups: tiny.setups(), Samples: map[string]map[string][]float64{}}
	tp := throughputKey(modeConcurrent, discardRetention, "processed/s")
	rep.add(sluiceSide, figures{tp: 900, "latency pickup p50": 2})
	rep.add(sluiceSide, figures{tp: 1200, "latency pickup p50": 1})
	rep.add(sluiceSide, figures{tp: 1000, "latency pickup p50": 4})
	rep.add("asynq default", figures{tp: 100, "latency pickup p50": 1000})
	rep.add("asynq tuned", figures{tp: 400, "latency pickup p50": 1})
	rep.finish()
	got := map[string]line{}
	for _, l := range rep.Lines {
		got[l.Sluice] = l
	}
	if len(got) != 2 {
		t.Fatalf("lines for %d figures, want 2 (those sampled): %+v", len(got), rep.Lines)
	}
	l := got[tp]
	if l.SluiceMedian != 1000 || l.Advantage["asynq default"] != 10 || l.Advantage["asynq tuned"] != 2.5 {
		t.Errorf("throughput: median %v, advantages %v; want 1000, 10 and 2.5", l.SluiceMedian, l.Advantage)
	}
	if l.Meets == nil || *l.Meets {
		t.Errorf("throughput: meets %v, want false (2.5× the tuned setup, target 3×)", l.Meets)
	}
	l = got["latency pickup p50"]
	if l.SluiceMedian != 2 || l.Advantage["asynq default"] != 500 || l.Advantage["asynq tuned"] != 0.5 || l.Meets != nil {
		t.Errorf("latency: median %v, advantages %v, meets %v; want 2, 500 and 0.5, no target", l.SluiceMedian, l.Advantage, l.Meets)
	}
	var b strings.Builder
	rep.writeTable(&b)
	if !strings.Contains(b.String(), "≥ 3×: below") {
		t.Errorf("table lacks the verdict:\n%s", b.String())
	}
}
