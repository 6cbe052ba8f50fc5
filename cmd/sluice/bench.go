package main

import (
	"context"
	"errors"
	"flag"

	"github.com/sluicehq/sluice/bench/harness"
)

// bench runs the benchmark (package bench/harness) with its own flags. A
// global --redis names the Redis to measure, a global --json prints the
// figures as JSON on stdout (the table then goes to stderr).
func (c *cli) bench(ctx context.Context, args []string) error {
	var pre []string
	if c.redisURL != "" {
		pre = append(pre, "-redis", c.redisURL)
	}
	if c.json {
		pre = append(pre, "-json", "-")
	}
	err := harness.Main(ctx, append(pre, args...), c.stdout, c.stderr)
	var usage *harness.UsageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil // the benchmark printed its flags
	case errors.As(err, &usage):
		return usageError{"bench: " + usage.Error()}
	}
	return err
}
