package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/sticky"
)

// jobsReroute changes the worker a job prefers (sticky routing), or unpins
// it: jobs reroute ID --to WORKER [--after D | --fail-after D] | --unpin.
func (c *cli) jobsReroute(ctx context.Context, args []string) error {
	fs := c.flags("jobs reroute")
	to := fs.String("to", "", "the worker the job should prefer")
	after := fs.Duration("after", 0, "any worker may take it after this long")
	failAfter := fs.Duration("fail-after", 0, "archive it if the worker has not taken it after this long")
	unpin := fs.Bool("unpin", false, "let any worker take it")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	const form = "jobs reroute ID --to WORKER [--after D | --fail-after D] | jobs reroute ID --unpin"
	switch {
	case len(rest) != 1:
		return usagef("%s", form)
	case *unpin && (*to != "" || *after != 0 || *failAfter != 0):
		return usagef("--unpin takes no other option: %s", form)
	case !*unpin && *to == "":
		return usagef("--to or --unpin is required: %s", form)
	case *after < 0 || *failAfter < 0 || (*after > 0 && *failAfter > 0):
		return usagef("at most one of --after and --fail-after, and not negative: %s", form)
	}
	var opt flow.EnqueueOption
	result := "unpinned"
	if !*unpin {
		opt = sticky.To(*to, policy(*after, *failAfter))
		result = "rerouted to " + *to
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	if err := client.Reroute(ctx, rest[0], opt); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]string{"id": rest[0], "result": result})
	}
	fmt.Fprintf(c.stdout, "%s %s\n", result, rest[0])
	return nil
}

// policy is the sticky fallback the flags ask for: Wait unless one of
// them is set.
func policy(after, failAfter time.Duration) sticky.Policy {
	switch {
	case after > 0:
		return sticky.After(after)
	case failAfter > 0:
		return sticky.FailAfter(failAfter)
	}
	return sticky.Wait()
}
