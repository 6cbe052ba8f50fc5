package isolated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/runtime"
)

// Command is the program a handler runs for each attempt. It is fixed when
// the handler is made: nothing of a job (its payload, its ID) ever becomes
// part of the command line or the environment, and no shell is involved.
type Command struct {
	// Path is the program. A name without a slash is looked up in PATH
	// once, by Handler.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Dir is the working directory; "" means the worker's.
	Dir string
	// Env is the child's environment ("KEY=value"). By default it is all
	// of it: the child does not inherit the worker's environment (see
	// Options.InheritEnv).
	Env []string
}

// Options configure an isolated handler. The zero value of every field
// means its documented default.
type Options struct {
	// InheritEnv gives the child the worker's environment, followed by
	// Command.Env. Default false: the child sees only Command.Env.
	InheritEnv bool
	// MaxStdout bounds the bytes one attempt's child may write on stdout
	// (its protocol frames: step checkpoints, then its reply and result).
	// Past it the child is killed and the attempt fails with
	// ErrOutputLimit. Default 16 MiB.
	MaxStdout int
	// MaxStderr bounds the child's stderr in one attempt, likewise, but a
	// child past it is given ExitGrace to exit first: one that is dying
	// (a Go runtime's dump of every goroutine can pass a megabyte) exits
	// without a reply, and is the crash it is, as is one whose reply
	// reports a panic or a crash. Default 1 MiB.
	MaxStderr int
	// Stderr, when set, receives a copy of the child's stderr (up to
	// MaxStderr). The children of concurrent attempts write to it
	// concurrently. Default: only an excerpt (its first and last 2 KiB) is
	// kept, for the error recorded when the child crashes.
	Stderr io.Writer
	// ExitGrace is how long the child may take to exit after its reply, or
	// after closing its stdout, before its process group is killed; and
	// how long its stdout may stay open (held by a process it started)
	// once it exited, before it counts as a crash. Default 1s.
	ExitGrace time.Duration
}

// Errors of this package; match them with errors.Is.
var (
	// ErrOutputLimit: the child wrote more than MaxStdout or MaxStderr.
	// The attempt fails like a returned error.
	ErrOutputLimit = errors.New("isolated: child output over its limit")
	// ErrParentGone: Serve's parent closed the child's stdin before the
	// attempt's reply.
	ErrParentGone = errors.New("isolated: the parent worker went away")
	// ErrLeaseExpired: Serve's attempt's lease ran out by the child's
	// clock, its parent worker silent since (stopped or hung): the job may
	// go to another attempt, and nothing of this one should go on.
	ErrLeaseExpired = errors.New("isolated: the attempt's lease ran out with the parent worker silent")
	// ErrStart: the child process of an attempt could not be started (its
	// program was removed or is not executable since Handler found it,
	// its interpreter is missing, or the system is out of processes or
	// descriptors). The attempt fails like a returned error.
	ErrStart = errors.New("isolated: the child process could not be started")
)

// ChildError is an ordinary error a child's handler returned. It spends
// an attempt; the job is retried with backoff. Cause, when set, is the
// error of a call the worker made for the child (a step's commit, a
// strict step's lease check) that failed on Redis, and that the child's
// error quotes (the handler returned the step's error, wrapped or not):
// the worker's runtime.Options.NonConsuming sees it (errors.Is and
// errors.As reach it), as it would the same failure in the worker's own
// process. A handler error that quotes none has no Cause.
type ChildError struct {
	Message string
	Cause   error

	// the delay before the retry that the kind's retry policy in the
	// child chose (the reply's retry_ms), when retrySet
	retry    time.Duration
	retrySet bool
}

func (e *ChildError) Error() string { return e.Message }

// Unwrap returns Cause.
func (e *ChildError) Unwrap() error { return e.Cause }

// Handler returns a runtime.Handler that runs each attempt in a new child
// process started from cmd: the attempt goes to the child's stdin and its
// outcome comes back on its stdout (see the package documentation). It
// fails when cmd.Path is empty or cannot be found.
func Handler(cmd Command, opts Options) (runtime.Handler, error) {
	if cmd.Path == "" {
		return nil, errors.New("isolated: Command.Path is empty")
	}
	path, err := exec.LookPath(cmd.Path)
	if err != nil {
		return nil, fmt.Errorf("isolated: %w", err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("isolated: %w", err)
	}
	if opts.MaxStdout < 0 || opts.MaxStderr < 0 || opts.ExitGrace < 0 {
		return nil, errors.New("isolated: negative Options")
	}
	if opts.MaxStdout == 0 {
		opts.MaxStdout = 16 << 20
	}
	if opts.MaxStderr == 0 {
		opts.MaxStderr = 1 << 20
	}
	if opts.ExitGrace == 0 {
		opts.ExitGrace = time.Second
	}
	env := []string{} // not nil: exec gives a nil Env the worker's environment
	if opts.InheritEnv {
		env = append(env, os.Environ()...)
	}
	cmd.Path, cmd.Args, cmd.Env = path, append([]string(nil), cmd.Args...), append(env, cmd.Env...)
	return &handler{cmd: cmd, opts: opts}, nil
}

type handler struct {
	cmd  Command
	opts Options
}

// Contained is true: an attempt that crashes ends its child process, not
// the worker's, so a job with a crash on record need not run apart from
// other such jobs (runtime.Contained).
func (h *handler) Contained() bool { return true }

// RetryDelay is the delay the kind's retry policy in the child
// (flow.WithRetryPolicy) chose for the retry after err, a *ChildError of
// the child's reply: the same policy as the handler's in a worker. -1
// (the worker's Options.Backoff) when the child's handler has none, when
// the policy left it to Backoff, and for what the child was not asked
// about: a timeout (the child is killed), completion effects that failed.
func (h *handler) RetryDelay(_ int, err error) time.Duration {
	var ce *ChildError
	if errors.As(err, &ce) && ce.retrySet {
		return ce.retry
	}
	return -1
}

// Work runs one attempt in a child process.
func (h *handler) Work(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
	st, ok := attempt.From(ctx)
	if !ok {
		return nil, errors.New("isolated: Work called outside a running attempt")
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	s, err := h.start(a, st)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrStart, h.cmd.Path, err)
	}
	return s.run(ctx)
}

// Handlers is a runtime.Handlers that runs the kinds in Kinds with their
// (isolated) handlers and hands every other kind to Next, typically the
// *flow.Registry of the worker's in-process handlers.
type Handlers struct {
	Kinds map[string]runtime.Handler
	Next  runtime.Handlers // may be nil
}

// Handler returns the handler of kind.
func (h Handlers) Handler(kind string) (runtime.Handler, bool) {
	if hd, ok := h.Kinds[kind]; ok {
		return hd, true
	}
	if h.Next == nil {
		return nil, false
	}
	return h.Next.Handler(kind)
}
