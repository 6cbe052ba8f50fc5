package main

import (
	"errors"
	"flag"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/bench/harness"
)

// benchCmd runs the benchmark (package bench/harness) with its own flags
// (single dash, Go's flag syntax). A global --redis before the command
// names the Redis to measure, a global --json prints the figures as JSON
// on stdout (the table then goes to stderr).
func (c *cli) benchCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "bench [-scenario S,...] [-topology single,cluster] [-cluster] [flags]",
		Short:              "Run the benchmark (sluice bench -h lists its flags)",
		DisableFlagParsing: true, // its flags are the harness's
		RunE: c.runE(func(cmd *cobra.Command, args []string) error {
			pre, args := c.benchSplit(args)
			fs := pflag.NewFlagSet("sluice", pflag.ContinueOnError)
			c.globalFlags(fs)
			if err := fs.Parse(pre); err != nil {
				return usageError{err.Error()}
			}
			var with []string
			if c.redisURL != "" {
				with = append(with, "-redis", c.redisURL)
			}
			if c.json {
				with = append(with, "-json", "-")
			}
			err := harness.Main(cmd.Context(), append(with, args...), c.stdout, c.stderr)
			var usage *harness.UsageError
			switch {
			case errors.Is(err, flag.ErrHelp):
				return nil // the benchmark printed its flags
			case errors.As(err, &usage):
				return usageError{"bench: " + usage.Error()}
			}
			return err
		}),
	}
}

// benchSplit separates the global flags given before "bench" from the
// benchmark's own: cobra hands the command line less the word "bench".
func (c *cli) benchSplit(args []string) (pre, own []string) {
	for i, a := range c.args {
		if a == "bench" && slices.Equal(c.args[:i], args[:min(i, len(args))]) && slices.Equal(c.args[i+1:], args[min(i, len(args)):]) {
			return c.args[:i], c.args[i+1:]
		}
	}
	return nil, args
}
