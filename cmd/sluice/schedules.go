package main

import (
	"context"
	"fmt"
	"strings"
	"time"

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

func (c *cli) schedules(ctx context.Context, sub string, args []string) error {
	if sub == "" {
		return usagef("schedules list | pause NAME | resume NAME | trigger NAME")
	}
	rest, err := parse(c.flags("schedules "+sub), args[1:])
	if err != nil {
		return err
	}
	if (sub == "list") != (len(rest) == 0) || len(rest) > 1 {
		return usagef("schedules list | pause NAME | resume NAME | trigger NAME")
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return c.schedulesList(ctx, client)
	case "pause":
		err = client.PauseSchedule(ctx, rest[0])
	case "resume":
		err = client.ResumeSchedule(ctx, rest[0])
	case "trigger":
		var e flow.Enqueued
		if e, err = client.TriggerSchedule(ctx, rest[0]); err == nil {
			if c.json {
				return writeJSON(c.stdout, map[string]string{"schedule": rest[0], "job": e.ID})
			}
			fmt.Fprintf(c.stdout, "triggered %s: job %s\n", rest[0], e.ID)
			return nil
		}
	default:
		return usagef("unknown command \"schedules %s\"", sub)
	}
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]string{"schedule": rest[0], "result": strings.TrimSuffix(sub, "e") + "ed"})
	}
	fmt.Fprintf(c.stdout, "%sed %s\n", strings.TrimSuffix(sub, "e"), rest[0])
	return nil
}

func (c *cli) schedulesList(ctx context.Context, client *admin.Client) error {
	ss, err := client.Schedules(ctx)
	if err != nil {
		return err
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
		return writeJSON(c.stdout, out)
	}
	t := newTable(c.stdout, "SCHEDULE", "TIMING", "QUEUE", "KIND", "MISSED", "PAUSED", "LAST RUN", "NEXT RUN")
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
	return nil
}
