package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sluicetype"
)

// usageError is a bad command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// subjectError names what a failed call was about: a job ID, a queue, a
// schedule. A not-found error says where it looked.
type subjectError struct {
	what string // "job", "queue", "schedule", "dead effect"
	name string
	ns   string
	err  error
	hint string // what to do about a not-found error
}

func (e *subjectError) Error() string {
	name := e.name
	if e.what != "job" && e.what != "dead effect" {
		name = fmt.Sprintf("%q", e.name)
	}
	if notFound(e.err) {
		msg := fmt.Sprintf("%s %s not found in namespace %q", e.what, name, e.ns)
		if e.hint != "" {
			msg += " (" + e.hint + ")"
		}
		return msg
	}
	msg := bare(e.err)
	if strings.Contains(msg, e.name) {
		return msg
	}
	return e.what + " " + name + ": " + msg
}

func (e *subjectError) Unwrap() error { return e.err }

// about wraps err, if any, with what it is about.
func (c *cli) about(what, name string, err error) error {
	if err == nil {
		return nil
	}
	ns := ""
	if c.client != nil {
		ns = c.client.Namespace()
	}
	return &subjectError{what: what, name: name, ns: ns, err: err}
}

// bare is an error's message without the "sluice: " prefix of its
// sentinel, wrapped or not: fail adds it once.
func bare(err error) string {
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "sluice: "), ": sluice: ", ": ")
}

// fail prints err and returns its exit code. An error before the
// command's own code ran is the command line's: cobra's unknown commands
// and flags, missing required flags, wrong arguments.
func (c *cli) fail(cmd *cobra.Command, err error) int {
	var ue usageError
	if !c.ran || errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "sluice: %s\n", bare(err))
		if cmd != nil {
			fmt.Fprintf(c.stderr, "Usage: %s\nRun '%s --help' for more.\n", usageLine(cmd), cmd.CommandPath())
		}
		return exitUsage
	}
	for _, e := range split(err) {
		fmt.Fprintf(c.stderr, "sluice: %s\n", bare(e))
	}
	return exitCode(err)
}

// usageLine is the usage line --help shows for cmd (root.go's usage
// template writes a group's so).
func usageLine(cmd *cobra.Command) string {
	if cmd.HasAvailableSubCommands() {
		return cmd.CommandPath() + " <command> [flags]"
	}
	return cmd.UseLine()
}

// split returns the errors an errors.Join holds, else err alone.
func split(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// exitCode maps an error of a command's own code: several errors share
// an exit code when they agree, else exit 1.
func exitCode(err error) int {
	if errs := split(err); len(errs) > 1 {
		code := exitCode(errs[0])
		for _, e := range errs[1:] {
			if exitCode(e) != code {
				return exitError
			}
		}
		return code
	}
	var ue usageError
	switch {
	case errors.As(err, &ue), errors.Is(err, flow.ErrInvalid): // a malformed ID or name: the command line's fault
		return exitUsage
	case notFound(err):
		return exitNotFound
	}
	return exitError
}

// notFound: err says that what the command names does not exist (exit 3).
func notFound(err error) bool {
	var m missingError
	return sluicetype.IsNotFound(err) || errors.As(err, &m)
}

// listed reports whether a listing (admin.Client.Queues, Layouts,
// Schedules, Workers) returned the entries it could read: err is nil, or
// names only entries whose data in Redis is corrupt (admin.Unreadable).
// A command prints those entries, then returns err: exit 1, naming each
// entry left out.
func listed(err error) bool {
	_, only := admin.Unreadable(err)
	return only
}

// missingError is a not-found error that says it all (exit 3).
type missingError struct{ msg string }

func (e missingError) Error() string { return e.msg }
