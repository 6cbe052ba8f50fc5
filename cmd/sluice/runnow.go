package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// runNowJSON is `jobs run-now --json`.
type runNowJSON struct {
	Available []string          `json:"available"`
	Failed    map[string]string `json:"failed,omitempty"`
	// Paused names the paused queues of the jobs made available: they
	// wait until it is resumed (the text output's note)
	Paused []string `json:"paused_queues,omitempty"`
}

func (c *cli) jobsRunNowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run-now ID...",
		Short: "Make scheduled or retryable jobs available now instead of at their due time",
		Long: `Make each scheduled (delayed, snoozed) or retryable job available now, as
its due time would: it keeps its priority, attempts, errors, unique key,
sticky routing and deadline. A suspended workflow (sleeping or waiting
for a signal) and a job held behind a quarantined one are refused, with
the reason. It prints each job made available and an error for each that
was not: it exits 0 when every job was, else with the exit code the
errors share (3: all unknown, 2: all malformed), or 1.`,
		Example: `  sluice jobs run-now mail:0:7f3a mail:1:9bc2`,
		Args:    minArgs("IDs"),
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, ids []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		out := runNowJSON{Available: []string{}, Failed: map[string]string{}}
		var errs []error
		for _, id := range once(ids) {
			if err := client.RunNow(cmd.Context(), id); err != nil {
				err = c.about("job", id, err)
				out.Failed[id] = bare(err)
				errs = append(errs, err)
				continue
			}
			out.Available = append(out.Available, id)
			if !c.json {
				fmt.Fprintf(c.stdout, "available now %s\n", id)
			}
		}
		if c.json {
			out.Paused = pausedOf(cmd.Context(), client, out.Available, nil)
			if err := writeJSON(c.stdout, out); err != nil {
				return err
			}
		} else {
			c.notePaused(cmd.Context(), client, out.Available)
		}
		return errors.Join(errs...)
	})
	return cmd
}
