package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/lua"
)

// TestDiscardSeqRefusesAJobThatTookTheID: `jobs signal ID NAME --discard
// --seq N` names signal #N of the job `jobs show` showed, but a job given
// its ID since (the first deleted) numbers its signals from 1 again: --seq
// without --created, which names the job shown, is a usage error (exit
// 2), --created of the job gone refuses (exit 1) and the new job keeps
// its signal #1; --created of the job there (as `jobs show` prints it, or
// as --json does) discards it. A signal sent with --created is checked
// alike: the job gone is sent nothing.
func TestDiscardSeqRefusesAJobThatTookTheID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const id = "default:0:w1"
	f.suspended("w1", "approved")
	f.must("jobs", "signal", id, "later", "--data", `"old"`)
	shown := f.must("jobs", "show", id)
	if !strings.Contains(shown, "later #1 kept") {
		t.Fatalf("jobs show: %q, want signal later #1 listed", shown)
	}
	oldCreated := f.created(id)
	// the job the operator saw goes, and a new one takes its ID, with a
	// signal later #1 of its own
	f.must("jobs", "cancel", id)
	f.must("jobs", "delete", id)
	f.clk.Advance(time.Minute)
	f.enqueue("w1", email{To: "wf@example.com"}) // a signal to a job not yet at its wait is kept too
	f.must("jobs", "signal", id, "later", "--data", `"new"`)

	if _, errOut, code := f.sluice("jobs", "signal", id, "later", "--discard", "--seq", "1"); code != exitUsage || !strings.Contains(errOut, "--created") {
		t.Errorf("discard --seq 1 without --created: exit %d, %q; want %d asking for --created", code, errOut, exitUsage)
	}
	if _, errOut, code := f.sluice("jobs", "signal", id, "later", "--discard", "--seq", "1", "--created", oldCreated); code != exitError ||
		!strings.Contains(errOut, "another job") {
		t.Errorf("discard --seq 1 --created of the job gone: exit %d, %q; want %d saying it is another job", code, errOut, exitError)
	}
	if j, err := f.c.Job(f.ctx, id); err != nil || len(j.Signals) != 1 || j.Signals[0].Seq != 1 {
		t.Fatalf("the new job after the refused discards: %+v %v, want its signal later #1 kept", j, err)
	}
	for _, bad := range []string{"yesterday", ""} {
		if _, _, code := f.sluice("jobs", "signal", id, "later", "--discard", "--seq", "1", "--created", bad); code != exitUsage {
			t.Errorf("--created %q: exit %d, want %d", bad, code, exitUsage)
		}
	}
	// a signal sent with --created names the job too: the job gone is
	// sent nothing (exit 1), the job there is sent it
	if _, errOut, code := f.sluice("jobs", "signal", id, "later", "--data", `"x"`, "--created", oldCreated); code != exitError ||
		!strings.Contains(errOut, "another job") || !strings.Contains(errOut, "nothing sent") {
		t.Errorf("signal --created of the job gone: exit %d, %q; want %d saying it is another job", code, errOut, exitError)
	}
	if j, err := f.c.Job(f.ctx, id); err != nil || len(j.Signals) != 1 {
		t.Fatalf("the new job after the refused signal: %+v %v, want its one signal kept alone", j, err)
	}
	if out, errOut, code := f.sluice("jobs", "signal", id, "later", "--data", `"x"`, "--created", f.created(id)); code != exitOK ||
		!strings.Contains(out, "sent signal later") {
		t.Errorf("signal --created of the job there: exit %d, %q%q", code, out, errOut)
	}
	// the time as --json prints it names the job too
	j, err := f.c.Job(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rfc := j.Created.UTC().Format(time.RFC3339Nano)
	if out, errOut, code := f.sluice("jobs", "signal", id, "later", "--discard", "--seq", "1", "--created", rfc); code != exitOK ||
		out != "discarded signal later #1 of default:0:w1: \"new\"\n" {
		t.Fatalf("discard --seq 1 --created of the job there: exit %d, %q%q", code, out, errOut)
	}
}

// created is job id's creation time as `jobs show` prints it.
func (f *fixture) created(id string) string {
	f.t.Helper()
	for _, l := range strings.Split(f.must("jobs", "show", id), "\n") {
		if v, ok := strings.CutPrefix(l, "Created:"); ok {
			return strings.TrimSpace(v)
		}
	}
	f.t.Fatalf("jobs show %s prints no Created line", id)
	return ""
}

// beforeUnsignal is a go-redis hook that runs fn once, just before the
// first unsignal.lua call reaches Redis: another operator's action in
// the middle of a discard.
type beforeUnsignal struct {
	fired atomic.Bool
	fn    func()
}

func (*beforeUnsignal) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*beforeUnsignal) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *beforeUnsignal) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && lua.Unsignal.Is(cmd.Name(), fmt.Sprint(args[1])) && h.fired.CompareAndSwap(false, true) {
			h.fn()
		}
		return next(ctx, cmd)
	}
}

// TestDiscardCreatedChecksTheJobInTheSameCall: `jobs signal --discard
// --seq N --created T` discards nothing of a job given the ID between
// the command's look at the job and its discard. The creation time was
// checked by a read of the job before the discard, a second call: a
// job deleted and created again in between lost its own signal #1.
func TestDiscardCreatedChecksTheJobInTheSameCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const id = "default:0:w1"
	f.suspended("w1", "approved")
	f.must("jobs", "signal", id, "later", "--data", `"old"`)
	oldCreated := f.created(id)
	h := &beforeUnsignal{fn: func() {
		// the job the operator saw goes, and a new one takes its ID,
		// with a signal later #1 of its own
		f.must("jobs", "cancel", id)
		f.must("jobs", "delete", id)
		f.clk.Advance(time.Minute)
		f.enqueue("w1", email{To: "wf@example.com"})
		f.must("jobs", "signal", id, "later", "--data", `"new"`)
	}}
	f.connected = func(rdb redis.UniversalClient) { rdb.AddHook(h) }
	_, errOut, code := f.sluice("jobs", "signal", id, "later", "--discard", "--seq", "1", "--created", oldCreated)
	f.connected = nil
	if !h.fired.Load() {
		t.Fatal("the discard made no unsignal call")
	}
	if code != exitError || !strings.Contains(errOut, "another job") {
		t.Errorf("discard --seq 1 --created of the job gone by the time of the discard: exit %d, %q; want %d saying it is another job", code, errOut, exitError)
	}
	if j, err := f.c.Job(f.ctx, id); err != nil || len(j.Signals) != 1 || j.Signals[0].Seq != 1 {
		t.Fatalf("the new job after the refused discard: %+v %v, want its signal later #1 kept", j, err)
	}
}
