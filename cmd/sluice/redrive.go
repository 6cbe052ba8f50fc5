package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// redriveJSON is `redrive --json` by ID; selectJSON by selector.
type redriveJSON struct {
	Moved  []string          `json:"moved"`
	Failed map[string]string `json:"failed,omitempty"`
	// Paused names the paused queues of the jobs moved (the text
	// output's note): they wait until it is resumed
	Paused []string `json:"paused_queues,omitempty"`
}

type selectJSON struct {
	DryRun   bool  `json:"dry_run"`
	Matched  int   `json:"matched"`
	Examined int   `json:"examined"`
	Total    int64 `json:"total"`
	Batches  int   `json:"batches"`
	// Unreadable are the entries of the scanned state whose data is not a
	// job: left as they are
	Unreadable []string `json:"unreadable"`
	// Error is the error that stopped the scan (the exit is not 0): the
	// counts are what the batches before it did, which stay done
	Error string `json:"error,omitempty"`
	// Paused names the queue when it is paused and jobs were made
	// available in it (redrive, release: the text output's note)
	Paused []string `json:"paused_queues,omitempty"`
}

// selection is the selector flags of redrive, release and jobs delete.
type selection struct {
	sel           admin.Selector
	after, before string
	dryRun        bool
	batch         int
}

// selFlags are the flags of a selection.
var selFlags = []string{"queue", "state", "kind", "reason", "after", "before", "dry-run", "batch"}

func (c *cli) redriveCmd() *cobra.Command {
	var s selection
	cmd := &cobra.Command{
		Use:   "redrive (ID... | --queue Q [selector flags])",
		Short: "Return archived or cancelled jobs to execution, by ID or by selector",
		Long: `Return archived or cancelled jobs (or, with --state quarantined, quarantined
ones) to execution, by ID (at most 1000 distinct IDs) or by a selector over one queue.
Each job keeps its counters: one whose attempts were spent gets one more
per redrive. Times (--after, --before) are RFC 3339 or a duration ago
("2h", by Redis's clock, which finish times are kept in). A redrive by
selector draws a progress bar when stderr is a terminal; one stopped part
way (an error, Ctrl-C) leaves the batches before it done, says what they
did (--json: the counts and "error"), then the error (its exit code): running it
again goes on. Jobs made available in a paused queue get a note saying
so. By ID it prints each job moved and an error for each that did not:
it exits 0 when every job moved, else with the exit code the errors
share (3: all unknown, 2: all malformed), or 1.`,
		Example: `  sluice redrive mail:0:7f3a mail:1:9bc2
  sluice redrive --queue mail --kind email --reason attempts_exhausted --after 2h --dry-run`,
	}
	s.flags(cmd, "the jobs' state (default archived)", flow.StateArchived, flow.StateCancelled, flow.StateQuarantined)
	c.queueFlag(cmd)
	cmd.RunE = c.runE(func(cmd *cobra.Command, ids []string) error { return c.redrive(cmd, "redrive", ids, s) })
	return cmd
}

func (c *cli) releaseCmd() *cobra.Command {
	var s selection
	cmd := &cobra.Command{
		Use:   "release (ID... | --queue Q [selector flags])",
		Short: "Return quarantined jobs to execution, with crash_attempt reset",
		Example: `  sluice release mail:0:7f3a
  sluice release --queue mail --kind email --dry-run`,
	}
	s.flags(cmd, "")
	c.queueFlag(cmd)
	cmd.RunE = c.runE(func(cmd *cobra.Command, ids []string) error {
		s.sel.State = flow.StateQuarantined
		return c.redrive(cmd, "release", ids, s)
	})
	return cmd
}

// flags defines the selector flags on cmd, --state with stateUsage and
// the states it takes (none: no --state flag).
func (s *selection) flags(cmd *cobra.Command, stateUsage string, states ...string) {
	fs := cmd.Flags()
	fs.StringVar(&s.sel.Queue, "queue", "", cmd.Name()+" by selector: the queue `Q`")
	if len(states) > 0 {
		choice(cmd, &s.sel.State, "state", "", stateUsage, states...)
	}
	// each refuses an empty value (given): "--before $CUTOFF" with the
	// variable unset bounded nothing, and the command deleted or moved
	// every job of the state
	fs.Var(kindFlag{given{&s.sel.Kind, "the kind"}}, "kind", "only jobs of kind `K`")
	fs.Var(given{&s.sel.Reason, "the reason"}, "reason", "only jobs that ended for reason `R` (attempts_exhausted, skipped, operator, crash_limit, ...)")
	_ = cmd.RegisterFlagCompletionFunc("reason", cobra.FixedCompletions(admin.Reasons(""), cobra.ShellCompDirectiveNoFileComp))
	fs.Var(given{&s.after, "the time"}, "after", "only jobs finished at or after `T`: RFC 3339 or a duration ago")
	fs.Var(given{&s.before, "the time"}, "before", "only jobs finished before `T`: RFC 3339 or a duration ago")
	intRange(fs, &s.batch, "batch", 500, 1, 5000, "jobs examined per script call")
	fs.BoolVar(&s.dryRun, "dry-run", false, "count the jobs, "+cmd.Name()+" none")
}

