package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestChangeCommands: cancel, delete, redrive and release, with their
// exit codes.
func TestChangeCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	check := func(want int, args ...string) string {
		t.Helper()
		out, errs, code := f.sluice(args...)
		if code != want {
			t.Fatalf("sluice %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
		}
		return out + errs
	}
	check(exitNotFound, "jobs", "show", "default:0:nope")
	check(exitError, "jobs", "cancel", "default:0:a1") // finished
	// no worker recorded the queue's retention: kept 24h, and a note says so
	if out := check(exitOK, "jobs", "cancel", "default:0:v1"); !strings.HasPrefix(out, "cancelled default:0:v1\nnote: kept 24h0m0s, the default: "+
		"no worker of queue default has recorded") {
		t.Fatalf("cancel: %q", out)
	}
	cancelled := keys.Partition{NS: f.ns, Queue: "default"}.Terminal("cancelled")
	kept := func(local string) time.Duration {
		t.Helper()
		ms, err := f.st.Client().ZScore(f.ctx, cancelled, local).Result()
		if err != nil {
			t.Fatalf("%s in the cancelled set: %v", local, err)
		}
		return time.UnixMilli(int64(ms)).Sub(f.clk.Now())
	}
	if d := kept("v1"); d != 24*time.Hour {
		t.Fatalf("cancelled job kept %v, want 24h", d)
	}
	f.enqueue("r1", email{To: "roy@example.com"})
	for _, bad := range []string{"-1h", "0"} {
		if out := check(exitUsage, "jobs", "cancel", "default:0:r1", "--retain", bad); !strings.Contains(out, "--retain") {
			t.Fatalf("--retain %s: %q", bad, out)
		}
	}
	// a worker recorded its retention: kept that long, without a note;
	// --retain still wins
	if _, err := f.st.RecordRetention(f.ctx, []string{"default"}, "worker-a", f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	f.enqueue("k1", email{To: "kim@example.com"})
	if out := check(exitOK, "jobs", "cancel", "default:0:k1"); out != "cancelled default:0:k1\n" {
		t.Fatalf("cancel with the workers' retention recorded: %q", out)
	}
	if d := kept("k1"); d != time.Hour {
		t.Fatalf("cancelled with the workers' 1h recorded: kept %v", d)
	}
	check(exitOK, "jobs", "cancel", "default:0:r1", "--retain", "2h")
	if d := kept("r1"); d != 2*time.Hour {
		t.Fatalf("cancelled with --retain 2h: kept %v", d)
	}
	check(exitOK, "jobs", "delete", "default:0:v1")
	check(exitNotFound, "jobs", "delete", "default:0:v1")

	// by ID: a2 moves, a1 after it; an unknown ID alone exits 3, with a
	// job in the wrong state 1
	if out := check(exitNotFound, "redrive", "default:0:a2", "default:0:nope"); !strings.Contains(out, "redrove default:0:a2") {
		t.Fatalf("redrive by ID: %q", out)
	}
	check(exitError, "redrive", "default:0:a2", "default:0:nope")
	var rep redriveJSON
	if err := json.Unmarshal([]byte(check(exitOK, "--json", "redrive", "default:0:a1")), &rep); err != nil || len(rep.Moved) != 1 {
		t.Fatalf("redrive --json: %+v, %v", rep, err)
	}
	check(exitError, "release", "default:0:a1") // available, not quarantined
	// the ID limit counts jobs: one ID listed more often than it is one job
	// (here in the wrong state), not a usage error
	if out := check(exitError, append([]string{"release"}, slices.Repeat([]string{"default:0:a1"}, admin.MaxRedriveIDs+1)...)...); strings.Count(out, "default:0:a1") != 1 {
		t.Fatalf("release of one ID given %d times: %q", admin.MaxRedriveIDs+1, out)
	}

	// by selector: archive both again, count them, move them
	f.settle(0, fail)
	bar := "[==============================] 2/2 examined, 2 matched"
	out := check(exitOK, "redrive", "--queue", "default", "--dry-run", "--batch", "1", "--after", "1s")
	if !strings.Contains(out, `would redrive 2 jobs of queue "default" (2 examined in 3 batches)`) || strings.Contains(out, bar) {
		t.Fatalf("dry run output, stderr no terminal: %q", out)
	}
	f.stderrTTY = true // the bar is drawn on a terminal only, and never with --json
	_, errs, _ := f.sluice("redrive", "--queue", "default", "--dry-run", "--batch", "1")
	if !strings.Contains(errs, bar) {
		t.Fatalf("dry run on a terminal: stderr %q", errs)
	}
	if out, errs, _ := f.sluice("redrive", "--queue", "default", "--dry-run", "--json"); strings.Contains(out+errs, "examined,") {
		t.Fatalf("dry run --json on a terminal drew a bar: stdout %q stderr %q", out, errs)
	}
	f.stderrTTY = false
	var sel selectJSON
	if err := json.Unmarshal([]byte(f.must("redrive", "--queue", "default", "--kind", "email", "--json")), &sel); err != nil || sel.Matched != 2 || sel.DryRun {
		t.Fatalf("redrive selector --json: %+v, %v", sel, err)
	}
	page := f.must("jobs", "list", "--state", "available")
	if strings.Count(page, "default:0:a") != 2 {
		t.Fatalf("redriven jobs not available:\n%s", page)
	}
}

// TestScheduleCommands: list, pause, resume and trigger.
func TestScheduleCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tmpl, err := msgpack.Marshal(store.NewJob{Kind: "email", Payload: []byte{0x80}, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	def := store.ScheduleDef{Name: "digest", Every: time.Hour, Missed: "skip", Grace: time.Minute, Queue: "default", Kind: "email", Template: tmpl}
	if err := f.st.PublishSchedule(f.ctx, def); err != nil {
		t.Fatal(err)
	}
	golden(t, "schedules_list", f.must("schedules", "list"))
	if out := f.must("schedules", "pause", "digest"); out != "paused digest\n" {
		t.Fatalf("pause: %q", out)
	}
	var ss []scheduleJSON
	if err := json.Unmarshal([]byte(f.must("schedules", "list", "--json")), &ss); err != nil || len(ss) != 1 || !ss[0].Paused || ss[0].Every != "1h0m0s" {
		t.Fatalf("schedules list --json: %+v, %v", ss, err)
	}
	// a second pause, and a resume of a running schedule, change
	// nothing, and say so
	if out := f.must("schedules", "pause", "digest"); out != "paused digest (it was paused already)\n" {
		t.Fatalf("second pause: %q", out)
	}
	if out := f.must("schedules", "resume", "digest"); out != "resumed digest\n" {
		t.Fatalf("resume: %q", out)
	}
	if out := f.must("schedules", "resume", "digest", "--json"); !strings.Contains(out, `"unchanged": true`) {
		t.Fatalf("second resume --json: %q", out)
	}
	// no client or worker has registered the schedule's queue: the trigger
	// registers none, and says which queue is missing
	out, errs, code := f.sluice("schedules", "trigger", "digest")
	if code != exitNotFound || out != "" || !strings.Contains(errs, `queue not found: "default"`) || !strings.Contains(errs, `schedule "digest"`) {
		t.Fatalf("trigger before the queue is registered: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if qs, err := f.st.ListLayouts(f.ctx); err != nil || len(qs) != 0 {
		t.Fatalf("the refused trigger registered %+v (%v)", qs, err)
	}
	if _, _, err := f.st.RegisterLayout(f.ctx, "default", 1); err != nil { // as the application's first process does
		t.Fatal(err)
	}
	out = f.must("schedules", "trigger", "digest")
	if !strings.HasPrefix(out, "triggered digest: job default:0:sched:digest:trigger:") {
		t.Fatalf("trigger: %q", out)
	}
	if _, _, code := f.sluice("schedules", "pause", "nope"); code != exitNotFound {
		t.Fatalf("pause unknown: exit %d", code)
	}
}

// TestRerouteCommand: jobs reroute pins an available job to a worker (others
// no longer claim it) and --unpin frees it; bad flags are usage errors and
// an unknown job exits 3.
func TestRerouteCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	p := keys.Partition{NS: f.ns, Queue: "default", Index: 0}
	claimed := func(worker string) []string {
		t.Helper()
		res, err := f.st.Claim(f.ctx, p, store.ClaimRequest{N: 10, Lease: time.Minute, Worker: worker, Nonce: worker})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range res.Jobs {
			ids = append(ids, j.Local)
		}
		return ids
	}
	if out := f.must("jobs", "reroute", "default:0:v1", "--to", "worker-b", "--after", "1h"); out != "rerouted to worker-b default:0:v1\n" {
		t.Fatalf("reroute: %q", out)
	}
	if got := claimed("worker-a"); len(got) != 0 {
		t.Fatalf("worker-a claimed %v after the job was pinned to worker-b", got)
	}
	if out := f.must("--json", "jobs", "show", "default:0:v1"); !strings.Contains(out, `"preferred_worker": "worker-b"`) {
		t.Fatalf("jobs show --json does not name the preferred worker:\n%s", out)
	}
	var rep map[string]string
	if err := json.Unmarshal([]byte(f.must("--json", "jobs", "reroute", "default:0:v1", "--unpin")), &rep); err != nil || rep["result"] != "unpinned" {
		t.Fatalf("unpin --json: %v, %v", rep, err)
	}
	if out := f.must("jobs", "reroute", "default:0:v1", "--unpin"); out != "already unpinned default:0:v1\n" {
		t.Fatalf("unpin of a job not pinned: %q", out)
	}
	if got := claimed("worker-a"); len(got) != 1 || got[0] != "v1" {
		t.Fatalf("worker-a claimed %v after unpinning, want v1", got)
	}
	for _, args := range [][]string{
		{"jobs", "reroute", "default:0:v1"},
		{"jobs", "reroute", "default:0:v1", "--to", "b", "--unpin"},
		{"jobs", "reroute", "default:0:v1", "--to", "b", "--after", "1s", "--fail-after", "1s"},
		{"jobs", "reroute", "--to", "b"},
		// a fallback of 0 is no fallback: not "wait for ever"
		{"jobs", "reroute", "default:0:v1", "--to", "b", "--after", "0s"},
		{"jobs", "reroute", "default:0:v1", "--to", "b", "--fail-after", "0s"},
		{"jobs", "reroute", "default:0:v1", "--to", "b", "--after", "-1s"},
		{"jobs", "reroute", "default:0:v1", "--unpin", "--after", "0s"},
	} {
		if _, errs, code := f.sluice(args...); code != exitUsage {
			t.Errorf("sluice %q: exit %d, want %d (stderr %q)", args, code, exitUsage, errs)
		}
	}
	if _, _, code := f.sluice("jobs", "reroute", "default:0:nope", "--to", "b"); code != exitNotFound {
		t.Errorf("unknown job: exit %d, want %d", code, exitNotFound)
	}
}

// TestPauseScheduleOfCorruptRecord: a schedule whose record does not read
// (a last tick written by hand, "1e300", which the schedulers take for
// none) is still paused and resumed, saying nothing of its state before:
// pausing is what an operator reaches for first on a misbehaving
// schedule. Before, the read the commands make to say whether anything
// changed failed them (found by a review).
func TestPauseScheduleOfCorruptRecord(t *testing.T) {
	f := newFixture(t)
	tmpl, err := msgpack.Marshal(store.NewJob{Kind: "email", Payload: []byte{0x80}, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	def := store.ScheduleDef{Name: "digest", Every: time.Hour, Missed: "skip", Queue: "default", Kind: "email", Template: tmpl}
	if err := f.st.PublishSchedule(f.ctx, def); err != nil {
		t.Fatal(err)
	}
	rdb := redisEnv.Server.Client()
	defer rdb.Close()
	if err := rdb.HSet(f.ctx, keys.Schedules{NS: f.ns}.Schedule("digest"), "last", "1e300").Err(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"pause", "resume"} {
		out, errs, code := f.sluice("schedules", op, "digest")
		if code != exitOK || out != op+"d digest\n" {
			t.Fatalf("%s of a schedule with a corrupt last tick: exit %d, stdout %q, stderr %q", op, code, out, errs)
		}
	}
	if v := rdb.HGet(f.ctx, keys.Schedules{NS: f.ns}.Schedule("digest"), "paused").Val(); v != "0" {
		t.Fatalf("paused field %q after pause and resume, want 0", v)
	}
}
