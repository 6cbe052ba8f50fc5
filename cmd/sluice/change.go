package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
)

func (c *cli) jobsCancelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job; a running handler's context is cancelled",
		Long: `Cancel a job that has not finished. A running handler's context is
cancelled (runtime.ErrCancelled); the job is kept --retain, else as long
as the workers of its queue keep the jobs they cancel (the
runtime.Options.RetainCancelled they record in Redis when they start),
then deleted. Where no worker has recorded it, the job is kept 24h and a
note says so.`,
		Args: nArgs("ID"),
	}
	cmd.Flags().DurationVar(&c.retainCancelled, "retain", 0, "how long the cancelled job is kept (default: as long as the queue's workers keep cancelled jobs)")
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("retain") && c.retainCancelled <= 0 {
			return usagef("--retain %v: must be positive (leave it out to keep the job as long as the queue's workers would)", c.retainCancelled)
		}
		if c.retainCancelled%time.Millisecond != 0 {
			// the store keeps retentions in whole milliseconds: 500us kept
			// the job 1ms, and the command said 500µs
			return usagef("--retain %v: want whole milliseconds (the store keeps no finer time)", c.retainCancelled)
		}
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		id := args[0]
		res, err := client.CancelJob(cmd.Context(), id)
		if errors.Is(err, admin.ErrQueueNotFound) {
			// the retention could not be read: its queue is not registered
			// (jobs of an older release), which is not the job missing
			if _, jerr := client.Job(cmd.Context(), id); jerr == nil {
				return fmt.Errorf("cannot cancel job %s: %w", id, err)
			}
		}
		if err != nil {
			return c.about("job", id, err)
		}
		if c.json {
			return writeJSON(c.stdout, map[string]string{"id": id, "result": "cancelled", "kept": res.Kept.String(), "kept_by": string(res.By)})
		}
		fmt.Fprintf(c.stdout, "cancelled %s\n", id)
		if res.By == admin.KeptByDefault {
			ref, _ := keys.ParseRef(client.Namespace(), id)
			fmt.Fprintf(c.stderr, "note: kept %v, the default: no worker of queue %s has recorded how long it keeps cancelled jobs "+
				"(workers record it when they start; --retain sets it)\n", res.Kept, ref.Queue)
		}
		return nil
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
