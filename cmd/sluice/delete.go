package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// deleteStates are the states admin.Client.DeleteSelected takes.
var deleteStates = []string{flow.StateCompleted, flow.StateArchived, flow.StateQuarantined, flow.StateCancelled,
	flow.StateScheduled, flow.StateRetryable}

func (c *cli) jobsDeleteCmd() *cobra.Command {
	var s selection
	cmd := &cobra.Command{
		Use:   "delete (ID | --queue Q --state S [selector flags])",
		Short: "Delete a job that is not running, or the jobs a selector chooses, with all their keys",
		Long: `Delete one job that is not running, by ID, or the jobs of one queue that a
selector chooses: --state is required (available jobs are not deleted by
selector: cancel them, or delete them by ID; running jobs never are), and
for scheduled and retryable jobs only --kind narrows the choice. Times
(--after, --before) are RFC 3339 or a duration ago ("2h", by Redis's
clock, which finish times are kept in). Nothing asks for confirmation:
count first with --dry-run. A delete by selector draws a progress bar
when stderr is a terminal, and lists the entries of the state whose
data is not a job (left as they are). One stopped part way (an error,
Ctrl-C) leaves the batches before it done, says what they did (--json:
the counts and "error"), then the error (its exit code): running it again goes
on.`,
		Example: `  sluice jobs delete mail:0:7f3a
  sluice jobs delete --queue mail --state archived --reason attempts_exhausted --before 168h --dry-run`,
	}
	s.flags(cmd, "the jobs' state, required with --queue", deleteStates...)
	c.queueFlag(cmd)
	cmd.RunE = c.runE(func(cmd *cobra.Command, ids []string) error {
		byID, err := s.byID(cmd, ids, "a job ID")
		switch {
		case err != nil:
			return err
		case byID && len(ids) > 1:
			return usagef("jobs delete takes one ID (or --queue Q --state S); got %d", len(ids))
		case byID:
			return c.changeJob(cmd, ids[0], "deleted", (*admin.Client).DeleteJob)
		}
		return c.deleteSelected(cmd, s)
	})
	return cmd
}

func (c *cli) deleteSelected(cmd *cobra.Command, s selection) error {
	switch {
	case s.sel.State == "":
		return usagef("jobs delete --queue needs --state (%s)", strings.Join(deleteStates, ", "))
	case (s.sel.State == flow.StateScheduled || s.sel.State == flow.StateRetryable) && (s.sel.Reason != "" || s.after != "" || s.before != ""):
		return usagef("jobs delete: %s jobs have not finished: --reason, --after and --before do not apply (--kind does)", s.sel.State)
	}
	if err := s.checkReason("jobs delete", s.sel.State); err != nil {
		return err
	}
	client, err := c.selectionClient(cmd.Context(), &s)
	if err != nil {
		return err
	}
	o := admin.DeleteOptions{DryRun: s.dryRun, BatchSize: s.batch}
	bar := c.progress()
	if bar != nil {
		o.Progress = bar.delete
	}
	pr, err := client.DeleteSelected(cmd.Context(), s.sel, o)
	bar.end() // the bar's line ends before the result is printed
	if err := unmatched("jobs delete", err); err != nil {
		return err
	}
	err = c.about("queue", s.sel.Queue, err)
	// an error part way leaves the batches before it done: said, as a
	// success is, then the error
	if c.json {
		out := selectJSON{DryRun: s.dryRun, Matched: pr.Matched, Examined: pr.Examined, Total: pr.Total, Batches: pr.Batches,
			Unreadable: append([]string{}, pr.Unreadable...)}
		if err != nil {
			out.Error = bare(err)
		}
		return errors.Join(writeJSON(c.stdout, out), err)
	}
	if err != nil && pr.Batches == 0 {
		return err
	}
	verb := "deleted"
	if s.dryRun {
		verb = "would delete"
	}
	fmt.Fprintf(c.stdout, "%s %d %s job%s of queue %q (%d examined in %s)%s\n", verb, pr.Matched, s.sel.State, plural(pr.Matched),
		s.sel.Queue, pr.Examined, batches(pr.Batches), stopped(err))
	c.leftUnreadable(s.sel.State, pr.Unreadable)
	return err
}

// leftUnreadable lists the entries a scan by selector left because their
// data is not a job.
func (c *cli) leftUnreadable(state string, ids []string) {
	if n := len(ids); n > 0 {
		fmt.Fprintf(c.stdout, "left %d %s entr%s whose data is not a job:\n", n, state, map[bool]string{true: "y", false: "ies"}[n == 1])
		for _, id := range ids {
			fmt.Fprintf(c.stdout, "  %s\n", id)
		}
	}
}