// byID reports whether cmd was given job IDs rather than a selector; a
// usage error, saying what to give ("job IDs"), when it was given both,
// or neither.
func (s *selection) byID(cmd *cobra.Command, ids []string, what string) (bool, error) {
	name := path(cmd)
	if len(ids) > 0 {
		for _, f := range selFlags {
			if fl := cmd.Flags().Lookup(f); fl != nil && fl.Changed {
				return true, usagef("%s: give job IDs or a selector (--queue ...), not both: --%s with %d ID%s", name, f, len(ids), plural(len(ids)))
			}
		}
		return true, nil
	}
	if s.sel.Queue == "" {
		return false, usagef("%s: give %s, or --queue Q and selector flags", name, what)
	}
	return false, nil
}

// checkReason refuses a --reason that no job of state can have: one
// Sluice records on jobs of another state, or one it never records
// (misspelt) on a state other than archived. The scan would match nothing
// and report it as done. On archived jobs a reason Sluice does not record
// may be an isolated child's own park reason: it is not refused, but a
// selection it matches nothing of is an error (unmatched).
func (s *selection) checkReason(name, state string) error {
	r := s.sel.Reason
	have := admin.Reasons(state)
	if r == "" || slices.Contains(have, r) {
		return nil
	}
	which := "have no reason"
	if len(have) > 0 {
		which = "have one of: " + strings.Join(have, ", ")
	}
	for _, other := range []string{flow.StateArchived, flow.StateCancelled, flow.StateQuarantined} {
		if slices.Contains(admin.Reasons(other), r) {
			return usagef("%s: --reason %q is recorded on %s jobs, not %s ones; %s jobs %s", name, r, other, state, state, which)
		}
	}
	if state == flow.StateArchived {
		return nil
	}
	return usagef("%s: --reason %q: Sluice records no such reason; %s jobs %s", name, r, state, which)
}

