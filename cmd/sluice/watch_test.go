package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestStatsWatch: queues stats --watch prints a block, then another each
// interval of the (fake) clock: plain blocks when stdout is not a
// terminal, each one clearing the screen first when it is; cancelling
// (Ctrl-C) ends it with exit 0.
func TestStatsWatch(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{false, true} {
		f := newFixture(t)
		f.populate()
		f.stdoutTTY = tty
		ctx, cancel := context.WithCancel(f.ctx)
		var out, errb bytes.Buffer
		done := make(chan int)
		go func() {
			done <- f.runCtx(ctx, &out, &errb, "queues", "stats", "default", "--watch", "--interval", "5s")
		}()
		f.clk.WaitTimers(1) // the first block is out
		f.clk.Advance(5 * time.Second)
		f.clk.WaitTimers(1) // the second
		cancel()
		if code := <-done; code != exitOK || errb.Len() > 0 {
			t.Fatalf("tty %v: exit %d, stderr %q", tty, code, errb.String())
		}
		got := out.String()
		if n := strings.Count(got, "QUEUE  "); n != 2 {
			t.Fatalf("tty %v: %d blocks, want 2:\n%s", tty, n, got)
		}
		if n := strings.Count(got, clearScreen); tty && (n != 2 || !strings.HasPrefix(got, clearScreen)) || !tty && n != 0 {
			t.Fatalf("tty %v: %d screen clears in %q", tty, n, got)
		}
		if !tty {
			golden(t, "queues_stats_watch", got)
		}
	}
}

// TestCompletion: sluice completion writes a script for bash, zsh and
// fish, and the completion it asks for offers commands, the values of
// --state, the live workers' queues and the schedules' names.
func TestCompletion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for shell, mark := range map[string]string{"bash": "complete -o default -F __start_sluice sluice", "zsh": "#compdef sluice",
		"fish": "complete -c sluice"} {
		out, errs, code := f.sluice("completion", shell)
		if code != exitOK || !strings.Contains(out, mark) || errs != "" {
			t.Errorf("completion %s: exit %d, no %q in %d bytes (stderr %q)", shell, code, mark, len(out), errs)
		}
	}
	if out := f.must("__complete", "jo"); !strings.HasPrefix(out, "jobs\t") {
		t.Errorf("completing jo: %q", out)
	}
	if out := f.must("__complete", "jobs", "list", "--state", ""); !strings.Contains(out, "\narchived\n") || !strings.Contains(out, "\nquarantined\n") {
		t.Errorf("completing --state: %q", out)
	}
	w := sluicetype.WorkerInfo{ID: "w1", Host: "h", PID: 1, Started: epoch, Queues: map[string]int{"mail": 2}, Concurrency: 1}
	if err := f.st.Heartbeat(f.ctx, w, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.RegisterLayout(f.ctx, "mail", 2); err != nil {
		t.Fatal(err)
	}
	tmpl, err := msgpack.Marshal(store.NewJob{Kind: "email", Payload: []byte{0x80}, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	def := store.ScheduleDef{Name: "digest", Every: time.Hour, Missed: "skip", Grace: time.Minute, Queue: "default", Kind: "email", Template: tmpl}
	if err := f.st.PublishSchedule(f.ctx, def); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"queues", "pause", ""}, {"jobs", "list", "--queue", ""}, {"redrive", "--queue", "m"}} {
		if out := f.must(append([]string{"__complete"}, args...)...); !strings.HasPrefix(out, "mail\n") {
			t.Errorf("completing %q: %q", args, out)
		}
	}
	if out := f.must("__complete", "schedules", "trigger", ""); !strings.HasPrefix(out, "digest\n") {
		t.Errorf("completing a schedule: %q", out)
	}
}
