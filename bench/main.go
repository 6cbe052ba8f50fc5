// Command bench measures Sluice on a real Redis; see package
// github.com/sluicehq/sluice/bench/harness for the scenarios and flags
// (go run ./bench -h lists them).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/bench/harness"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := harness.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage *harness.UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
