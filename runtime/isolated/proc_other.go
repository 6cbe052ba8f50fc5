//go:build !unix

package isolated

import (
	"os"
	"syscall"
)

// procAttr: without process groups, only the child itself is killed.
func procAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the child.
func killGroup(p *os.Process) { _ = p.Kill() }

// killOwnGroup: without process groups there is nothing to do.
func killOwnGroup() {}

// survivePipes: there is no SIGPIPE to survive.
func survivePipes() {}

// protocolOut returns the child's stdout for its frames and points
// os.Stdout at stderr, so that prints of Go code cannot corrupt them.
func protocolOut() *os.File {
	out := os.Stdout
	os.Stdout = os.Stderr
	return out
}
