package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow/admin"
)

// queueJSON is one queue of `queues list --json`.
type queueJSON struct {
	Name       string     `json:"name"`
	Partitions int        `json:"partitions"`
	Version    int64      `json:"version"`
	Paused     int        `json:"paused_partitions"`
	Registered *time.Time `json:"registered,omitempty"`
	Changed    *time.Time `json:"changed,omitempty"`
}

func (c *cli) queuesListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the namespace's queues with their layouts",
		Long: `List the queues registered in the namespace (at most ` + strconv.Itoa(admin.MaxQueuesListed) + `, sorted by name; a
command about one queue reads its own entry, however many there are):
its partition count
(recorded in Redis by the first client or worker that used it; every
process reads it from there), the layout's version (1, plus one per
resize), how many partitions are paused, and when it was registered and
last changed (UTC). A namespace with no queue exits 3. A queue whose
registry entry is not a layout is left out, and named in an error after
the others are listed (exit 1).`,
		Args: noArgs,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, _ []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		qs, err := client.Queues(cmd.Context())
		if !listed(err) {
			return err
		}
		if len(qs) == 0 && err == nil {
			return noQueues(client)
		}
		if c.json {
			out := make([]queueJSON, 0, len(qs))
			for _, q := range qs {
				out = append(out, queueJSON{Name: q.Name, Partitions: q.Partitions, Version: q.Version, Paused: q.Paused,
					Registered: ts(q.Registered), Changed: ts(q.Changed)})
			}
			return errors.Join(writeJSON(c.stdout, out), err)
		}
		if len(qs) == 0 {
			return err
		}
		t := newTable(c.stdout, "QUEUE", "PARTITIONS", "PAUSED", "VERSION", "REGISTERED (UTC)", "CHANGED (UTC)")
		for _, q := range qs {
			t.row(q.Name, strconv.Itoa(q.Partitions), strconv.Itoa(q.Paused)+"/"+strconv.Itoa(q.Partitions),
				strconv.FormatInt(q.Version, 10), when(q.Registered), when(q.Changed))
		}
		t.flush()
		return err // the queues whose registry entry is corrupt, each named
	})
	return cmd
}

func (c *cli) queuesResizeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resize QUEUE N",
		Short: "Change a paused queue's partition count",
		Long: `Change a queue's partition count to N (1..` + strconv.Itoa(admin.MaxPartitions) + `). The queue must be
paused in every partition (sluice queues pause QUEUE), and when shrinking,
the partitions that go away must hold no job and no effect; otherwise the
resize is refused (exit 1, saying why) and nothing changes. Then restart
the queue's workers and producers and resume it. The procedure is in
docs/operations.md ("Resizing a queue").`,
		Args:              nArgs("QUEUE", "N"),
		ValidArgsFunction: c.completeQueues,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		queue := args[0]
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > admin.MaxPartitions {
			return usagef("queues resize: N %q: want a partition count in 1..%d", args[1], admin.MaxPartitions)
		}
		ctx := cmd.Context()
		client, err := c.connect(ctx)
		if err != nil {
			return err
		}
		lay, err := c.queueLayout(ctx, client, queue)
		if err != nil {
			return err
		}
		if lay.Partitions == n {
			return c.resizeToItsCount(ctx, client, lay)
		}
		if err := client.ResizeQueue(ctx, queue, n); err != nil {
			return c.about("queue", queue, err)
		}
		return c.resized(queue, n)
	})
	return cmd
}

// resized says that queue was resized to n partitions.
func (c *cli) resized(queue string, n int) error {
	if c.json {
		return writeJSON(c.stdout, map[string]any{"queue": queue, "partitions": n, "changed": true})
	}
	fmt.Fprintf(c.stdout, "resized %s to %d partition%s; restart its workers and producers, then: sluice queues resume %s\n", queue, n, plural(n), queue)
	return nil
}

func (c *cli) namespacesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "namespaces",
		Short: "List the namespaces that have queues on this Redis",
		Long: `List the namespaces in which a client or worker has registered a
queue, read from Sluice's own registry key (never a scan of the keyspace).`,
		Args: noArgs,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, _ []string) error {
		if _, err := c.connect(cmd.Context()); err != nil {
			return err
		}
		ns, err := admin.Namespaces(cmd.Context(), c.rdb)
		if err != nil {
			return err
		}
		if len(ns) == 0 { // as queues list: not found, in text and JSON alike
			return missingError{"no namespaces with queues on this Redis"}
		}
		if c.json {
			return writeJSON(c.stdout, append([]string{}, ns...))
		}
		for _, n := range ns {
			fmt.Fprintln(c.stdout, n)
		}
		return nil
	})
	return cmd
}

// noQueues is what a command that finds nothing says when the namespace
// it looked in has no queue at all, which is most often a mistyped
// --namespace (exit 3).
func noQueues(client *admin.Client) error {
	return missingError{fmt.Sprintf("no queues in namespace %q: no client or worker has used one yet (sluice namespaces lists the namespaces)",
		client.Namespace())}
}

// namespaceUsed is nil when client's namespace has a queue, else noQueues:
// a command whose answer is an empty list asks it before saying so.
func namespaceUsed(ctx context.Context, client *admin.Client) error {
	qs, err := client.Layouts(ctx)
	bad, only := admin.Unreadable(err)
	if !only {
		return err
	}
	if len(qs) == 0 && len(bad) == 0 {
		return noQueues(client)
	}
	return nil
}

// beforeTakeBack is called between the reads of a resize to the count it
// has and its call: tests resize the queue there.
var beforeTakeBack = func() {}

// resizeToItsCount is a resize of queue to the count it has: no restart to
// ask for, but the partitions of that count a shrink retired and did not
// record (it failed, or a resume cancelled it) come back, paused
// (admin.Client.ResizeQueue), and are named. lay is the layout read.
func (c *cli) resizeToItsCount(ctx context.Context, client *admin.Client, lay admin.QueueInfo) error {
	queue, n := lay.Name, lay.Partitions
	retired, err := client.RetiredPartitions(ctx, queue)
	if err != nil {
		return c.about("queue", queue, err)
	}
	if retired == nil {
		retired = []int{}
	}
	if len(retired) > 0 {
		beforeTakeBack()
		if err := client.ResizeQueue(ctx, queue, n); err != nil {
			return c.about("queue", queue, err)
		}
		// another resize recorded since the layout was read (its shrink
		// retired those partitions) made this one a resize back to n:
		// the count changed, and workers and producers must restart, not
		// "nothing changed"
		now, err := c.queueLayout(ctx, client, queue)
		if err != nil {
			return err
		}
		if now.Version != lay.Version {
			return c.resized(queue, n)
		}
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"queue": queue, "partitions": n, "changed": false, "brought_back": retired})
	}
	if len(retired) == 0 {
		fmt.Fprintf(c.stdout, "%s has %d partition%s already: nothing changed\n", queue, n, plural(n))
		return nil
	}
	names := make([]string, len(retired))
	for i, p := range retired {
		names[i] = strconv.Itoa(p)
	}
	fmt.Fprintf(c.stdout, "%s has %d partition%s already; brought back partition%s %s, which a shrink had retired, paused: sluice queues resume %s\n",
		queue, n, plural(n), plural(len(retired)), strings.Join(names, ", "), queue)
	return nil
}
