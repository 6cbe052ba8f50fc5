package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sticky"
)

// jobsRerouteCmd changes the worker a job prefers (sticky routing), or
// unpins it.
func (c *cli) jobsRerouteCmd() *cobra.Command {
	var (
		to               string
		after, failAfter time.Duration
		unpin            bool
	)
	cmd := &cobra.Command{
		Use:   "reroute ID (--to WORKER | --unpin)",
		Short: "Change the worker a job prefers (sticky routing), or unpin it",
		Long: `Change the worker a job prefers (sticky routing), or unpin it. An
available job moves to its new worker at once; a running, scheduled,
retryable or finished one goes there when it is next ready (retry, snooze,
redrive). A completed job is never ready again: it has no run left to
reroute, and the command exits 3 as for an unknown job. Without --after or --fail-after the job waits for its worker for
ever, so the worker must be live (else exit 3).`,
		Example: "  sluice jobs reroute mail:0:7f3a --to worker-7 --after 5m\n  sluice jobs reroute mail:0:7f3a --unpin",
		Args:    nArgs("ID"),
	}
	cmd.Flags().StringVar(&to, "to", "", "the `WORKER` the job should prefer")
	cmd.Flags().DurationVar(&after, "after", 0, "any worker may take it after this long")
	cmd.Flags().DurationVar(&failAfter, "fail-after", 0, "archive it if the worker has not taken it after this long")
	cmd.Flags().BoolVar(&unpin, "unpin", false, "let any worker take it")
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		id := args[0]
		// a flag given is a fallback asked for, whatever its value: 0s
		// must not quietly become "wait for ever", the route without one
		afterSet, failSet := cmd.Flags().Changed("after"), cmd.Flags().Changed("fail-after")
		switch {
		case unpin && (to != "" || afterSet || failSet):
			return usagef("--unpin takes no --to, --after or --fail-after")
		case !unpin && to == "":
			return usagef("give --to WORKER or --unpin")
		case afterSet && failSet:
			return usagef("give --after or --fail-after, not both")
		case afterSet && after <= 0, failSet && failAfter <= 0:
			return usagef("--after and --fail-after take a positive duration; leave both out to wait for the worker for ever")
		}
		var opt flow.EnqueueOption
		result := "unpinned"
		if !unpin {
			opt = sticky.To(to, policy(after, failAfter))
			result = "rerouted to " + to
		}
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		j, err := client.Job(cmd.Context(), id)
		if err != nil {
			return c.about("job", id, err)
		}
		if unpin && j.PreferredWorker == "" {
			// unpinned all the same below (a pin set since is undone),
			// but nothing is said to have changed
			result = "already unpinned"
		}
		if j.State == flow.StateCompleted {
			return missingError{fmt.Sprintf("job %s is completed: it never runs again, so it has no run to reroute", id)}
		}
		if err := client.Reroute(cmd.Context(), id, opt); errors.Is(err, admin.ErrWorkerNotFound) {
			if liveWorker(cmd.Context(), client, to) {
				// live, but it claims from the job's queue no more (a
				// resize since it started) or never did: admin says which
				return missingError{bare(err)}
			}
			err := c.about("worker", to, err)
			err.(*subjectError).hint = "no live worker has this ID; --after D or --fail-after D reroutes to it with a fallback"
			return err
		} else if err != nil {
			return c.about("job", id, err)
		}
		if c.json {
			return writeJSON(c.stdout, map[string]string{"id": id, "result": result})
		}
		fmt.Fprintf(c.stdout, "%s %s\n", result, id)
		return nil
	})
	return cmd
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

// liveWorker reports whether worker id is registered as live (false too
// when the registry cannot be read: the refusal is reported as it is).
func liveWorker(ctx context.Context, client *admin.Client, id string) bool {
	ws, err := client.Workers(ctx)
	if !listed(err) {
		return false
	}
	for _, w := range ws {
		if w.ID == id {
			return true
		}
	}
	return false
}
