package main

import (
	"context"

	"github.com/spf13/cobra"
)

// Shell completion of names read from Redis: sluice completion bash|zsh|
// fish writes the script, which asks the binary (sluice __complete ...).

// completeQueues offers the queues of the namespace's registry.
func (c *cli) completeQueues(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	ctx := completionContext(cmd)
	client, err := c.connect(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	qs, err := c.knownQueues(ctx, client)
	if !listed(err) { // else some are corrupt: offer the others
		return nil, cobra.ShellCompDirectiveError
	}
	return qs, cobra.ShellCompDirectiveNoFileComp
}

// completeSchedule offers the schedules' names, for a command's one
// argument.
func (c *cli) completeSchedule(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := completionContext(cmd)
	client, err := c.connect(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ss, err := client.Schedules(ctx)
	if !listed(err) { // else some are corrupt: offer the others
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(ss))
	for _, s := range ss {
		names = append(names, s.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// queueFlag completes a command's --queue flag.
func (c *cli) queueFlag(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("queue", c.completeQueues)
}

func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
