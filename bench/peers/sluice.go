package main

// The Sluice side: the Sluice benchmark program (github.com/sluicehq/sluice/bench),
// built from this checkout and run as a subprocess on the same Redis.
//
// It could call the harness in process instead; it does not, on purpose.
// The figures compared are then the ones `go run ./bench` prints for
// anyone, read from its JSON report (its public output), not from the
// harness's internals, which would have to be exported for this alone. And
// each side's heap and goroutines stay its own: in one process, the
// garbage and the clients asynq's runs leave behind would be collected and
// scheduled during Sluice's timed runs and the other way round, and which
// side paid for the other would change with the round order. Both sides
// still run the same way: producers and worker (server) in one process,
// with separate connection pools, timed from the first enqueue to the last
// ack; process start and the build are outside every timed window.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/bench/harness"
)

// sluiceProgram is the import path of the Sluice benchmark program; this
// module's go.mod names it as a tool and replaces the sluice module with
// this checkout.
const sluiceProgram = "github.com/sluicehq/sluice/bench"

// buildSluice compiles the Sluice benchmark program into dir and returns
// the binary's path. It runs the go tool in the current directory, which
// must be inside this module (bench/peers).
func buildSluice(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "sluice-bench")
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", bin, sluiceProgram)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s (run from bench/peers, or give -sluice-bin): %w", sluiceProgram, err)
	}
	return bin, nil
}

// goTool is the go command: $GOROOT/bin/go of the running toolchain when
// it is there (as under go run), else "go" from PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sluiceArgs are the Sluice program's flags for scenarios, with cfg's
// sizes, on the Redis at url, writing JSON to stdout.
func sluiceArgs(url string, cfg config, scenarios ...string) []string {
	return append([]string{"-redis", url, "-scenario", strings.Join(scenarios, ","), "-json", "-"}, cfg.Sizes.Args()...)
}

// runSluice runs the Sluice program at bin for scenarios and returns its
// figures. Its table and progress (stderr) go to log.
func runSluice(ctx context.Context, bin, url string, cfg config, log io.Writer, scenarios ...string) (figures, error) {
	progress("sluice: %s", strings.Join(scenarios, ","))
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, sluiceArgs(url, cfg, scenarios...)...)
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(&stderr, log)
	runErr := cmd.Run()
	figs, parseErr := parseSluiceReport(stdout.Bytes())
	if runErr != nil || parseErr != nil {
		return nil, fmt.Errorf("sluice program %v: %w; its stderr ends:\n%s",
			scenarios, errors.Join(runErr, parseErr), tail(stderr.String(), 2000))
	}
	return figs, nil
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// sluiceReport is the part of the Sluice program's JSON report (bench's
// report.go) that is compared; field names are the program's.
type sluiceReport struct {
	Throughput *struct {
		Runs []struct {
			Mode            string  `json:"mode"`
			Retention       string  `json:"retention"`
			EnqueuePerSec   float64 `json:"enqueue_per_sec"`
			ProcessedPerSec float64 `json:"processed_per_sec"`
		} `json:"runs"`
	} `json:"throughput"`
	Latency *struct {
		Pickup       harness.Distribution `json:"pickup"`
		EnqueueCall  harness.Distribution `json:"enqueue_call"`
		Ping         harness.Distribution `json:"ping"`
		MaxSendLagMS float64              `json:"max_send_lag_ms"`
	} `json:"latency"`
	Workflow *struct {
		WorkflowsPerSec float64 `json:"workflows_per_sec"`
	} `json:"workflow"`
	Chained *struct {
		WorkflowsPerSec float64 `json:"workflows_per_sec"`
	} `json:"chained"`
	Errors []string `json:"errors"`
}

// errReport: the Sluice program's output is not the report expected.
var errReport = errors.New("unexpected Sluice benchmark report")

// parseSluiceReport reads the Sluice program's JSON report and returns
// its figures under the names the asynq side uses.
func parseSluiceReport(b []byte) (figures, error) {
	var rep sluiceReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%w: %w", errReport, err)
	}
	if len(rep.Errors) > 0 {
		return nil, fmt.Errorf("%w: it reports errors: %s", errReport, strings.Join(rep.Errors, "; "))
	}
	out := figures{}
	if t := rep.Throughput; t != nil {
		for _, run := range t.Runs {
			out[throughputKey(run.Mode, run.Retention, "enqueue/s")] = run.EnqueuePerSec
			out[throughputKey(run.Mode, run.Retention, "processed/s")] = run.ProcessedPerSec
		}
	}
	if l := rep.Latency; l != nil {
		maps.Copy(out, latencyFigures(l.Pickup, l.EnqueueCall, l.Ping, l.MaxSendLagMS))
	}
	if w := rep.Workflow; w != nil {
		out[workflowKey] = w.WorkflowsPerSec
	}
	if c := rep.Chained; c != nil {
		out[chainedKey] = c.WorkflowsPerSec
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no figures in it", errReport)
	}
	return out, nil
}
