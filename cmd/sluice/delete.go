package main

import (
	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow/admin"
)

func (c *cli) jobsDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a job that is not running, with all its keys",
		Args:  nArgs("ID"),
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		return c.changeJob(cmd, args[0], "deleted", (*admin.Client).DeleteJob)
	})
	return cmd
}
