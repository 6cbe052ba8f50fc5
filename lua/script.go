package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Script is one script of this folder. It runs as a Redis function (FCALL
// of a library loaded once per server, function.go) where the server has
// functions, Redis 7 and later, and as EVALSHA (EVAL on NOSCRIPT)
// elsewhere, such as miniredis. Both forms run the same code on the same
// KEYS and ARGV and answer the same.
type Script struct {
	// build returns the EVAL text and the library text (with fnName where
	// its name goes); made is set from them once, at first use.
	build func() (src, lib string)
	once  sync.Once
	made  *made
}

// made is a script's texts, built.
type made struct {
	src string
	sha string // SHA-1 of src, what EVALSHA sends
	// fn names the function and, with an "s" before it, its library: the
	// SHA-1 of the library's text, so that two versions of Sluice sharing
	// a server (a rolling deploy) each call their own.
	fn  string
	lib string
	// The first two elements of a call of each form, boxed once: a string
	// put in an interface costs an allocation per call.
	fcall, evalsha, eval [2]any
}

// m returns the script's texts, building them the first time.
func (s *Script) m() *made {
	s.once.Do(func() {
		src, lib := s.build()
		sum := sha1.Sum([]byte(lib))
		fn := hex.EncodeToString(sum[:])
		sum = sha1.Sum([]byte(src))
		sha := hex.EncodeToString(sum[:])
		s.made = &made{src: src, sha: sha, fn: fn, lib: strings.ReplaceAll(lib, fnName, fn),
			fcall: [2]any{"fcall", fn}, evalsha: [2]any{"evalsha", sha}, eval: [2]any{"eval", src}}
	})
	return s.made
}

// Runner is what runs scripts: a go-redis client, cluster client or
// pipeline.
type Runner interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
	FunctionLoad(ctx context.Context, code string) *redis.StringCmd
}

// Hash is the SHA-1 of the script's EVAL text (what EVALSHA sends).
func (s *Script) Hash() string { return s.m().sha }

// Function is the name of the script's function (what FCALL sends).
func (s *Script) Function() string { return s.m().fn }

// Library is the text FUNCTION LOAD is given.
func (s *Script) Library() string { return s.m().lib }

// Is reports whether a command, by its name and first argument as a
// client sent it (say, seen by a proxy), is a call of this script in
// either form.
func (s *Script) Is(name, first string) bool {
	m := s.m()
	switch strings.ToLower(name) {
	case "fcall":
		return first == m.fn
	case "evalsha":
		return first == m.sha
	case "eval":
		return first == m.src
	}
	return false
}

// Commands are the command names a script call goes out as.
var Commands = []string{"fcall", "evalsha", "eval"}

// evalOnly remembers the runners whose server has no functions
// (miniredis): they get EVALSHA at once, not a refused FCALL first.
var evalOnly sync.Map // Runner -> struct{}

// Run calls the script: FCALL of its function, loading its library first
// when the server does not have it (a new server, a restart without
// persistence, FUNCTION FLUSH), or EVALSHA (EVAL when the server has not
// seen the script) where the server has no functions. A call refused as
// unknown ran nothing, so calling again after loading cannot apply it
// twice.
func (s *Script) Run(ctx context.Context, c Runner, keys []string, args ...any) *redis.Cmd {
	call := make([]any, Head+len(keys), Head+len(keys)+len(args))
	call[2] = len(keys)
	for i, k := range keys {
		call[Head+i] = k
	}
	return s.Call(ctx, c, append(call, args...))
}

// Head is how many elements of a call Call fills in (the command and
// the function or script) or the caller gives (the number of keys) before
// the keys.
const Head = 3

// Call is Run for a call laid out as the command takes it: Head elements,
// of which Call sets the first two and the caller the third (the number
// of keys), then the keys, then the arguments. go-redis sends it as it
// is, with no copy: a caller that builds its calls from keys boxed once
// (internal/store) allocates one slice per call.
func (s *Script) Call(ctx context.Context, c Runner, call []any) *redis.Cmd {
	m := s.m()
	if _, ok := evalOnly.Load(c); !ok {
		copy(call, m.fcall[:])
		cmd := c.Do(ctx, call...)
		err := cmd.Err()
		switch {
		case isNoFunction(err):
			err = s.Load(ctx, c)
			if err == nil {
				again := c.Do(ctx, call...)
				if !isNoFunction(again.Err()) {
					return again
				}
				// Loaded, but not where the key lives: a cluster behind a
				// wrapper that hides its masters. EVAL goes by the key.
				break
			}
			if !isUnknownCommand(err) {
				cmd.SetErr(err)
				return cmd
			}
			evalOnly.Store(c, struct{}{})
		case isUnknownCommand(err):
			evalOnly.Store(c, struct{}{})
		default:
			return cmd
		}
	}
	copy(call, m.evalsha[:])
	cmd := c.Do(ctx, call...)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		copy(call, m.eval[:])
		cmd = c.Do(ctx, call...)
	}
	return cmd
}

// Load loads the script's library where it may run: on every master of a
// cluster, else on the server. (A wrapper that hides a cluster client's
// masters loads it on one node; Run then falls back to EVAL for keys
// elsewhere.) A library loaded already (by another
// process, or another call of this one) is no error.
func (s *Script) Load(ctx context.Context, c Runner) error {
	load := func(ctx context.Context, r Runner) error {
		err := r.FunctionLoad(ctx, s.m().lib).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	}
	if cc, ok := c.(masters); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return load(ctx, n) })
	}
	return load(ctx, c)
}

// masters is a cluster client: a library is loaded on each master.
type masters interface {
	ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
}

func isNoFunction(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Function not found")
}

func isUnknownCommand(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
}
