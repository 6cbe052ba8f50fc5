package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// redriveJSON is `redrive --json` by ID; selectJSON by selector.
type redriveJSON struct {
	Moved  []string          `json:"moved"`
	Failed map[string]string `json:"failed,omitempty"`
}

type selectJSON struct {
	DryRun   bool  `json:"dry_run"`
	Matched  int   `json:"matched"`
	Examined int   `json:"examined"`
	Total    int64 `json:"total"`
	Batches  int   `json:"batches"`
}

func (c *cli) redrive(ctx context.Context, cmd string, args []string) error {
	fs := c.flags(cmd)
	var (
		sel           admin.Selector
		after, before string
		o             admin.RedriveOptions
	)
	fs.StringVar(&sel.Queue, "queue", "", "queue (redrive by selector)")
	fs.StringVar(&sel.State, "state", "", "archived (default), cancelled or quarantined")
	fs.StringVar(&sel.Kind, "kind", "", "job kind")
	fs.StringVar(&sel.Reason, "reason", "", "terminal reason")
	fs.StringVar(&after, "after", "", "finished at or after: RFC 3339 time or duration ago")
	fs.StringVar(&before, "before", "", "finished before: RFC 3339 time or duration ago")
	fs.IntVar(&o.BatchSize, "batch", 500, "jobs examined per script call")
	fs.BoolVar(&o.DryRun, "dry-run", false, "count, move nothing")
	ids, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		if sel != (admin.Selector{}) || after != "" || before != "" || o.DryRun {
			return usagef("%s: give job IDs or a selector (--queue ...), not both", cmd)
		}
		return c.redriveIDs(ctx, cmd, ids)
	}
	if cmd == "release" {
		if sel.Queue == "" {
			return usagef("release ID... (or release --queue Q [selector flags])")
		}
		sel.State = flow.StateQuarantined
	}
	if sel.Queue == "" {
		return usagef("redrive ID... or redrive --queue Q [--state S] [--kind K] [--reason R] [--after T] [--before T] [--dry-run]")
	}
	if sel.FinishedAfter, err = c.parseTime("--after", after); err != nil {
		return err
	}
	if sel.FinishedBefore, err = c.parseTime("--before", before); err != nil {
		return err
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	bar := &progressBar{w: c.stderr}
	o.Progress = bar.draw
	pr, err := client.RedriveSelected(ctx, sel, o)
	bar.end()
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, selectJSON{DryRun: o.DryRun, Matched: pr.Matched, Examined: pr.Examined, Total: pr.Total, Batches: pr.Batches})
	}
	verb := "redrove"
	if o.DryRun {
		verb = "would redrive"
	}
	fmt.Fprintf(c.stdout, "%s %d jobs (%d examined in %d batches)\n", verb, pr.Matched, pr.Examined, pr.Batches)
	return nil
}

func (c *cli) redriveIDs(ctx context.Context, cmd string, ids []string) error {
	if len(ids) > admin.MaxRedriveIDs {
		return usagef("%s: %d IDs, at most %d: use a selector", cmd, len(ids), admin.MaxRedriveIDs)
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	var rep admin.RedriveReport
	if cmd == "release" {
		rep, err = client.Release(ctx, ids...)
	} else {
		rep, err = client.Redrive(ctx, ids...)
	}
	if err != nil {
		return err
	}
	failed := make([]string, 0, len(rep.Failed))
	for id := range rep.Failed {
		failed = append(failed, id)
	}
	sort.Strings(failed)
	if c.json {
		out := redriveJSON{Moved: append([]string{}, rep.Moved...), Failed: map[string]string{}}
		for id, e := range rep.Failed {
			out.Failed[id] = e.Error()
		}
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
	} else {
		for _, id := range rep.Moved {
			fmt.Fprintf(c.stdout, "%s %s\n", map[string]string{"redrive": "redrove", "release": "released"}[cmd], id)
		}
		for _, id := range failed {
			fmt.Fprintf(c.stderr, "sluice: %s: %v\n", id, rep.Failed[id])
		}
	}
	if len(failed) == 0 {
		return nil
	}
	for _, e := range rep.Failed {
		if !errors.Is(e, flow.ErrNotFound) {
			return errExit1
		}
	}
	return errExit3
}

// parseTime reads an RFC 3339 time or a duration ago ("" is none).
func (c *cli) parseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, usagef("%s %q: want an RFC 3339 time or a duration ago", name, s)
	}
	now := time.Now()
	if c.clock != nil {
		now = c.clock.Now()
	}
	return now.Add(-d), nil
}

// progressBar draws a redrive's progress on one terminal line.
type progressBar struct {
	w     io.Writer
	drawn bool
}

const barWidth = 30

func (b *progressBar) draw(p admin.RedriveProgress) {
	total := max(p.Total, int64(p.Examined), 1)
	filled := int(int64(barWidth) * int64(p.Examined) / total)
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d examined, %d matched", strings.Repeat("=", filled),
		strings.Repeat(" ", barWidth-filled), p.Examined, total, p.Matched)
	b.drawn = true
}

func (b *progressBar) end() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}
