package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// ErrInjected is the error FailCalls gives the calls it fails.
var ErrInjected = errors.New("injected: connection reset")

// passes gives the hooks here the go-redis hook methods they leave alone:
// dials and pipelines pass untouched.
type passes struct{}

func (passes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (passes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// FailCalls is a go-redis hook (redis.Client.AddHook) that fails the
// calls of Script to partition Part after the first Pass of them, as a
// network that cut the connection past go-redis's retries would: before
// the call reaches Redis, or, with LostReply, after Redis ran it (its
// reply lost on the way back). Calls of other scripts, or to other
// partitions, pass. With Distinct, each failure has an error value of
// its own (wrapping ErrInjected), as separate connection errors do.
type FailCalls struct {
	Script    *lua.Script
	Part      keys.Partition
	Pass      int
	LostReply bool
	Distinct  bool

	passes
	seen atomic.Int64
}

// Calls is how many calls of Script to Part the hook has seen.
func (f *FailCalls) Calls() int64 { return f.seen.Load() }

func (f *FailCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	prefix := f.Part.Prefix()
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args() // FCALL name numkeys key ...
		if len(args) < 4 || !f.Script.Is(cmd.Name(), fmt.Sprint(args[1])) || !strings.HasPrefix(fmt.Sprint(args[3]), prefix) ||
			f.seen.Add(1) <= int64(f.Pass) {
			return next(ctx, cmd)
		}
		if f.LostReply {
			if err := next(ctx, cmd); err != nil {
				return err
			}
		}
		err := ErrInjected
		if f.Distinct {
			err = fmt.Errorf("%w (call %d)", ErrInjected, f.seen.Load())
		}
		cmd.SetErr(err)
		return err
	}
}

// LoseFirstReply is a go-redis hook (redis.Client.AddHook) that lets the
// first call of Script that Redis runs without error go through, then
// fails its reply with ErrInjected, as a network that lost the reply past
// go-redis's retries would: Redis ran the call, the caller never learns
// what it did. Every other call passes. Lost reports whether it has.
type LoseFirstReply struct {
	Script *lua.Script
	Lost   atomic.Bool
	// Meanwhile, if set, runs once the lost call has run in Redis and
	// before its caller learns of the loss: what the world does while the
	// caller waits to send it again.
	Meanwhile func()
	// Resend, if set, sends the lost call again (the same command, as
	// go-redis does on a new connection after a lost reply) once
	// Meanwhile has run, and answers its caller the second run's reply;
	// First and Again are then what the first and second runs answered.
	// Then, if set, runs once the re-sent call has run, before its
	// caller has its reply.
	Resend       bool
	Then         func()
	First, Again string

	passes
}

func (h *LoseFirstReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if h.Lost.Load() || len(args) < 2 || !h.Script.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		if err := next(ctx, cmd); err != nil {
			return err // not run (a function not loaded yet): not this one
		}
		if !h.Lost.CompareAndSwap(false, true) {
			return nil
		}
		if h.Resend {
			h.First = replyOf(cmd)
		}
		if h.Meanwhile != nil {
			h.Meanwhile()
		}
		if h.Resend {
			err := next(ctx, cmd)
			h.Again = replyOf(cmd)
			if h.Then != nil {
				h.Then()
			}
			return err
		}
		cmd.SetErr(ErrInjected)
		return ErrInjected
	}
}

// replyOf is cmd's reply, or its error, as text.
func replyOf(cmd redis.Cmder) string {
	if err := cmd.Err(); err != nil {
		return "error: " + err.Error()
	}
	if c, ok := cmd.(*redis.Cmd); ok {
		return fmt.Sprintf("%#v", c.Val())
	}
	return cmd.String()
}

// FailCommand is a go-redis hook (redis.Client.AddHook) that fails the
// first Fail calls of command Cmd (lower case, "hset") on key Key with
// ErrInjected before they reach Redis, as a network that cut the
// connection past go-redis's retries would; later calls, and calls of
// other commands or keys, pass. Calls counts the calls of Cmd on Key.
type FailCommand struct {
	Cmd  string
	Key  string
	Fail int

	passes
	seen atomic.Int64
}

// Calls is how many calls of Cmd on Key the hook has seen.
func (f *FailCommand) Calls() int64 { return f.seen.Load() }

func (f *FailCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if cmd.Name() != f.Cmd || len(args) < 2 || fmt.Sprint(args[1]) != f.Key || f.seen.Add(1) > int64(f.Fail) {
			return next(ctx, cmd)
		}
		cmd.SetErr(ErrInjected)
		return ErrInjected
	}
}

// FailScript is a go-redis hook (redis.Client.AddHook) that fails the
// first Fail calls of Script whose first key is Key with ErrInjected
// before they reach Redis, as a network that cut the connection past
// go-redis's retries would; later calls, and calls of other scripts or
// keys, pass. Calls counts the calls of Script on Key it failed and those
// Redis ran: not those it refused because the script was not loaded yet
// (FCALL of a library not loaded, EVALSHA of a script not cached, FCALL
// on a server without functions), which lua.Script sends again in
// another form, so that a count does not depend on what the server ran
// before.
type FailScript struct {
	Script *lua.Script
	Key    string
	Fail   int

	passes
	mu     sync.Mutex
	failed int
	seen   int64
}

// Calls is how many calls of Script on Key the hook failed or Redis ran.
func (f *FailScript) Calls() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

func (f *FailScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args() // FCALL name numkeys key ...
		if len(args) < 4 || !f.Script.Is(cmd.Name(), fmt.Sprint(args[1])) || fmt.Sprint(args[3]) != f.Key {
			return next(ctx, cmd)
		}
		f.mu.Lock()
		fail := f.failed < f.Fail
		if fail {
			f.failed++
			f.seen++
		}
		f.mu.Unlock()
		if fail {
			cmd.SetErr(ErrInjected)
			return ErrInjected
		}
		err := next(ctx, cmd)
		if !notLoaded(err) {
			f.mu.Lock()
			f.seen++
			f.mu.Unlock()
		}
		return err
	}
}

// notLoaded reports whether err is Redis refusing a script call because
// it does not have the script (yet), or functions at all.
func notLoaded(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.HasPrefix(s, "NOSCRIPT") || strings.Contains(s, "Function not found") ||
		strings.Contains(strings.ToLower(s), "unknown command")
}
