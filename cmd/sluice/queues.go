package main

import (
	"context"
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

// pauseCmd is queues pause or resume: each queue is checked to exist
// before any is changed.
func (c *cli) pauseCmd(name, done, short string, op func(*admin.Client, context.Context, string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name + " QUEUE...",
		Short: short,
		Args:  minArgs("queue names"),
		// offers the known queues
		ValidArgsFunction: c.completeQueues,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, queues []string) error {
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
		unchanged := []string{}
		for _, q := range queues {
			if err := op(client, ctx, q); err != nil {
				return c.about("queue", q, err)
			}
			p, wasPaused := before[q]
			was := ""
			switch {
			case name == "pause" && wasPaused && p[0] == p[1]:
				was = " (it was paused already)"
			case name == "resume" && !wasPaused:
				was = " (it was not paused)"
			}
			if was != "" {
				unchanged = append(unchanged, q)
			}
			if !c.json {
				fmt.Fprintf(c.stdout, "%s %s%s\n", done, q, was)
			}
		}
		if c.json {
			return writeJSON(c.stdout, map[string]any{"queues": queues, "result": done, "unchanged": unchanged})
		}
		return nil
	})
	return cmd
}
