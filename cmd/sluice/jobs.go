package main

import (
	"context"
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
		Short: "List a queue's jobs in one state, newest first",
		Example: `  sluice jobs list --state archived --queue mail
  sluice jobs list --state archived --queue mail --cursor <the cursor the last page printed>`,
		Args: noArgs,
	}
	cmd.Flags().StringVar(&o.Queue, "queue", "default", "the queue `Q`")
	choice(cmd, &o.State, "state", "", "the jobs' state", flow.States...)
	cmd.Flags().StringVar(&o.Kind, "kind", "", "only jobs of kind `K`")
	intRange(cmd.Flags(), &o.Limit, "limit", admin.DefaultListLimit, 1, admin.MaxListLimit, "jobs per page")
	cmd.Flags().StringVar(&o.Cursor, "cursor", "", "the cursor `C` the previous page printed, for the next page")
	_ = cmd.MarkFlagRequired("state")
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

func (c *cli) jobsCancelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job; a running handler's context is cancelled",
		Long: `Cancel a job that has not finished. A running handler's context is
cancelled (runtime.ErrCancelled); the job is kept --retain (default 24h:
match the workers' runtime.Options.RetainCancelled), then deleted.`,
		Args: nArgs("ID"),
	}
	cmd.Flags().DurationVar(&c.retainCancelled, "retain", 0, "how long the cancelled job is kept (default 24h)")
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		if c.retainCancelled < 0 {
			return usagef("--retain %v: must not be negative", c.retainCancelled)
		}
		return c.changeJob(cmd, args[0], "cancelled", (*admin.Client).CancelJob)
	})
	return cmd
}

func (c *cli) jobsDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a job that is not running, with all its keys",
		Args:  nArgs("ID"),
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		return c.changeJob(cmd, args[0], "deleted", (*admin.Client).DeleteJob)
	})
	return cmd
}

// changeJob runs op on job id and says done.
func (c *cli) changeJob(cmd *cobra.Command, id, done string, op func(*admin.Client, context.Context, string) error) error {
	client, err := c.connect(cmd.Context())
	if err != nil {
		return err
	}
	if err := op(client, cmd.Context(), id); err != nil {
		return c.about("job", id, err)
	}
	if c.json {
		return writeJSON(c.stdout, map[string]string{"id": id, "result": done})
	}
	fmt.Fprintf(c.stdout, "%s %s\n", done, id)
	return nil
}
