package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/jobview"
)

func (c *cli) jobsShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a job: state, attempts, history, steps, errors and the last panic's stack",
		Args:  nArgs("ID"),
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		j, err := client.Job(cmd.Context(), args[0])
		if err != nil {
			return c.about("job", args[0], err)
		}
		if c.json {
			return writeJSON(c.stdout, toJSON(j, true))
		}
		showJob(c.stdout, j)
		return nil
	})
	return cmd
}

// showJob prints one job for people: a field per line, then its steps and
// recent errors.
func showJob(w io.Writer, j *flow.JobInfo) {
	t := newTable(w, "ID:", j.ID)
	line := func(k, v string) { t.row(k+":", v) }
	line("Queue", j.Queue)
	line("Kind", j.Kind)
	state := j.State
	if j.Reason != "" {
		state += " (" + j.Reason + ")"
	}
	line("State", state)
	line("Priority", strconv.Itoa(j.Priority))
	line("Attempts", jobview.Attempts(j))
	line("Fence", strconv.FormatInt(j.Fence, 10))
	line("Created", when(j.Created))
	if !j.RunAt.IsZero() {
		line("Due", when(j.RunAt))
	}
	if !j.Finished.IsZero() {
		line("Finished", when(j.Finished))
	}
	if j.Timeout > 0 || !j.Deadline.IsZero() {
		line("Limits", "timeout "+dur(j.Timeout)+", deadline "+when(j.Deadline))
	}
	if j.State == flow.StateRunning {
		line("Lease", fmt.Sprintf("%s held by %s, expires %s", j.LeaseID, j.LeaseHolder, when(j.LeaseExpiry)))
	}
	if o := j.Orphan; o.Count > 0 {
		line("Orphan", fmt.Sprintf("reclaimed %d times; last holder %s, lease expired %s", o.Count, o.Holder, when(o.ExpiredAt)))
	}
	if j.Redrives > 0 {
		line("Redrives", fmt.Sprintf("%d, last %s from %s", j.Redrives, when(j.RedrivenAt), j.RedrivenFrom))
	}
	if j.PreferredWorker != "" {
		line("Prefers", "worker "+j.PreferredWorker+" (sticky routing)")
	}
	if j.HeldBy != "" {
		line("Held", "behind quarantined job "+j.HeldBy+" (runs once it is released: sluice release "+j.HeldBy+")")
	}
	if j.DeadEffects > 0 {
		line("Dead effects", fmt.Sprintf("%d could not be applied (sluice effects list --queue %s)", j.DeadEffects, j.Queue))
	}
	if j.Parent != "" {
		line("Parent", j.Parent)
	}
	if j.WaitingFor != "" {
		line("Waiting", fmt.Sprintf("for %d children of step %s", j.WaitingCount, j.WaitingFor))
	}
	if j.Suspended {
		line("Suspended", suspension(j))
	}
	for _, tm := range j.Timers {
		line("Timer", tm.Name+" wakes "+when(tm.Wake))
	}
	for _, sg := range j.Signals {
		line("Signal", fmt.Sprintf("%s #%d kept, not taken yet: %s", sg.Name, sg.Seq, clip(compact(decoded(sg.Payload)), 60)))
	}
	line("Args", compact(decoded(j.Payload)))
	if len(j.Result) > 0 {
		line("Result", compact(decoded(j.Result)))
	}
	if j.LastError != "" {
		line("Last error", clip(j.LastError, 200))
	}
	if r := j.Tracking; r != nil {
		line("Progress", fmt.Sprintf("%g%% %q at %s (fence %d)", r.Percent, r.State, when(r.At), r.Fence))
	}
	if s := j.Stuck; s != nil {
		line("Stuck", fmt.Sprintf("%s since %s in step %s (fence %d): %s", s.Case, when(s.Since), orDash(s.Step), s.Fence, s.Why))
	}
	t.flush()
	if len(j.Steps) > 0 {
		fmt.Fprintln(w, "\nSteps:")
		st := newTable(w, "  #", "STEP", "AT", "RESULT")
		for _, s := range j.Steps {
			idx := strconv.Itoa(s.Index)
			if s.Cursor {
				idx = "cursor"
			}
			st.row("  "+idx, s.Name, when(s.At), clip(compact(decoded(s.Result)), 60))
		}
		st.flush()
	}
	if len(j.Errors) > 0 {
		fmt.Fprintln(w, "\nErrors (newest first):")
		et := newTable(w, "  AT", "CLASS", "ATTEMPT", "CRASHES", "MESSAGE")
		for _, e := range j.Errors {
			et.row("  "+when(e.At), e.Class, strconv.Itoa(e.Attempt), strconv.Itoa(e.CrashAttempt), clip(e.Message, 80))
		}
		et.flush()
	}
	for _, e := range j.Errors {
		if e.Stack != "" {
			stack(w, fmt.Sprintf("Stack of the newest %s (%s)", e.Class, when(e.At)), e.Stack)
			break // the newest; --json has every error's
		}
	}
	if s := j.Stuck; s != nil && s.Stack != "" {
		stack(w, fmt.Sprintf("Stacks of the stuck attempt (fence %d, found %s)", s.Fence, when(s.At)), s.Stack)
	}
}

// stack prints a titled goroutine stack, indented.
func stack(w io.Writer, title, s string) {
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		fmt.Fprintln(w, "  "+l)
	}
}

// suspension says what a suspended workflow waits for. Its due time is
// its earliest timer's wake time or its deadline, if sooner: at the
// deadline the job is archived (deadline_exceeded), not woken, which is
// said rather than shown as the end of its wait.
func suspension(j *flow.JobInfo) string {
	atDeadline := !j.RunAt.IsZero() && !j.Deadline.IsZero() && !j.RunAt.Before(j.Deadline)
	if len(j.AwaitingSignals) == 0 {
		if atDeadline {
			return "sleeping past its deadline " + when(j.Deadline) + " (archived then: deadline_exceeded)"
		}
		return "sleeping until " + when(j.RunAt)
	}
	wake := "no timer"
	switch {
	case atDeadline:
		wake = "until its deadline " + when(j.Deadline) + " (archived then: deadline_exceeded)"
	case !j.RunAt.IsZero():
		wake = "or until " + when(j.RunAt)
	}
	return "waiting for signal " + strings.Join(j.AwaitingSignals, ", ") + ", " + wake
}
