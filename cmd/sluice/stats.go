package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/runtime"
)

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
	// At is Redis's time of the reading, with --watch (the text heads
	// each block with it)
	At *time.Time `json:"at,omitempty"`
}

// Terminal control: cursor home, then clear the screen.
const clearScreen = "\x1b[H\x1b[2J"

func (c *cli) queuesStatsCmd() *cobra.Command {
	var (
		window, interval time.Duration
		watch            bool
	)
	cmd := &cobra.Command{
		Use:   "stats [QUEUE...]",
		Short: "Show queues' depth per state, throughput and run times",
		Long: `Show queues' depth per state, jobs completed per minute and run time
percentiles over a recent window. Without a queue, every queue of the
namespace's registry (sluice queues list): a queue whose registry entry
is not a layout is left out, and named in an error after the others are
shown (exit 1). --watch prints them again every --interval, redrawn in
place on a terminal, until Ctrl-C (exit 0, or that exit 1).`,
		Example:           "  sluice queues stats mail --window 30m\n  sluice queues stats --watch --interval 5s",
		ValidArgsFunction: c.completeQueues,
	}
	cmd.Flags().DurationVar(&window, "window", 5*time.Minute, "span of the rates, whole minutes (1m..2h)")
	cmd.Flags().BoolVar(&watch, "watch", false, "print the stats again every --interval until Ctrl-C")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch refreshes")
	cmd.RunE = c.runE(func(cmd *cobra.Command, queues []string) error {
		if window < time.Minute || window > admin.MaxStatsWindow || window%time.Minute != 0 {
			return usagef("--window %v: want whole minutes in 1m..%v", window, admin.MaxStatsWindow)
		}
		if interval < 100*time.Millisecond {
			return usagef("--interval %v: want at least 100ms", interval)
		}
		if cmd.Flags().Changed("interval") && !watch {
			return usagef("--interval sets how often --watch refreshes: give --watch too")
		}
		ctx := cmd.Context()
		client, err := c.connect(ctx)
		if err != nil {
			return err
		}
		var unread error // the registered queues whose entry is corrupt, each named
		if len(queues) == 0 {
			if queues, unread = c.knownQueues(ctx, client); !listed(unread) {
				return unread
			}
			switch {
			case len(queues) == 0 && unread != nil:
				return unread
			case len(queues) == 0:
				return noQueues(client)
			}
		} else {
			queues = once(queues) // a repeat printed its row twice
			for _, q := range queues {
				if err := c.checkQueue(ctx, client, q); err != nil {
					return err
				}
			}
		}
		if !watch {
			return errors.Join(c.printStats(ctx, c.stdout, client, queues, window, time.Time{}), unread)
		}
		return errors.Join(c.watchStats(ctx, client, queues, window, interval), unread)
	})
	return cmd
}

// watchStats prints the stats every interval (of this machine's clock)
// until ctx ends, each block headed with Redis's time of the reading: on
// a terminal (and without --json) each block replaces the last.
func (c *cli) watchStats(ctx context.Context, client *admin.Client, queues []string, window, interval time.Duration) error {
	clock := c.clock
	if clock == nil {
		clock = runtime.WallClock()
	}
	redraw := c.stdoutTTY && !c.json
	for {
		var b bytes.Buffer
		if redraw {
			b.WriteString(clearScreen)
		}
		// the time of the reading is Redis's, as the rates' minutes and
		// every other time the CLI prints are; --json gives it as "at"
		now, err := client.StoreTime(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !c.json {
			fmt.Fprintf(&b, "%s UTC, every %v (Ctrl-C stops)\n", when(now), interval)
		}
		if err := c.printStats(ctx, &b, client, queues, window, now); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !redraw && !c.json {
			b.WriteString("\n")
		}
		if _, err := c.stdout.Write(b.Bytes()); err != nil {
			return err
		}
		t := clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// printStats prints the stats of queues; at, if any, is the time of the
// reading (--watch), which --json gives each queue.
func (c *cli) printStats(ctx context.Context, w io.Writer, client *admin.Client, queues []string, window time.Duration, at time.Time) error {
	var all []admin.QueueStats
	for _, q := range queues {
		st, err := client.QueueStats(ctx, q, window)
		if err != nil {
			return c.about("queue", q, err)
		}
		all = append(all, st)
	}
	if c.json {
		out := []statsJSON{}
		for _, s := range all {
			j := statsJSON{Queue: s.Queue, Partitions: s.Partitions, Paused: s.Paused, Depth: s.Depth, Window: s.Window.String(),
				Finished: s.Finished, CompletedPerMinute: s.CompletedPerMinute, RunTimeCount: s.RunTime.Count, At: ts(at)}
			if s.RunTime.Count > 0 {
				j.RunTimeP50, j.RunTimeP90, j.RunTimeP99 = s.RunTime.P50.String(), s.RunTime.P90.String(), s.RunTime.P99.String()
			}
			out = append(out, j)
		}
		return writeJSON(w, out)
	}
	header := []string{"QUEUE", "PAUSED"}
	for _, s := range flow.States {
		header = append(header, strings.ToUpper(s))
	}
	header = append(header, "DONE/MIN", "P50", "P90", "P99")
	t := newTable(w, header...)
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
	fmt.Fprintf(w, "state columns: jobs now; rates over the last %s; run times are bucket upper bounds (within 19%%)\n", all[0].Window)
	return nil
}
