package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/flow/admin"
)

// cli is one invocation: its command line, global settings and, once
// connected, its client.
type cli struct {
	env
	args       []string // the command line, as given
	redisURL   string
	namespace  string
	json       bool
	partitions partitionsFlag
	// retainCancelled is jobs cancel --retain (0: the workers' retention)
	retainCancelled time.Duration
	// ran: a command's own code started (what fails before is the
	// command line's fault)
	ran    bool
	rdb    redis.UniversalClient
	client *admin.Client
}

const rootLong = `sluice is the operator's command line for Sluice: list and inspect jobs,
cancel, delete, redrive and release them, pause and resume queues, read
queue stats, list live workers, manage periodic schedules and dead-lettered
effects, serve the web console, and run the benchmark.

Global flags go before or after the command. --redis defaults to
$REDIS_URL, else redis://localhost:6379 (redis://, rediss:// for TLS,
redis+cluster://h1:p1,h2:p2, redis+sentinel://s1,s2?master_name=m);
--namespace defaults to $SLUICE_NAMESPACE, else "sluice".

Exit codes: 0 ok; 1 error, including a job whose state refuses the command;
2 usage (unknown command or flag, a value out of range, a malformed ID);
3 not found (a job, schedule, dead effect, queue or worker that does not
exist).`

// root builds the command tree.
func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Operate Sluice jobs, queues, workers and schedules",
		Long:          rootLong,
		SilenceErrors: true, // fail prints them, with the exit code's form
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name a command")
			}
			return unknownCommand(cmd, args[0])
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	// a command with subcommands shows "sluice jobs <command> [flags]" only
	// (usageLine): a command must be named
	tpl := strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1)
	root.SetUsageTemplate(strings.Replace(tpl, "{{.CommandPath}} [command]{{end}}", "{{.CommandPath}} <command> [flags]{{end}}", 1))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	c.globalFlags(root.PersistentFlags())
	root.AddCommand(c.tree()...)
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "help":
			helpTopics(cmd)
		case "completion":
			asGroup(cmd)
		}
	}
	return root
}

// tree is every command of the root. A new command is a constructor in a
// file of its own and its line here.
func (c *cli) tree() []*cobra.Command {
	return []*cobra.Command{
		group("jobs", "List, inspect and change jobs",
			c.jobsListCmd(), c.jobsShowCmd(), c.jobsCancelCmd(), c.jobsDeleteCmd(),
			c.jobsRerouteCmd(), c.jobsSignalCmd(), c.jobsRunNowCmd()),
		c.redriveCmd(),
		c.releaseCmd(),
		group("queues", "List, pause, resume and resize queues, read their stats",
			c.queuesListCmd(), c.queuesPauseCmd(), c.queuesResumeCmd(), c.queuesResizeCmd(), c.queuesStatsCmd()),
		c.namespacesCmd(),
		c.workersCmd(),
		group("schedules", "List, pause, resume, trigger and delete periodic schedules",
			c.schedulesListCmd(), c.schedulesPauseCmd(), c.schedulesResumeCmd(), c.schedulesTriggerCmd(),
			c.schedulesDeleteCmd()),
		group("effects", "List and send back dead-lettered effects",
			c.effectsListCmd(), c.effectsRedriveCmd()),
		c.webCmd(),
		c.benchCmd(),
	}
}

// globalFlags are accepted by every command, before or after it.
func (c *cli) globalFlags(fs *pflag.FlagSet) {
	fs.Var(given{&c.redisURL, "the Redis URL"}, "redis", "Redis `URL` (default $REDIS_URL, else redis://localhost:6379)")
	fs.Var(given{&c.namespace, "the namespace"}, "namespace", "Sluice namespace `NS` (default $SLUICE_NAMESPACE, else sluice)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of tables")
	fs.Var(&c.partitions, "partitions", "check that queues have these partition counts, `Q=N,...` (layouts are read from Redis)")
}

// given is a string flag that refuses an empty value: given one (an unset
// variable, "--namespace $NS"), the default took its place, and the
// command acted on another namespace or server than the one meant.
type given struct {
	s    *string
	what string
}

func (g given) String() string {
	if g.s == nil { // pflag's zero value, for its help
		return ""
	}
	return *g.s
}

func (g given) Set(v string) error {
	if v == "" {
		return fmt.Errorf("empty: give %s, or leave the flag out", g.what)
	}
	*g.s = v
	return nil
}

func (given) Type() string { return "string" }

// group is a command that only holds others.
func group(name, short string, cmds ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: name, Short: short}
	g.AddCommand(cmds...)
	asGroup(g)
	return g
}

// asGroup makes a command that only holds others a usage error when run
// alone or with an unknown name (cobra would print its help and exit 0).
func asGroup(g *cobra.Command) {
	g.SuggestionsMinimumDistance = 2
	g.Args = cobra.ArbitraryArgs
	g.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			names := make([]string, 0, len(cmd.Commands()))
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			return usagef("%s: name a command (%s)", path(cmd), strings.Join(names, ", "))
		}
		return unknownCommand(cmd, args[0])
	}
}

// helpTopics makes `sluice help X` of a command X that does not exist a
// usage error, as running X is: cobra's help printed the help of the
// command found before X (the root's, a group's) and exited 0.
func helpTopics(h *cobra.Command) {
	h.Run = nil
	h.RunE = func(cmd *cobra.Command, args []string) error {
		target, rest, err := cmd.Root().Find(args)
		if err != nil {
			return usageError{err.Error()}
		}
		if len(rest) > 0 {
			return unknownCommand(target, rest[0])
		}
		target.InitDefaultHelpFlag() // as executing it does
		return target.Help()
	}
}

// unknownCommand is a usage error with cobra's suggestions.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := "unknown command \"" + name + "\" for \"" + cmd.CommandPath() + "\""
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return usageError{msg}
}

// runE marks the start of a command's own code (see cli.ran).
func (c *cli) runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c.ran = true
		return f(cmd, args)
	}
}

// nArgs accepts exactly as many arguments as names (e.g. "ID").
func nArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("%s takes %s; got %d argument%s", path(cmd), strings.Join(names, " and "), len(args), plural(len(args)))
		}
		return nil
	}
}

// minArgs accepts one or more arguments.
func minArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("%s takes one or more %s", path(cmd), name)
		}
		return nil
	}
}

// once is args without repeats, in the order first given: a command
// acts on each target once, and a repeat would report a failure for the
// target it has just acted on (run-now: "it is available").
func once(args []string) []string {
	var out []string
	for _, a := range args {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// noArgs accepts no argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments; got %q", path(cmd), args)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// path is a command's path without the program's name: "jobs show".
func path(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
