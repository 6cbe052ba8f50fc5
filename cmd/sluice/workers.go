package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// workerJSON is one worker of `workers --json`.
type workerJSON struct {
	ID          string         `json:"id"`
	Host        string         `json:"host"`
	PID         int            `json:"pid"`
	Queues      map[string]int `json:"queues"`
	Concurrency int            `json:"concurrency"`
	Jobs        []string       `json:"jobs"`
	DataModel   int            `json:"data_model"` // 0: a release that did not register one
	Started     *time.Time     `json:"started,omitempty"`
	LastSeen    *time.Time     `json:"last_seen,omitempty"`
}

func (c *cli) workersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the live workers and the jobs they run",
		Long: `List the live workers: the queues each serves with their partition
counts, how many jobs it runs of how many it may run at once, when it
started and sent its last heartbeat (UTC), the IDs of its jobs, and the
data model its release knows (what a partition's keys mean: before an
upgrade that raises it, every worker must know the new one; "-" for a
release that did not say). A worker whose record is corrupt is left out,
and named in an error after the others are listed (exit 1).`,
		Args: noArgs,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, _ []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		ws, err := client.Workers(cmd.Context())
		if !listed(err) {
			return err
		}
		if len(ws) == 0 && err == nil {
			if err := namespaceUsed(cmd.Context(), client); err != nil {
				return err
			}
		}
		if c.json {
			out := []workerJSON{}
			for _, w := range ws {
				out = append(out, workerJSON{ID: w.ID, Host: w.Host, PID: w.PID, Queues: w.Queues, Concurrency: w.Concurrency,
					Jobs: append([]string{}, w.Jobs...), Started: ts(w.Started), LastSeen: ts(w.LastSeen), DataModel: w.DataModel})
			}
			return errors.Join(writeJSON(c.stdout, out), err)
		}
		if len(ws) == 0 {
			if err == nil {
				fmt.Fprintf(c.stdout, "no live workers in namespace %q\n", client.Namespace())
			}
			return err
		}
		t := newTable(c.stdout, "WORKER", "HOST", "PID", "QUEUES (PARTITIONS)", "RUNNING/CONCURRENCY", "STARTED (UTC)", "LAST HEARTBEAT (UTC)", "MODEL", "JOB IDS")
		for _, w := range ws {
			qs := make([]string, 0, len(w.Queues))
			for q, n := range w.Queues {
				qs = append(qs, q+"("+strconv.Itoa(n)+")")
			}
			sort.Strings(qs)
			t.row(w.ID, w.Host, strconv.Itoa(w.PID), strings.Join(qs, ","), fmt.Sprintf("%d/%d", len(w.Jobs), w.Concurrency),
				when(w.Started), when(w.LastSeen), model(w.DataModel), orDash(clip(strings.Join(w.Jobs, " "), 80)))
		}
		t.flush()
		return err // the workers whose record is corrupt, each named
	})
	return cmd
}

// model shows a worker's data model, "-" when its release did not say.
func model(m int) string {
	if m == 0 {
		return "-"
	}
	return strconv.Itoa(m)
}
