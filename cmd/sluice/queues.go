package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

func (c *cli) queuesPause(ctx context.Context, op string, args []string) error {
	rest, err := parse(c.flags("queues "+op), args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usagef("queues %s QUEUE...", op)
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	for _, q := range rest {
		if op == "pause" {
			err = client.PauseQueue(ctx, q)
		} else {
			err = client.ResumeQueue(ctx, q)
		}
		if err != nil {
			return err
		}
		if !c.json {
			fmt.Fprintf(c.stdout, "%s %s\n", strings.TrimSuffix(op, "e")+"ed", q)
		}
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"queues": rest, "result": strings.TrimSuffix(op, "e") + "ed"})
	}
	return nil
}

// statsJSON is one queue of `queues stats --json`.
type statsJSON struct {
	Queue              string           `json:"queue"`
	Partitions         int              `json:"partitions"`
	Paused             int              `json:"paused_partitions"`
	Depth              map[string]int64 `json:"depth"`
	Window             string           `json:"window"`
	Finished           map[string]int64 `json:"finished"`
	CompletedPerMinute float64          `json:"completed_per_minute"`
	RunTimeCount       int64            `json:"run_time_count"`
	RunTimeP50         string           `json:"run_time_p50,omitempty"`
	RunTimeP90         string           `json:"run_time_p90,omitempty"`
	RunTimeP99         string           `json:"run_time_p99,omitempty"`
}

func (c *cli) queuesStats(ctx context.Context, args []string) error {
	fs := c.flags("queues stats")
	window := fs.Duration("window", 5*time.Minute, "span of the rates (at most 2h)")
	queues, err := parse(fs, args)
	if err != nil {
		return err
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	if len(queues) == 0 {
		if queues, err = c.knownQueues(ctx); err != nil {
			return err
		}
		if len(queues) == 0 {
			return usagef("queues stats QUEUE... (no live worker names a queue)")
		}
	}
	var all []admin.QueueStats
	for _, q := range queues {
		st, err := client.QueueStats(ctx, q, *window)
		if err != nil {
			return err
		}
		all = append(all, st)
	}
	if c.json {
		out := []statsJSON{}
		for _, s := range all {
			j := statsJSON{Queue: s.Queue, Partitions: s.Partitions, Paused: s.Paused, Depth: s.Depth, Window: s.Window.String(),
				Finished: s.Finished, CompletedPerMinute: s.CompletedPerMinute, RunTimeCount: s.RunTime.Count}
			if s.RunTime.Count > 0 {
				j.RunTimeP50, j.RunTimeP90, j.RunTimeP99 = s.RunTime.P50.String(), s.RunTime.P90.String(), s.RunTime.P99.String()
			}
			out = append(out, j)
		}
		return writeJSON(c.stdout, out)
	}
	header := []string{"QUEUE", "PAUSED"}
	for _, s := range flow.States {
		header = append(header, strings.ToUpper(s))
	}
	header = append(header, "DONE/MIN", "P50", "P90", "P99")
	t := newTable(c.stdout, header...)
	for _, s := range all {
		paused := "no"
		if s.Paused > 0 {
			paused = fmt.Sprintf("%d/%d", s.Paused, s.Partitions)
		}
		row := []string{s.Queue, paused}
		for _, st := range flow.States {
			row = append(row, strconv.FormatInt(s.Depth[st], 10))
		}
		row = append(row, strconv.FormatFloat(s.CompletedPerMinute, 'f', 1, 64), dur(s.RunTime.P50), dur(s.RunTime.P90), dur(s.RunTime.P99))
		t.row(row...)
	}
	t.flush()
	fmt.Fprintf(c.stdout, "rates over the last %s; run times are bucket upper bounds (within 19%%)\n", all[0].Window)
	return nil
}

// knownQueues are the queues of --partitions and of the live workers.
func (c *cli) knownQueues(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	for q := range c.partitions {
		seen[q] = true
	}
	ws, err := c.client.Workers(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		for q := range w.Queues {
			seen[q] = true
		}
	}
	out := make([]string, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Strings(out)
	return out, nil
}

// workerJSON is one worker of `workers --json`.
type workerJSON struct {
	ID          string         `json:"id"`
	Host        string         `json:"host"`
	PID         int            `json:"pid"`
	Queues      map[string]int `json:"queues"`
	Concurrency int            `json:"concurrency"`
	Jobs        []string       `json:"jobs"`
	Started     *time.Time     `json:"started,omitempty"`
	LastSeen    *time.Time     `json:"last_seen,omitempty"`
}

func (c *cli) workers(ctx context.Context, args []string) error {
	rest, err := parse(c.flags("workers"), args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("workers takes no arguments")
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	ws, err := client.Workers(ctx)
	if err != nil {
		return err
	}
	if c.json {
		out := []workerJSON{}
		for _, w := range ws {
			out = append(out, workerJSON{ID: w.ID, Host: w.Host, PID: w.PID, Queues: w.Queues, Concurrency: w.Concurrency,
				Jobs: append([]string{}, w.Jobs...), Started: ts(w.Started), LastSeen: ts(w.LastSeen)})
		}
		return writeJSON(c.stdout, out)
	}
	t := newTable(c.stdout, "WORKER", "HOST", "PID", "QUEUES", "RUNNING", "STARTED", "LAST SEEN", "JOBS")
	for _, w := range ws {
		qs := make([]string, 0, len(w.Queues))
		for q, n := range w.Queues {
			qs = append(qs, q+"("+strconv.Itoa(n)+")")
		}
		sort.Strings(qs)
		t.row(w.ID, w.Host, strconv.Itoa(w.PID), strings.Join(qs, ","), fmt.Sprintf("%d/%d", len(w.Jobs), w.Concurrency),
			when(w.Started), when(w.LastSeen), orDash(clip(strings.Join(w.Jobs, " "), 80)))
	}
	t.flush()
	return nil
}
