package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow/admin"
)

func (c *cli) queuesPauseCmd() *cobra.Command {
	return c.pauseCmd("pause", "paused", "Stop every worker from claiming the queues' jobs, fleet-wide, until resumed",
		(*admin.Client).PauseQueue)
}

func (c *cli) queuesResumeCmd() *cobra.Command {
	return c.pauseCmd("resume", "resumed", "Let workers claim the queues' jobs again", (*admin.Client).ResumeQueue)
}

// pauseJSON is `queues pause --json` and `queues resume --json`.
type pauseJSON struct {
	// Queues are those now paused (resumed): the ones that already were
	// are in Unchanged too
	Queues    []string `json:"queues"`
	Result    string   `json:"result"`
	Unchanged []string `json:"unchanged"`
	// Failed: each queue whose pause (resume) failed, with its error
	Failed map[string]string `json:"failed,omitempty"`
}

// pauseCmd is queues pause or resume: each queue is checked to exist
// before any is changed. A queue whose call fails does not stop the
// others: it prints each queue changed and an error for each that was
// not (--json: the queues changed and those that failed), and exits 0
// only when every queue was.
func (c *cli) pauseCmd(name, done, short string, op func(*admin.Client, context.Context, string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name + " QUEUE...",
		Short: short,
		Long: short + `.

Each queue is checked to exist before any is changed (one that does
not: exit 3, nothing changed). A queue whose call fails does not stop
the others: it prints each queue ` + done + ` and an error for each that
was not (--json: "queues" ` + done + `, "unchanged", and "failed" with
each error), and exits 0 only when every queue was, else with the exit
code the errors share, or 1.`,
		Args: minArgs("queue names"),
		// offers the known queues
		ValidArgsFunction: c.completeQueues,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		queues := once(args) // a repeat changed nothing, and said it did
		ctx := cmd.Context()
		client, err := c.connect(ctx)
		if err != nil {
			return err
		}
		for _, q := range queues {
			if err := c.checkQueue(ctx, client, q); err != nil {
				return err
			}
		}
		// what each queue was: a pause or resume that changes nothing
		// says so (it is not an error: both are idempotent)
		before, err := pausedQueues(ctx, client, queues)
		if err != nil {
			return err
		}
		out := pauseJSON{Queues: []string{}, Result: done, Unchanged: []string{}, Failed: map[string]string{}}
		var errs []error
		for _, q := range queues {
			if err := op(client, ctx, q); err != nil {
				err = c.about("queue", q, err)
				out.Failed[q] = bare(err)
				errs = append(errs, err)
				continue
			}
			out.Queues = append(out.Queues, q)
			p, wasPaused := before[q]
			was := ""
			switch {
			case name == "pause" && wasPaused && p[0] == p[1]:
				was = " (it was paused already)"
			case name == "resume" && !wasPaused:
				was = " (it was not paused)"
			}
			if was != "" {
				out.Unchanged = append(out.Unchanged, q)
			}
			if !c.json {
				fmt.Fprintf(c.stdout, "%s %s%s\n", done, q, was)
			}
		}
		if c.json {
			if err := writeJSON(c.stdout, out); err != nil {
				return err
			}
		}
		return errors.Join(errs...)
	})
	return cmd
}
