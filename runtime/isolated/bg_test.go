package isolated_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/sluicehq/sluice/flow"
)

// bgArgs: a job whose handler starts a grandchild (a sleeper), writes its
// pid to stderr as "grandchild <pid>", and returns at once.
type bgArgs struct{}

func (bgArgs) Kind() string { return "bg" }

// bgRegistry is the registry of a bgArg child (orphan_linux_test.go).
func bgRegistry() *flow.Registry {
	reg := flow.NewRegistry()
	must(flow.Register(reg, func(context.Context, *flow.Job[bgArgs]) error {
		gc := exec.Command(os.Args[0], sleeperArg)
		if err := gc.Start(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "grandchild %d\n", gc.Process.Pid)
		return nil
	}))
	return reg
}
