package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// scheduleJSON is one schedule of `schedules list --json`.
type scheduleJSON struct {
	Name     string     `json:"name"`
	Cron     string     `json:"cron,omitempty"`
	Every    string     `json:"every,omitempty"`
	TimeZone string     `json:"time_zone,omitempty"`
	Queue    string     `json:"queue"`
	Kind     string     `json:"kind"`
	Missed   string     `json:"missed"`
	Paused   bool       `json:"paused"`
	LastRun  *time.Time `json:"last_run,omitempty"`
	NextRun  *time.Time `json:"next_run,omitempty"`
}

func (c *cli) schedulesListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the periodic schedules the schedulers run",
		Long: `List the periodic schedules the schedulers run. A schedule whose record
is corrupt is left out, and named in an error after the others are
listed (exit 1).`,
		Args: noArgs,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, _ []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		return c.schedulesList(cmd.Context(), client)
	})
	return cmd
}

func (c *cli) schedulesPauseCmd() *cobra.Command {
	return c.scheduleCmd("pause", "paused", "Stop enqueueing a schedule's ticks, fleet-wide, until resumed",
		(*admin.Client).PauseSchedule)
}

func (c *cli) schedulesResumeCmd() *cobra.Command {
	return c.scheduleCmd("resume", "resumed", "Restart a paused schedule with its next tick", (*admin.Client).ResumeSchedule)
}

// scheduleCmd is schedules pause or resume.
func (c *cli) scheduleCmd(name, done, short string, op func(*admin.Client, context.Context, string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name + " NAME",
		Short: short,
		Args:  nArgs("NAME"),
		// offers the schedules' names
		ValidArgsFunction: c.completeSchedule,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		// read first, to say when the call changed nothing (the call
		// itself answers the same either way); a record that does not
		// read (corrupt data) is still paused or resumed, saying nothing
		// of before: pausing is what a misbehaving schedule needs first
		before, err := client.Schedule(cmd.Context(), args[0])
		known := err == nil
		if err != nil && !errors.Is(err, flow.ErrMalformed) {
			return c.about("schedule", args[0], err)
		}
		if err := op(client, cmd.Context(), args[0]); err != nil {
			return c.about("schedule", args[0], err)
		}
		was := ""
		switch {
		case !known:
		case name == "pause" && before.Paused:
			was = "it was paused already"
		case name == "resume" && !before.Paused:
			was = "it was not paused"
		}
		if c.json {
			return writeJSON(c.stdout, map[string]any{"schedule": args[0], "result": done, "unchanged": was != ""})
		}
		if was != "" {
			was = " (" + was + ")"
		}
		fmt.Fprintf(c.stdout, "%s %s%s\n", done, args[0], was)
		return nil
	})
	return cmd
}

func (c *cli) schedulesTriggerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trigger NAME",
		Short: "Enqueue a schedule's job now, outside its ticks",
		Args:  nArgs("NAME"),
		// offers the schedules' names
		ValidArgsFunction: c.completeSchedule,
	}
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		e, err := client.TriggerSchedule(cmd.Context(), args[0])
		if err != nil && e.ID != "" {
			// Redis may have added the job and lost the reply
			err = fmt.Errorf("%w (the job may have been added as %s; look it up before triggering again)", err, e.ID)
		}
		if errors.Is(err, admin.ErrQueueNotFound) {
			return err // it names the queue and the schedule: not "schedule not found"
		}
		if err != nil {
			return c.about("schedule", args[0], err)
		}
		if e.Duplicate {
			// a unique schedule whose key a job holds: nothing was added
			return fmt.Errorf("schedule %s not triggered: job %s holds its unique key (it has not finished yet)", args[0], e.ID)
		}
		if c.json {
			return writeJSON(c.stdout, triggerJSON{Schedule: args[0], Job: e.ID,
				Paused: pausedOf(cmd.Context(), client, []string{e.ID}, nil)})
		}
		fmt.Fprintf(c.stdout, "triggered %s: job %s\n", args[0], e.ID)
		c.notePaused(cmd.Context(), client, []string{e.ID})
		return nil
	})
	return cmd
}

// triggerJSON is `schedules trigger --json`.
type triggerJSON struct {
	Schedule string `json:"schedule"`
	Job      string `json:"job"`
	// Paused names the job's queue when it is paused: the job waits until
	// it is resumed (the text output's note), as run-now says
	Paused []string `json:"paused_queues,omitempty"`
}

func (c *cli) schedulesDeleteCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a schedule removed from the schedulers' code",
		Long: `Delete a schedule's record from Redis: its definition, its state (paused,
last tick) and its ticks claimed and not yet confirmed, atomically, so that
'schedules list' no longer shows it. Remove the schedule from every
scheduler's code first: a scheduler that still runs it publishes it again
at its next round.

A schedule a scheduler synced less than 5 minutes ago (store time; a
scheduler looks at each of its schedules at least once a minute, paused or
not), or that no scheduler of this release ever synced (one of an older
release may still run it), is refused (exit 1) and nothing is deleted,
unless --force: a scheduler that still runs it then starts it afresh at
its next round (its pause, and its ticks owed or claimed, are lost).

The jobs the schedule's ticks and triggers enqueued are left alone. An
unknown schedule exits 3.`,
		Args: nArgs("NAME"),
		// offers the schedules' names
		ValidArgsFunction: c.completeSchedule,
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete it even while a scheduler runs it")
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		if err := client.DeleteSchedule(cmd.Context(), args[0], admin.DeleteScheduleOptions{Force: force}); err != nil {
			return c.about("schedule", args[0], err)
		}
		if c.json {
			return writeJSON(c.stdout, map[string]string{"schedule": args[0], "result": "deleted"})
		}
		fmt.Fprintf(c.stdout, "deleted %s (the jobs it enqueued are kept)\n", args[0])
		return nil
	})
	return cmd
}

func (c *cli) schedulesList(ctx context.Context, client *admin.Client) error {
	ss, err := client.Schedules(ctx)
	if !listed(err) {
		return err
	}
	if len(ss) == 0 && err == nil {
		if err := namespaceUsed(ctx, client); err != nil {
			return err
		}
	}
	if c.json {
		out := []scheduleJSON{}
		for _, s := range ss {
			j := scheduleJSON{Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, Queue: s.Queue, Kind: s.Kind,
				Missed: s.Missed, Paused: s.Paused, LastRun: ts(s.LastRun), NextRun: ts(s.NextRun)}
			if s.Every > 0 {
				j.Every = s.Every.String()
			}
			out = append(out, j)
		}
		return errors.Join(writeJSON(c.stdout, out), err)
	}
	if len(ss) == 0 {
		if err == nil {
			fmt.Fprintf(c.stdout, "no schedules in namespace %q\n", client.Namespace())
		}
		return err
	}
	t := newTable(c.stdout, "SCHEDULE", "TIMING", "QUEUE", "KIND", "MISSED", "PAUSED", "LAST RUN (UTC)", "NEXT RUN (UTC)")
	for _, s := range ss {
		timing := s.Cron
		if s.Every > 0 {
			timing = "every " + s.Every.String()
		}
		if s.TimeZone != "" && s.Cron != "" {
			timing += " " + s.TimeZone
		}
		paused := "no"
		if s.Paused {
			paused = "yes"
		}
		t.row(s.Name, timing, s.Queue, s.Kind, s.Missed, paused, when(s.LastRun), when(s.NextRun))
	}
	t.flush()
	return err // the schedules whose record is corrupt, each named
}