// unmatched is err, named after the command, when it says a selection by
// a reason Sluice does not record itself (an isolated child's own, or
// misspelt) matched no job (admin.UnmatchedReasonError): not a success to
// report with counts. Nil for any other err.
func unmatched(name string, err error) error {
	var ue *admin.UnmatchedReasonError
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// times reads --after and --before into the selector: a duration ago
// from Redis's time (client's StoreTime, read once), which the jobs'
// finish times are kept in, not from this machine's clock, which may be
// off from it. client nil only checks them.
func (s *selection) times(ctx context.Context, client *admin.Client) error {
	var now time.Time
	for _, t := range []struct {
		name, text string
		into       *time.Time
	}{{"--after", s.after, &s.sel.FinishedAfter}, {"--before", s.before, &s.sel.FinishedBefore}} {
		at, ago, rel, err := parseTime(t.name, t.text)
		switch {
		case err != nil:
			return err
		case t.name == "--after" && rel && ago == 0:
			// finished from now on: no job has
			return usagef("--after %s selects the jobs that finished from now on, which none has; give how long ago (--after 1h)", t.text)
		case t.name == "--before" && !rel && t.text != "" && !at.After(time.UnixMilli(1)):
			// finish times are store time, whole milliseconds after the epoch
			return usagef("--before %s selects the jobs that finished before it, which none has", t.text)
		case t.name == "--after" && !rel && at.IsZero():
			continue // the zero time: every job, as no bound
		case client == nil || t.text == "":
			continue
		case rel && now.IsZero():
			if now, err = client.StoreTime(ctx); err != nil {
				return err
			}
		}
		if rel {
			at = now.Add(-ago)
		}
		*t.into = at
	}
	return nil
}

// progress returns the bar to draw a selector's progress with, nil when
// stderr is no terminal or the output is JSON.
func (c *cli) progress() *progressBar {
	if c.stderrTTY && !c.json {
		return &progressBar{w: c.stderr}
	}
	return nil
}

// batches is "3 batches", "1 batch".
// selectionClient checks a selection's times, connects, and checks that
// its queue exists: what every command acting on a selection does first.
func (c *cli) selectionClient(ctx context.Context, s *selection) (*admin.Client, error) {
	if err := s.times(ctx, nil); err != nil {
		return nil, err
	}
	client, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.checkQueue(ctx, client, s.sel.Queue); err != nil {
		return nil, err
	}
	return client, s.times(ctx, client)
}

func batches(n int) string {
	if n == 1 {
		return "1 batch"
	}
	return fmt.Sprintf("%d batches", n)
}

func (c *cli) redrive(cmd *cobra.Command, name string, ids []string, s selection) error {
	byID, err := s.byID(cmd, ids, "job IDs")
	if err != nil {
		return err
	}
	if byID {
		return c.redriveIDs(cmd.Context(), name, ids)
	}
	if err := s.checkReason(name, cmp.Or(s.sel.State, flow.StateArchived)); err != nil {
		return err
	}
	client, err := c.selectionClient(cmd.Context(), &s)
	if err != nil {
		return err
	}
	o := admin.RedriveOptions{DryRun: s.dryRun, BatchSize: s.batch}
	bar := c.progress()
	if bar != nil {
		o.Progress = bar.redrive
	}
	pr, err := client.RedriveSelected(cmd.Context(), s.sel, o)
	bar.end() // the bar's line ends before the result is printed
	if err := unmatched(name, err); err != nil {
		return err
	}
	err = c.about("queue", s.sel.Queue, err)
	// an error part way leaves the batches before it done: said, as a
	// success is, then the error
	out := selectJSON{DryRun: s.dryRun, Matched: pr.Matched, Examined: pr.Examined, Total: pr.Total, Batches: pr.Batches,
		Unreadable: append([]string{}, pr.Unreadable...)}
	if c.json {
		if err != nil {
			out.Error = bare(err)
		}
		if !s.dryRun && pr.Matched > 0 {
			out.Paused = pausedOf(cmd.Context(), client, nil, []string{s.sel.Queue})
		}
		return errors.Join(writeJSON(c.stdout, out), err)
	}
	if err != nil && pr.Batches == 0 {
		return err
	}
	verb := map[string]string{"redrive": "redrove", "release": "released"}[name]
	if s.dryRun {
		verb = "would " + name
	}
	fmt.Fprintf(c.stdout, "%s %d job%s of queue %q (%d examined in %s)%s\n", verb, pr.Matched, plural(pr.Matched),
		s.sel.Queue, pr.Examined, batches(pr.Batches), stopped(err))
	c.leftUnreadable(cmp.Or(s.sel.State, flow.StateArchived), pr.Unreadable)
	if !s.dryRun && pr.Matched > 0 {
		c.notePausedQueues(cmd.Context(), client, []string{s.sel.Queue})
	}
	return err
}

// stopped is what a selector's summary line adds when err stopped the
// scan part way: running the command again goes on.
func stopped(err error) string {
	if err == nil {
		return ""
	}
	return " before an error stopped it; run it again to go on"
}

func (c *cli) redriveIDs(ctx context.Context, name string, ids []string) error {
	seen := map[string]bool{} // the limit counts jobs, as admin's does
	for _, id := range ids {
		seen[id] = true
	}
	if len(seen) > admin.MaxRedriveIDs {
		return usagef("%s: %d IDs, at most %d: use a selector (--queue ...)", name, len(seen), admin.MaxRedriveIDs)
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	var rep admin.RedriveReport
	if name == "release" {
		rep, err = client.Release(ctx, ids...)
	} else {
		rep, err = client.Redrive(ctx, ids...)
	}
	if err != nil && len(rep.Moved)+len(rep.Failed) == 0 {
		return err
	} // else a failed partition's call: its jobs' errors are in rep.Failed
	failed := make([]string, 0, len(rep.Failed))
	for id := range rep.Failed {
		failed = append(failed, id)
	}
	sort.Strings(failed)
	if c.json {
		out := redriveJSON{Moved: append([]string{}, rep.Moved...), Failed: map[string]string{},
			Paused: pausedOf(ctx, client, rep.Moved, nil)}
		for id, e := range rep.Failed {
			out.Failed[id] = bare(c.about("job", id, e))
		}
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
	} else {
		for _, id := range rep.Moved {
			fmt.Fprintf(c.stdout, "%s %s\n", map[string]string{"redrive": "redrove", "release": "released"}[name], id)
		}
		c.notePaused(ctx, client, rep.Moved)
	}
	errs := make([]error, 0, len(failed))
	for _, id := range failed {
		errs = append(errs, c.about("job", id, rep.Failed[id]))
	}
	return errors.Join(errs...)
}

// parseTime reads an RFC 3339 time (at), or a duration ago (ago, with rel
// set); "" is neither.
func parseTime(name, s string) (at time.Time, ago time.Duration, rel bool, err error) {
	if s == "" {
		return time.Time{}, 0, false, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, 0, false, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, 0, false, usagef("%s %q: want an RFC 3339 time or a duration ago", name, s)
	}
	return time.Time{}, d, true, nil
}
