package main

import (
	"errors"
	"flag"
	"strings"

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
		RunE: c.runE(func(cmd *cobra.Command, _ []string) error {
			fs := pflag.NewFlagSet("sluice", pflag.ContinueOnError)
			c.globalFlags(fs)
			pre, args := benchSplit(fs, c.args)
			if err := fs.Parse(pre); err != nil {
				return usageError{err.Error()}
			}
			// the benchmark makes its own namespace and queues: a global
			// flag it would not use is refused, not ignored
			var unused []string
			fs.Visit(func(f *pflag.Flag) {
				if f.Name != "redis" && f.Name != "json" {
					unused = append(unused, "--"+f.Name)
				}
			})
			if len(unused) > 0 {
				return usagef("bench takes --redis and --json of the global flags, not %s: it makes its own namespace and queues (sluice bench -h lists its flags)",
					strings.Join(unused, ", "))
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

// benchSplit separates the global flags given before the word "bench"
// from the benchmark's own arguments after it, as cobra found the
// command: the first argument that is neither a flag nor a flag's value.
func benchSplit(global *pflag.FlagSet, args []string) (pre, own []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return args[:i], args[i+1:]
		}
		if f := global.Lookup(strings.TrimLeft(a, "-")); f != nil && f.NoOptDefVal == "" && !strings.Contains(a, "=") {
			i++ // its value
		}
	}
	return args, nil
}
