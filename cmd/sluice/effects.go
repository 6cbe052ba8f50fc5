package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow/admin"
)

// Dead-lettered effects: effects on keys in other slots that the relay
// could not apply (sluicetype.DeadEffect).

func (c *cli) effectsListCmd() *cobra.Command {
	var (
		queue string
		limit int
	)
	cmd := &cobra.Command{
		Use:   "list --queue Q",
		Short: "List a queue's dead-lettered effects, oldest first",
		Args:  noArgs,
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the queue `Q`")
	intRange(cmd.Flags(), &limit, "limit", 100, 1, admin.MaxListLimit, "most effects to list")
	_ = cmd.MarkFlagRequired("queue")
	c.queueFlag(cmd)
	cmd.RunE = c.runE(func(cmd *cobra.Command, _ []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		if err := c.checkQueue(cmd.Context(), client, queue); err != nil {
			return err
		}
		// one more than asked tells whether more are kept (at the most
		// one call lists, that many may hide more)
		dead, err := client.DeadEffects(cmd.Context(), queue, min(limit+1, admin.MaxListLimit))
		if err != nil {
			return c.about("queue", queue, err)
		}
		more := len(dead) > limit || len(dead) == admin.MaxListLimit
		dead = dead[:min(len(dead), limit)]
		if c.json {
			// times in UTC, as every other time --json prints (the store
			// gives the host's local time), and none as [], not null
			out := make([]deadEffectJSON, 0, len(dead))
			for _, d := range dead {
				if d.Args == nil {
					d.Args = []string{} // [], not null
				}
				out = append(out, deadEffectJSON{ID: d.ID, JobID: d.JobID, Error: d.Error, Op: d.Op, Key: d.Key,
					Args: d.Args, At: d.At.UTC()})
			}
			return writeJSON(c.stdout, map[string]any{"queue": queue, "dead_effects": out, "more": more})
		}
		if len(dead) == 0 {
			fmt.Fprintf(c.stdout, "no dead-lettered effects in queue %q (namespace %q)\n", queue, client.Namespace())
			return nil
		}
		t := newTable(c.stdout, "ID", "JOB", "WRITE", "ERROR", "AT (UTC)")
		for _, d := range dead {
			write := strings.TrimSpace(d.Op + " " + d.Key + " " + strings.Join(d.Args, " "))
			t.row(d.ID, d.JobID, cut(write, 60), d.Error, when(d.At))
		}
		t.flush()
		switch {
		case more && limit < admin.MaxListLimit:
			fmt.Fprintf(c.stdout, "more: queue %q keeps more dead-lettered effects than the %d listed (--limit up to %d lists more)\n",
				queue, limit, admin.MaxListLimit)
		case more:
			fmt.Fprintf(c.stdout, "more: queue %q may keep more dead-lettered effects than the %d listed, the most one call lists\n", queue, limit)
		}
		return nil
	})
	return cmd
}

// deadEffectJSON is a dead-lettered effect in `effects list --json`, its
// keys in snake case as every other --json output's.
type deadEffectJSON struct {
	ID    string    `json:"id"`
	JobID string    `json:"job_id"`
	Error string    `json:"error"`
	Op    string    `json:"op"`
	Key   string    `json:"key"`
	Args  []string  `json:"args"`
	At    time.Time `json:"at"`
}

// effectsRedriveJSON is `effects redrive --json`: the effects sent back,
// and each that was not with its error.
type effectsRedriveJSON struct {
	Redriven []string          `json:"redriven"`
	Failed   map[string]string `json:"failed,omitempty"`
}

func (c *cli) effectsRedriveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redrive ID...",
		Short: "Send dead-lettered effects back to be relayed again",
		Long: `Send dead-lettered effects back to be relayed again, by the IDs effects
list prints (at most 1000), one call each: it prints each one sent back
and an error for each that was not (--json: "redriven" and "failed"),
and exits 0 only when all were sent back, else with the exit code the
errors share (3: all unknown), or 1.`,
		Args: minArgs("dead effect IDs"),
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, ids []string) error {
		// the limit counts dead effects, as admin's does: one ID given
		// twice is one effect, sent back once
		ids = once(ids)
		if len(ids) > admin.MaxRedriveIDs {
			return usagef("effects redrive: %d IDs, at most %d", len(ids), admin.MaxRedriveIDs)
		}
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		out := effectsRedriveJSON{Redriven: []string{}, Failed: map[string]string{}}
		var errs []error
		for _, id := range ids {
			if err := client.RedriveEffects(cmd.Context(), id); err != nil {
				err = c.about("dead effect", id, err)
				out.Failed[id] = bare(err)
				errs = append(errs, err)
				continue
			}
			out.Redriven = append(out.Redriven, id)
			if !c.json {
				fmt.Fprintf(c.stdout, "sent back dead-lettered effect %s to be relayed again\n", id)
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

// cut shortens s to n bytes, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
