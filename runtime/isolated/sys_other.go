//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package isolated

import (
	"errors"
	"os"
)

// awaitExit returns once the child has exited (here, by reaping it).
func awaitExit(s *session) { s.reap() }

// dupTo is not available here: protocolOut falls back to os.Stdout.
func dupTo(oldfd, newfd int) error { return errors.ErrUnsupported }

// leadsGroup cannot tell here: a child does not kill its group.
func leadsGroup() bool { return false }

// unread cannot tell here (see sys_linux.go).
func unread(*os.File) bool { return false }
