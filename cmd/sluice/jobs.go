package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// listJSON is `jobs list --json`.
type listJSON struct {
	Jobs []jobJSON `json:"jobs"`
	Next string    `json:"next,omitempty"`
}

func (c *cli) jobsListCmd() *cobra.Command {
	var o admin.ListOptions
	cmd := &cobra.Command{
		Use:   "list --state STATE [--queue Q]",
		Short: "List a queue's jobs in one state, latest first",
		Long: `List a queue's jobs in one state, latest first: running jobs by lease
expiry, scheduled and retryable ones by due time, finished ones by when
they are deleted (finish time plus retention, so a job kept longer lists
before one that finished after it), available ones by priority, then
latest enqueued first, then those pinned to a worker (sticky routing,
whether that worker is live or gone), worker by worker.`,
		Example: `  sluice jobs list --state archived --queue mail
  sluice jobs list --state archived --queue mail --cursor <the cursor the last page printed>`,
		Args: noArgs,
	}
	cmd.Flags().StringVar(&o.Queue, "queue", "default", "the queue `Q`")
	choice(cmd, &o.State, "state", "", "the jobs' state", flow.States...)
	// an empty --kind ("$KIND" unset) is refused, as the selectors of
	// delete and redrive refuse it, not taken for every kind
	cmd.Flags().Var(kindFlag{given{&o.Kind, "the kind"}}, "kind", "only jobs of kind `K`")
	intRange(cmd.Flags(), &o.Limit, "limit", admin.DefaultListLimit, 1, admin.MaxListLimit, "jobs per page")
	cmd.Flags().StringVar(&o.Cursor, "cursor", "", "the cursor `C` the previous page printed, for the next page")
	_ = cmd.MarkFlagRequired("state")
	c.queueFlag(cmd)
	cmd.RunE = c.runE(func(cmd *cobra.Command, _ []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		if err := c.checkQueue(cmd.Context(), client, o.Queue); err != nil {
			return err
		}
		page, err := client.ListJobs(cmd.Context(), o)
		if err != nil {
			return c.about("queue", o.Queue, err)
		}
		if c.json {
			out := listJSON{Jobs: []jobJSON{}, Next: page.Next}
			for i := range page.Jobs {
				out.Jobs = append(out.Jobs, toJSON(&page.Jobs[i], false))
			}
			return writeJSON(c.stdout, out)
		}
		if len(page.Jobs) == 0 {
			kind := ""
			if o.Kind != "" {
				kind = fmt.Sprintf(" of kind %q", o.Kind)
			}
			fmt.Fprintf(c.stdout, "no %s jobs%s in queue %q (namespace %q)\n", o.State, kind, o.Queue, client.Namespace())
			return nil
		}
		t := newTable(c.stdout, "ID", "KIND", "STATE", "ATTEMPTS/LIMIT", "CRASHES", "CREATED (UTC)", when0(o.State)+" (UTC)", "REASON", "LAST ERROR")
		for _, j := range page.Jobs {
			state := j.State
			if j.Suspended {
				state += " (" + suspension(&j) + ")"
			}
			t.row(j.ID, j.Kind, state, strconv.Itoa(j.Attempt)+"/"+strconv.Itoa(j.MaxAttempts), strconv.Itoa(j.CrashAttempt),
				when(j.Created), when(stateTime(&j)), orDash(j.Reason), orDash(clip(j.LastError, 40)))
		}
		t.flush()
		if page.Next != "" {
			fmt.Fprintf(c.stdout, "more: --cursor %s\n", page.Next)
		}
		return nil
	})
	return cmd
}

// when0 names the time column for a state; stateTime reads it.
func when0(state string) string {
	switch state {
	case flow.StateRunning:
		return "LEASE EXPIRY"
	case flow.StateScheduled, flow.StateRetryable:
		return "DUE"
	case flow.StateAvailable:
		return "SINCE"
	}
	return "FINISHED"
}

func stateTime(j *flow.JobInfo) time.Time {
	switch j.State {
	case flow.StateRunning:
		return j.LeaseExpiry
	case flow.StateScheduled, flow.StateRetryable:
		return j.RunAt
	case flow.StateAvailable:
		if !j.RedrivenAt.IsZero() {
			return j.RedrivenAt
		}
		return j.Created
	}
	return j.Finished
}
