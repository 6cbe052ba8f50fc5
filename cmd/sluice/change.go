package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow/admin"
)

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
