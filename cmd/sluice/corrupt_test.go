package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestCorruptEntriesGolden: a queue registry entry that is not a layout,
// schedule records that do not decode or are of another type, and a
// worker record that does not decode are their entries' fault alone.
// queues list, schedules list, workers and queues stats print every
// other entry and exit 1 naming each corrupt one (they printed nothing
// but the error); a command that names a healthy queue goes on as usual
// (it failed too, as it checks the queue against the registry), and one
// that names the corrupt queue says what is wrong with it.
// testdata/corrupt.golden holds what each prints.
func TestCorruptEntriesGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	rdb := f.st.Client()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rdb.HSet(f.ctx, keys.Queues(f.ns), "broken", "garbage").Err())
	tmpl, err := msgpack.Marshal(store.NewJob{Kind: "email", Payload: []byte{0x80}, MaxAttempts: 3})
	must(err)
	for _, n := range []string{"digest", "badfield", "wrongtype"} {
		must(f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: n, Every: time.Hour, Missed: "skip", Grace: time.Minute,
			Queue: "default", Kind: "email", Template: tmpl}))
	}
	ks := keys.Schedules{NS: f.ns}
	must(rdb.HSet(f.ctx, ks.Schedule("badfield"), "every", "soon").Err())
	must(rdb.Del(f.ctx, ks.Schedule("wrongtype")).Err())
	must(rdb.Set(f.ctx, ks.Schedule("wrongtype"), "x", 0).Err())
	for _, id := range []string{"host-1:42:abc", "host-2:7:bad"} {
		must(f.st.Heartbeat(f.ctx, sluicetype.WorkerInfo{ID: id, Host: "host-1", PID: 42, Started: epoch,
			Queues: map[string]int{"default": 1}, Concurrency: 8}, time.Minute))
	}
	must(rdb.HSet(f.ctx, keys.Workers{NS: f.ns}.Worker("host-2:7:bad"), "pid", "not-a-number").Err())

	tr := &transcript{f: f}
	tr.run(exitError, "queues", "list")
	tr.run(exitError, "schedules", "list")
	tr.run(exitError, "workers")
	tr.run(exitError, "queues", "stats", "--window", "10m")
	tr.run(exitOK, "queues", "stats", "default", "--window", "10m")
	tr.run(exitOK, "redrive", "--queue", "default", "--dry-run")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived", "--dry-run")
	tr.run(exitOK, "--partitions", "default=1", "jobs", "list", "--state", "archived")
	tr.run(exitOK, "queues", "pause", "default")
	tr.run(exitError, "queues", "pause", "broken")
	tr.run(exitError, "redrive", "--queue", "broken", "--dry-run")
	tr.run(exitError, "--partitions", "broken=1", "jobs", "list", "--state", "archived")
	golden(t, "corrupt", tr.b.String())

	// --json prints the readable entries as JSON, and the errors on stderr
	out, errs, code := f.sluice("--json", "queues", "list")
	var qs []queueJSON
	if err := json.Unmarshal([]byte(out), &qs); err != nil || code != exitError || len(qs) != 1 || qs[0].Name != "default" || errs == "" {
		t.Errorf("queues list --json: exit %d, %+v (%v), stderr %q; want default, exit 1 naming broken", code, qs, err, errs)
	}
	out, _, code = f.sluice("--json", "schedules", "list")
	var ss []scheduleJSON
	if err := json.Unmarshal([]byte(out), &ss); err != nil || code != exitError || len(ss) != 1 || ss[0].Name != "digest" {
		t.Errorf("schedules list --json: exit %d, %+v (%v); want digest, exit 1", code, ss, err)
	}
}
