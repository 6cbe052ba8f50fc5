package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
)

// pausedQueues reads which of queues are paused: for each, how many of
// its partitions, and how many it has. Each queue's own entry is read:
// the listing stops at admin.MaxQueuesListed, and a queue past it would
// read as not paused. A queue that is not registered, or whose flags
// cannot be read (a corrupt entry: nor can its jobs be made available),
// is left out.
func pausedQueues(ctx context.Context, client *admin.Client, queues []string) (map[string][2]int, error) {
	out := map[string][2]int{}
	for _, name := range queues {
		q, err := client.Queue(ctx, name)
		if bad, only := admin.Unreadable(err); errors.Is(err, admin.ErrQueueNotFound) || only && bad[name] != nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		if q.Paused > 0 {
			out[q.Name] = [2]int{q.Paused, q.Partitions}
		}
	}
	return out, nil
}

// notePaused tells, after the command's output (exit 0 writes nothing on
// stderr), which queues of the jobs ids just made
// available are paused: the command did what it says, but no worker
// claims those jobs until the queue is resumed. A failed read of the
// flags says nothing: the command itself went through.
func (c *cli) notePaused(ctx context.Context, client *admin.Client, ids []string) {
	var queues []string
	for _, id := range ids {
		if ref, ok := keys.ParseRef(client.Namespace(), id); ok && !slices.Contains(queues, ref.Queue) {
			queues = append(queues, ref.Queue)
		}
	}
	c.notePausedQueues(ctx, client, queues)
}

// pausedOf is which of the queues of the jobs ids, or of queues, are
// paused, for --json ("paused_queues"), as notePaused tells them
// without: nil for none, or when the flags cannot be read.
func pausedOf(ctx context.Context, client *admin.Client, ids, queues []string) []string {
	for _, id := range ids {
		if ref, ok := keys.ParseRef(client.Namespace(), id); ok && !slices.Contains(queues, ref.Queue) {
			queues = append(queues, ref.Queue)
		}
	}
	if len(queues) == 0 {
		return nil
	}
	paused, err := pausedQueues(ctx, client, queues)
	if err != nil {
		return nil
	}
	var out []string
	for _, q := range queues {
		if _, ok := paused[q]; ok {
			out = append(out, q)
		}
	}
	return out
}

// notePausedQueues is notePaused of the queues jobs were just made
// available in (a redrive or release by selector).
func (c *cli) notePausedQueues(ctx context.Context, client *admin.Client, queues []string) {
	if len(queues) == 0 {
		return
	}
	paused, err := pausedQueues(ctx, client, queues)
	if err != nil {
		return
	}
	for _, q := range queues {
		if p, ok := paused[q]; ok {
			fmt.Fprintf(c.stdout, "note: queue %q is paused (%d of %d partitions): its jobs wait until it is resumed (sluice queues resume %s)\n",
				q, p[0], p[1], q)
		}
	}
}
