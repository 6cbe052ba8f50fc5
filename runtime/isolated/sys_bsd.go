//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package isolated

import (
	"os"
	"syscall"
)

// awaitExit returns once the child has exited (here, by reaping it).
func awaitExit(s *session) { s.reap() }

// dupTo makes descriptor newfd a copy of oldfd.
func dupTo(oldfd, newfd int) error { return syscall.Dup2(oldfd, newfd) }

// leadsGroup reports whether the process leads its process group.
func leadsGroup() bool { return syscall.Getpgrp() == os.Getpid() }

// unread cannot tell here (see sys_linux.go).
func unread(*os.File) bool { return false }
