package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// effects lists or sends back dead-lettered effects: effects on keys in
// other slots that the relay could not apply (sluicetype.DeadEffect).
func (c *cli) effects(ctx context.Context, sub string, args []string) error {
	switch sub {
	case "list":
		return c.effectsList(ctx, args[1:])
	case "redrive":
		return c.effectsRedrive(ctx, args[1:])
	}
	return usagef("effects list --queue Q [--limit N] | effects redrive ID...")
}

func (c *cli) effectsList(ctx context.Context, args []string) error {
	fs := c.flags("effects list")
	queue := fs.String("queue", "", "queue")
	limit := fs.Int("limit", 100, "most effects to list")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *queue == "" || len(rest) > 0 {
		return usagef("effects list --queue Q [--limit N]")
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	dead, err := client.DeadEffects(ctx, *queue, *limit)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"queue": *queue, "dead_effects": dead})
	}
	if len(dead) == 0 {
		fmt.Fprintf(c.stdout, "no dead-lettered effects in queue %s (namespace %s)\n", *queue, client.Namespace())
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tJOB\tWRITE\tERROR\tAT")
	for _, d := range dead {
		write := strings.TrimSpace(d.Op + " " + d.Key + " " + strings.Join(d.Args, " "))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.ID, d.JobID, cut(write, 60), d.Error, d.At.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func (c *cli) effectsRedrive(ctx context.Context, args []string) error {
	rest, err := parse(c.flags("effects redrive"), args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usagef("effects redrive ID...")
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	if err := client.RedriveEffects(ctx, rest...); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"redriven": rest})
	}
	fmt.Fprintf(c.stdout, "sent back %d dead-lettered effects to be relayed again\n", len(rest))
	return nil
}

// cut shortens s to n bytes, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
