package main

import (
	"time"

	"github.com/sluicehq/sluice/flow"
)

// jobJSON is a job in --json output.
type jobJSON struct {
	ID              string       `json:"id"`
	Queue           string       `json:"queue"`
	Kind            string       `json:"kind"`
	State           string       `json:"state"`
	Priority        int          `json:"priority"`
	Attempt         int          `json:"attempt"`
	CrashAttempt    int          `json:"crash_attempt"`
	MaxAttempts     int          `json:"max_attempts"`
	Fence           int64        `json:"fence,omitempty"`
	LeaseID         string       `json:"lease_id,omitempty"`
	LeaseHolder     string       `json:"lease_holder,omitempty"`
	LeaseExpiry     *time.Time   `json:"lease_expiry,omitempty"`
	Created         *time.Time   `json:"created,omitempty"`
	RunAt           *time.Time   `json:"run_at,omitempty"`
	Finished        *time.Time   `json:"finished,omitempty"`
	Deadline        *time.Time   `json:"deadline,omitempty"`
	Timeout         string       `json:"timeout,omitempty"`
	Reason          string       `json:"reason,omitempty"`
	LastError       string       `json:"last_error,omitempty"`
	Parent          string       `json:"parent,omitempty"`
	PreferredWorker string       `json:"preferred_worker,omitempty"`
	HeldBy          string       `json:"held_by,omitempty"`
	DeadEffects     int          `json:"dead_effects,omitempty"`
	WaitingFor      string       `json:"waiting_for,omitempty"`
	WaitingCount    int          `json:"waiting_count,omitempty"`
	Redrives        int          `json:"redrives,omitempty"`
	RedrivenAt      *time.Time   `json:"redriven_at,omitempty"`
	RedrivenFrom    string       `json:"redriven_from,omitempty"`
	Orphan          *orphanJSON  `json:"orphan,omitempty"`
	Args            any          `json:"args,omitempty"`
	Result          any          `json:"result,omitempty"`
	Progress        *progressRep `json:"progress,omitempty"`
	Stuck           *stuckJSON   `json:"stuck,omitempty"`
	Steps           []stepJSON   `json:"steps,omitempty"`
	// a suspended workflow's waits
	Suspended       bool         `json:"suspended,omitempty"`
	AwaitingSignals []string     `json:"awaiting_signals,omitempty"`
	Timers          []timerJSON  `json:"timers,omitempty"`
	Signals         []signalJSON `json:"signals,omitempty"`
	Errors          []errorJSON  `json:"errors,omitempty"`
}

type orphanJSON struct {
	Holder    string     `json:"holder"`
	ExpiredAt *time.Time `json:"expired_at,omitempty"`
	Count     int        `json:"count"`
}

type progressRep struct {
	Percent float64    `json:"percent"`
	State   string     `json:"state,omitempty"`
	At      *time.Time `json:"at,omitempty"`
	Fence   int64      `json:"fence"`
}

type stuckJSON struct {
	Case  string     `json:"case"`
	Why   string     `json:"why,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	Step  string     `json:"step,omitempty"`
	Fence int64      `json:"fence"`
	Stack string     `json:"stack,omitempty"`
}

type stepJSON struct {
	Name   string     `json:"name"`
	Index  int        `json:"index"`
	Cursor bool       `json:"cursor,omitempty"`
	At     *time.Time `json:"at,omitempty"`
	Result any        `json:"result,omitempty"`
}

type timerJSON struct {
	Name string     `json:"name"`
	Wake *time.Time `json:"wake"`
}

type signalJSON struct {
	Name    string `json:"name"`
	Seq     int64  `json:"seq"`
	Payload any    `json:"payload,omitempty"`
}

type errorJSON struct {
	Class        string     `json:"class"`
	At           *time.Time `json:"at,omitempty"`
	Attempt      int        `json:"attempt"`
	CrashAttempt int        `json:"crash_attempt"`
	Message      string     `json:"message"`
	Stack        string     `json:"stack,omitempty"`
}

// toJSON converts a job; full adds what only Job reads (arguments,
// result, steps, errors, reports).
func toJSON(j *flow.JobInfo, full bool) jobJSON {
	out := jobJSON{
		ID: j.ID, Queue: j.Queue, Kind: j.Kind, State: j.State, Priority: j.Priority, Attempt: j.Attempt,
		CrashAttempt: j.CrashAttempt, MaxAttempts: j.MaxAttempts, Fence: j.Fence, LeaseHolder: j.LeaseHolder,
		LeaseExpiry: ts(j.LeaseExpiry), Created: ts(j.Created), RunAt: ts(j.RunAt), Finished: ts(j.Finished),
		Deadline: ts(j.Deadline), Reason: j.Reason, LastError: j.LastError, Parent: j.Parent, PreferredWorker: j.PreferredWorker,
		Redrives: j.Redrives, RedrivenAt: ts(j.RedrivenAt), RedrivenFrom: j.RedrivenFrom,
		Suspended: j.Suspended, AwaitingSignals: j.AwaitingSignals,
		HeldBy: j.HeldBy, DeadEffects: j.DeadEffects, WaitingFor: j.WaitingFor, WaitingCount: j.WaitingCount,
	}
	if j.State == flow.StateRunning {
		out.LeaseID = j.LeaseID
	}
	if j.Timeout > 0 {
		out.Timeout = j.Timeout.String()
	}
	if j.Orphan.Count > 0 {
		out.Orphan = &orphanJSON{Holder: j.Orphan.Holder, ExpiredAt: ts(j.Orphan.ExpiredAt), Count: j.Orphan.Count}
	}
	if !full {
		return out
	}
	out.Args, out.Result = decoded(j.Payload), decoded(j.Result)
	if r := j.Tracking; r != nil {
		out.Progress = &progressRep{Percent: r.Percent, State: r.State, At: ts(r.At), Fence: r.Fence}
	}
	if s := j.Stuck; s != nil {
		out.Stuck = &stuckJSON{Case: s.Case, Why: s.Why, Since: ts(s.Since), Step: s.Step, Fence: s.Fence, Stack: s.Stack}
	}
	for _, s := range j.Steps {
		out.Steps = append(out.Steps, stepJSON{Name: s.Name, Index: s.Index, Cursor: s.Cursor, At: ts(s.At), Result: decoded(s.Result)})
	}
	for _, tm := range j.Timers {
		out.Timers = append(out.Timers, timerJSON{Name: tm.Name, Wake: ts(tm.Wake)})
	}
	for _, sg := range j.Signals {
		out.Signals = append(out.Signals, signalJSON{Name: sg.Name, Seq: sg.Seq, Payload: decoded(sg.Payload)})
	}
	for _, e := range j.Errors {
		out.Errors = append(out.Errors, errorJSON{Class: e.Class, At: ts(e.At), Attempt: e.Attempt,
			CrashAttempt: e.CrashAttempt, Message: e.Message, Stack: e.Stack})
	}
	return out
}
