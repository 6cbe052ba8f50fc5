package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

var (
	redisEnv redistest.Env
	update   = flag.Bool("update", false, "rewrite the golden files")
)

func TestMain(m *testing.M) { redistest.Main(m, &redisEnv, false) }

type email struct {
	To   string
	Body string
}

func (email) Kind() string { return "email" }

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a namespace with jobs moved through their lifecycle by the
// store, under a fake clock the CLI shares, so output is the same on every
// run.
type fixture struct {
	t   *testing.T
	ctx context.Context
	ns  string
	url string
	clk *runtime.FakeClock
	c   *flow.Client
	st  *store.Store
	// the CLI's stdout and stderr are terminals
	stdoutTTY, stderrTTY bool
	// more environment variables the CLI sees
	env map[string]string
	// connected, when set, sees the Redis client each command connects
	// with (to add a hook)
	connected func(redis.UniversalClient)
}

// exists says whether job id can be read.
func (f *fixture) exists(id string) bool {
	f.t.Helper()
	_, err := f.c.Job(f.ctx, id)
	if err != nil && !errors.Is(err, flow.ErrNotFound) {
		f.t.Fatal(err)
	}
	return err == nil
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rdb := redisEnv.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	clk := runtime.NewFakeClock(epoch)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(rdb, store.Config{NS: ns, RetainCompleted: time.Hour, RetainArchived: time.Hour,
		RetainCancelled: time.Hour, CrashLimit: 3, Now: clk.Now})
	return &fixture{t: t, ctx: context.Background(), ns: ns, url: "redis://" + redisEnv.Server.Addr(), clk: clk, c: c, st: st}
}

func (f *fixture) enqueue(id string, args flow.Args, opts ...flow.EnqueueOption) string {
	f.t.Helper()
	r, err := f.c.Enqueue(f.ctx, args, append(opts, flow.WithID(id))...)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.ID
}

// settle claims the available jobs of the default queue, lets run pass and
// acks each with ack.
func (f *fixture) settle(run time.Duration, ack store.Ack) {
	f.t.Helper()
	p := keys.Partition{NS: f.ns, Queue: "default", Index: 0}
	res, err := f.st.Claim(f.ctx, p, store.ClaimRequest{N: 100, Lease: time.Minute, Worker: "w", Nonce: "n"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.clk.Advance(run)
	for _, j := range res.Jobs {
		a := ack
		a.Lease = store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}
		if _, _, err := f.st.Ack(f.ctx, p, []store.Ack{a}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sluice runs the command line on the fixture's namespace.
func (f *fixture) sluice(args ...string) (stdout, stderr string, code int) {
	f.t.Helper()
	var out, errb bytes.Buffer
	code = f.runCtx(f.ctx, &out, &errb, args...)
	return out.String(), errb.String(), code
}

// runCtx runs the command line under ctx, writing to out and errb.
func (f *fixture) runCtx(ctx context.Context, out, errb io.Writer, args ...string) int {
	vars := map[string]string{"REDIS_URL": f.url, "SLUICE_NAMESPACE": f.ns}
	for k, v := range f.env {
		vars[k] = v
	}
	e := env{stdout: out, stderr: errb, stdoutTTY: f.stdoutTTY, stderrTTY: f.stderrTTY, getenv: func(k string) string { return vars[k] },
		connected: f.connected}
	if f.clk != nil { // none: Redis TIME and the wall clock
		e.clock = f.clk
	}
	return run(ctx, args, e)
}

// must runs a command that must succeed and returns its output.
func (f *fixture) must(args ...string) string {
	f.t.Helper()
	out, errs, code := f.sluice(args...)
	if code != exitOK {
		f.t.Fatalf("sluice %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}

var fail = store.Ack{Code: store.CodeRetry, Reason: "error", Message: "smtp: 550 mailbox unavailable"}

// populate makes two archived jobs, a completed one, an available one and
// a scheduled one, a second apart.
func (f *fixture) populate() {
	f.enqueue("a1", email{To: "ann@example.com", Body: "hi"}, flow.WithMaxAttempts(1))
	f.settle(250*time.Millisecond, fail)
	f.clk.Advance(time.Second)
	f.enqueue("a2", email{To: "bob@example.com"}, flow.WithMaxAttempts(1), flow.WithPriority(3))
	f.settle(1500*time.Millisecond, fail)
	f.clk.Advance(time.Second)
	f.enqueue("c1", email{To: "cy@example.com"})
	f.settle(40*time.Millisecond, store.Ack{Code: store.CodeOK})
	f.clk.Advance(time.Second)
	f.enqueue("v1", email{To: "dee@example.com"})
	f.enqueue("s1", email{To: "eve@example.com"}, flow.WithDelay(time.Hour))
}

func TestUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, args := range [][]string{{}, {"nope"}, {"jobs"}, {"jobs", "list"}, {"jobs", "show"}, {"--bogus", "workers"},
		{"jobs", "list", "--state", "archived", "--limit", "x"}, {"redrive"}, {"redrive", "--queue", "q", "default:0:a"},
		{"--partitions", "q=0", "workers"}, {"redrive", "--queue", "q", "--after", "yesterday"}} {
		if _, errs, code := f.sluice(args...); code != exitUsage {
			t.Errorf("sluice %q: exit %d, want %d (stderr %q)", args, code, exitUsage, errs)
		}
	}
	if out, _, code := f.sluice("--help"); code != exitOK || !strings.Contains(out, "Exit codes:") || !strings.Contains(out, "Available Commands:") {
		t.Errorf("--help: exit %d, output %q", code, out)
	}
	if _, errs, code := f.sluice("--redis", "http://x", "workers"); code != exitUsage {
		t.Errorf("bad URL: exit %d, stderr %q", code, errs)
	}
}

// TestUnreachableRedis: a Redis that does not answer is an error (exit 1)
// naming its URL without the password.
func TestUnreachableRedis(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, errs, code := f.sluice("--redis", "redis://ann:secret@127.0.0.1:1", "workers")
	if code != exitError || !strings.HasPrefix(errs, "sluice: redis redis://ann:***@127.0.0.1:1: ") || strings.Contains(errs, "secret") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// TestUnreachableRedisHidesOptionPasswords: the error for a Redis that
// does not answer names its URL without any password in it, an option's
// (a Sentinel URL's sentinel_password) as well as its user's.
func TestUnreachableRedisHidesOptionPasswords(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, errs, code := f.sluice("--redis", "redis+sentinel://ann:secret@127.0.0.1:1?master_name=m&sentinel_password=s3ntinel&max_retries=-1", "workers")
	if code != exitError || strings.Contains(errs, "secret") || strings.Contains(errs, "s3ntinel") ||
		!strings.Contains(errs, "127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q; want exit %d naming the URL without its passwords", code, errs, exitError)
	}
}
