package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpEveryCommand: every command (and group) has a description and
// --help; its help shows the usage line that a usage error of the command
// prints, so the two agree; `sluice help X` prints the same.
func TestHelpEveryCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var walk func(cmd *cobra.Command)
	n := 0
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if !sub.IsAvailableCommand() && sub.Name() != "help" {
				continue
			}
			path := strings.Fields(sub.CommandPath())[1:]
			n++
			if sub.Short == "" {
				t.Errorf("%v: no description", path)
			}
			help := f.must(append([]string{"help"}, path...)...)
			sub.InitDefaultHelpFlag() // as executing it does
			use := usageLine(sub)
			if !strings.Contains(help, "Usage:\n  "+use+"\n") || !strings.Contains(help, sub.Short) && !strings.Contains(help, sub.Long) {
				t.Errorf("sluice help %v does not show %q:\n%s", path, use, help)
			}
			if sub.HasAvailableSubCommands() { // a group run bare is a usage error with the same line
				_, stderr, code := f.sluice(path...)
				if code != exitUsage || !strings.Contains(stderr, "Usage: "+use+"\n") {
					t.Errorf("sluice %v: exit %d, %q; want exit 2 with the usage line %q", path, code, stderr, use)
				}
			}
			if !sub.DisableFlagParsing { // bench -h is the benchmark's
				if got := f.must(append(path, "--help")...); got != help {
					t.Errorf("sluice %v --help differs from sluice help %v", path, path)
				}
			}
			walk(sub)
		}
	}
	walk((&cli{env: env{stdout: &strings.Builder{}, stderr: &strings.Builder{}}}).root())
	if n < 25 {
		t.Fatalf("walked %d commands", n)
	}
}
