package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/names"
)

// choiceFlag is a string flag that takes one of a fixed set of values;
// the shell completion offers them.
type choiceFlag struct {
	v       *string
	typ     string // the value's placeholder in help
	choices []string
}

func (f *choiceFlag) String() string { return *f.v }
func (f *choiceFlag) Type() string   { return f.typ }

func (f *choiceFlag) Set(s string) error {
	for _, c := range f.choices {
		if s == c {
			*f.v = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(f.choices, ", "))
}

// choice defines a choiceFlag on cmd.
func choice(cmd *cobra.Command, v *string, name, value, usage string, choices ...string) {
	*v = value
	cmd.Flags().Var(&choiceFlag{v: v, typ: strings.ToUpper(name), choices: choices}, name, usage+" ("+strings.Join(choices, ", ")+")")
	_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp))
}

// rangeFlag is an int flag bounded to [lo, hi].
type rangeFlag struct {
	v      *int
	lo, hi int
}

func (f *rangeFlag) String() string { return strconv.Itoa(*f.v) }
func (f *rangeFlag) Type() string   { return "N" }

func (f *rangeFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < f.lo || n > f.hi {
		return fmt.Errorf("want a whole number in %d..%d", f.lo, f.hi)
	}
	*f.v = n
	return nil
}

// intRange defines a rangeFlag on fs.
func intRange(fs *pflag.FlagSet, v *int, name string, value, lo, hi int, usage string) {
	*v = value
	fs.Var(&rangeFlag{v: v, lo: lo, hi: hi}, name, fmt.Sprintf("%s (%d..%d)", usage, lo, hi))
}

// kindFlag is --kind: given, and a valid kind name (flow.ValidKind). No job
// can have another ("email " from a variable with a trailing space), so a
// selection by it matched nothing and reported that as done.
type kindFlag struct{ given }

func (f kindFlag) Set(v string) error {
	if v != "" && !flow.ValidKind(v) {
		return fmt.Errorf("no job can be of kind %s: a kind is 1 to 128 letters, digits or _.:/-, starting with a letter or digit", names.Quote(v))
	}
	return f.given.Set(v)
}
