package store_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestEveryScriptSafeToReceiveTwice: each script call the tests of
// resend_test.go and its neighbours do not send twice, run on a
// redis-server with its reply lost and the same command sent again (as
// go-redis does on a new connection): the second run answers what the
// first did, and leaves every key of the namespace as the first run left
// it (a lost reply is a fault like a crash; nothing applies twice).
func TestEveryScriptSafeToReceiveTwice(t *testing.T) {
	t.Parallel()
	type tc struct {
		name   string
		script *lua.Script
		setup  func(f *fixture)
		op     func(f *fixture) error
		// answers, when set, says why the caller reads nothing of the
		// answer that differs on a re-send
		answers string
	}
	later := func(f *fixture) *store.Job {
		f.enqueue(store.NewJob{Local: "a"})
		return f.claimOne("w")
	}
	deadEffect := func(f *fixture) string {
		bad := redistest.Elsewhere(f.p.NS, "list", f.p.Tag())
		f.rdb.RPush(f.ctx, bad, "x")
		j := f.runningJob()
		if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s",
			Effects: []sluicetype.Effect{fx("INCRBY", bad, "5")}}); err != nil {
			f.t.Fatal(err)
		}
		return bad
	}
	var running *store.Job
	var synced store.ScheduleSync
	cases := []tc{
		{"renew numbered", lua.Renew, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			_, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(running), Duration: time.Minute, Seq: 1}})
			return err
		}, ""},
		{"progress", lua.Progress, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			_, err := f.st.Progress(f.ctx, f.p, []store.ProgressReport{{Lease: lease(running), Percent: 40, State: "half"}})
			return err
		}, ""},
		{"stuck", lua.Stuck, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			_, err := f.st.Stuck(f.ctx, f.p, lease(running), sluicetype.StuckInfo{Case: "no_progress", Why: "slow"})
			return err
		}, ""},
		{"pause", lua.Pause, nil, func(f *fixture) error { _, err := f.st.SetPaused(f.ctx, f.p, true); return err }, ""},
		{"resume", lua.Pause, func(f *fixture) { f.st.SetPaused(f.ctx, f.p, true) }, func(f *fixture) error {
			_, err := f.st.SetPaused(f.ctx, f.p, false)
			return err
		}, ""},
		{"retire", lua.Pause, nil, func(f *fixture) error { return f.st.Retire(f.ctx, f.p) }, ""},
		{"take back", lua.Pause, func(f *fixture) { f.st.Retire(f.ctx, f.p) }, func(f *fixture) error { return f.st.TakeBack(f.ctx, f.p) }, ""},
		{"bring back", lua.Pause, func(f *fixture) { f.st.Retire(f.ctx, f.p) }, func(f *fixture) error {
			_, err := f.st.BringBack(f.ctx, f.p)
			return err
		}, ""},
		{"deaths take", lua.Deaths, func(f *fixture) {
			f.archive("a")
			f.clk.Advance(time.Minute) // past the grace a death handler of the acking worker has
		}, func(f *fixture) error {
			_, err := f.st.TakeDeaths(f.ctx, f.p, 10, time.Minute)
			return err
		}, ""},
		{"deaths done", lua.Deaths, func(f *fixture) {
			f.archive("a")
			f.clk.Advance(time.Minute)
			d, err := f.st.TakeDeaths(f.ctx, f.p, 10, time.Minute)
			if err != nil || len(d) != 1 {
				f.t.Fatalf("take deaths: %v %v", d, err)
			}
			running = d[0]
		}, func(f *fixture) error {
			return f.st.DoneDeath(f.ctx, f.p, "a", running.Fence, running.Redrives, running.LastLeaseID)
		}, ""},
		{"dead effects bury", lua.DeadEffects, func(f *fixture) { deadEffect(f) }, func(f *fixture) error {
			_, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			return err
		}, ""},
		{"dead effects revive", lua.DeadEffects, func(f *fixture) {
			bad := deadEffect(f)
			if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
				f.t.Fatal(err)
			}
			f.rdb.Del(f.ctx, bad)
		}, func(f *fixture) error {
			d, err := f.st.DeadEffects(f.ctx, f.p, "", 10)
			if err != nil || len(d) != 1 {
				return fmt.Errorf("dead effects %v %v", d, err)
			}
			_, err = f.st.ReviveEffects(f.ctx, f.p, []string{d[0].ID})
			return err
		}, ""},
		{"relay", lua.Relay, func(f *fixture) {
			j := f.runningJob()
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s",
				Effects: []sluicetype.Effect{fx("INCRBY", redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag()), "7")}}); err != nil {
				f.t.Fatal(err)
			}
		}, func(f *fixture) error {
			_, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			return err
		}, "the second run finds the effect's marker: duplicate, which the store takes as applied"},
		{"notify", lua.Notify, func(f *fixture) {
			f.enqueue(store.NewJob{Local: "P"})
			g := *f
			g.p = f.st.Partition("q", 1)
			g.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}})
			g.ack(g.claimOne("w"), store.Ack{Code: store.CodeOK, Data: []byte("r")})
		}, func(f *fixture) error {
			_, err := f.st.RelayOutbox(f.ctx, f.st.Partition("q", 1), "", 10)
			return err
		}, ""},
		{"list", lua.List, func(f *fixture) { f.enqueue(store.NewJob{Local: "a"}) }, func(f *fixture) error {
			_, err := f.st.List(f.ctx, f.p, "available", "", 10, 100, "")
			return err
		}, ""},
		{"live", lua.Live, func(f *fixture) { f.enqueue(store.NewJob{Local: "a"}) }, func(f *fixture) error {
			_, err := f.st.Live(f.ctx, f.p)
			return err
		}, ""},
		{"heartbeat", lua.Heartbeat, nil, func(f *fixture) error {
			return f.st.Heartbeat(f.ctx, sluicetype.WorkerInfo{ID: "w1", Queues: map[string]int{"q": 1}}, time.Minute)
		}, ""},
		{"unregister", lua.Heartbeat, func(f *fixture) {
			f.st.Heartbeat(f.ctx, sluicetype.WorkerInfo{ID: "w1", Queues: map[string]int{"q": 1}}, time.Minute)
		}, func(f *fixture) error { return f.st.Unregister(f.ctx, sluicetype.WorkerInfo{ID: "w1"}) }, ""},
		{"layout register", lua.Layout, nil, func(f *fixture) error {
			_, _, err := f.st.RegisterLayout(f.ctx, "lq", 2)
			return err
		}, "the second run finds its layout (lua/layout.lua); RegisterLayout's one caller reads the layout, not created"},
		{"layout lock", lua.Layout, nil, func(f *fixture) error {
			_, err := f.st.LockResize(f.ctx, "lq", "tok", false)
			return err
		}, ""},
		{"layout unlock", lua.Layout, func(f *fixture) { f.st.LockResize(f.ctx, "lq", "tok", false) }, func(f *fixture) error {
			return f.st.UnlockResize(f.ctx, "lq", "tok")
		}, "the second run finds the lock gone; UnlockResize answers only an error"},
		{"layout resize", lua.Layout, func(f *fixture) {
			f.st.RegisterLayout(f.ctx, "lq", 2)
			f.st.LockResize(f.ctx, "lq", "tok", false)
		}, func(f *fixture) error {
			l, err := f.st.ReadLayout(f.ctx, "lq")
			if err != nil {
				return err
			}
			_, _, err = f.st.ResizeLayout(f.ctx, "lq", l.Version, 4, "tok")
			return err
		}, ""},
		{"retention", lua.Retention, nil, func(f *fixture) error {
			_, err := f.st.RecordRetention(f.ctx, []string{"q"}, "w1", f.clk.Now())
			return err
		}, ""},
		{"maintain promote", lua.Maintain, func(f *fixture) {
			f.enqueue(store.NewJob{Local: "a", Delay: time.Minute})
			f.clk.Advance(time.Hour)
		}, func(f *fixture) error { _, err := f.st.Maintain(f.ctx, f.p, 0, 10, 0); return err }, ""},
		{"maintain sweep", lua.Maintain, func(f *fixture) {
			f.archive("a")
			f.clk.Advance(30 * 24 * time.Hour)
		}, func(f *fixture) error { _, err := f.st.Maintain(f.ctx, f.p, 0, 0, 10); return err }, ""},
		{"redrive step", lua.Redrive, func(f *fixture) { f.archive("a", "b") }, func(f *fixture) error {
			_, err := f.st.RedriveStep(f.ctx, f.p, store.Selector{State: "archived"}, store.ScanCursor{}, 10, false)
			return err
		}, ""},
		{"enqueue unique", lua.Enqueue, nil, func(f *fixture) error {
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "a", Kind: "k", Payload: []byte("x"), MaxAttempts: 3,
				Unique: store.Unique{Key: "u", TTL: time.Hour}}, {Local: "b", Kind: "k", Payload: []byte("x"), MaxAttempts: 3,
				Unique: store.Unique{Key: "u", TTL: time.Hour}}})
			return err
		}, ""},
		{"enqueue limited", lua.Enqueue, nil, func(f *fixture) error {
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "a", Kind: "k", Payload: []byte("x"), MaxAttempts: 3,
				Limits: store.Limits{ConcurrencyLimit: 1, RateJobs: 1, RatePer: time.Minute, RateBurst: 1}}})
			return err
		}, ""},
		{"renew unnumbered", lua.Renew, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			_, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(running), Duration: time.Minute}})
			return err
		}, ""},
		{"heartbeat prunes the dead", lua.Heartbeat, func(f *fixture) {
			f.st.Heartbeat(f.ctx, sluicetype.WorkerInfo{ID: "old", Queues: map[string]int{"q": 1}}, time.Millisecond)
			f.rdb.Del(f.ctx, keys.Workers{NS: f.st.NS()}.Worker("old"))
			f.clk.Advance(time.Hour)
		}, func(f *fixture) error {
			return f.st.Heartbeat(f.ctx, sluicetype.WorkerInfo{ID: "w1", Queues: map[string]int{"q": 1}}, time.Minute)
		}, "the second run finds the dead pruned (0 pruned); Heartbeat answers only an error"},
		{"ack ok", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeOK, Data: []byte("r")}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack retry", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeRetry, Reason: "error", Message: "boom"}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack free", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeFree}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack snooze", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeSnooze, Delay: time.Minute}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack skip", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeSkip, Message: "skip"}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack revoke", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeRevoke, Message: "revoked"}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack deadline", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeDeadline}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack crash", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeCrash, Reason: "crash", Message: "died"}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack expire", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeExpire}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack release", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeRelease}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack park", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodePark, Reason: "parked"}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"ack wait", lua.Ack, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			a := store.Ack{Lease: lease(running), Code: store.CodeWait, Delay: time.Minute, Message: "s", Data: []byte("1"), Reason: "a"}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
			return err
		}, ""},
		{"notify wakes a waiting parent", lua.Notify, func(f *fixture) {
			f.enqueue(store.NewJob{Local: "P"})
			pj := f.claimOne("w")
			g := *f
			g.p = f.st.Partition("q", 1)
			g.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}})
			if r := f.ack(pj, store.Ack{Code: store.CodeWait, Message: "s", Data: []byte("1"), Reason: "a", Delay: time.Hour}); r.State != "scheduled" {
				f.t.Fatalf("wait: %+v", r)
			}
			g.ack(g.claimOne("w"), store.Ack{Code: store.CodeOK, Data: []byte("r")})
		}, func(f *fixture) error {
			_, err := f.st.RelayOutbox(f.ctx, f.st.Partition("q", 1), "", 10)
			if j, _ := f.get("P"); err == nil && j.State != "available" {
				return fmt.Errorf("parent %s, want woken", j.State)
			}
			return err
		}, ""},
		{"enqueue a child", lua.Enqueue, func(f *fixture) { f.enqueue(store.NewJob{Local: "P"}) }, func(f *fixture) error {
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "c", Kind: "k", Payload: []byte("x"), MaxAttempts: 3,
				Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}}})
			return err
		}, ""},
		{"enqueue replacing a unique job", lua.Enqueue, func(f *fixture) {
			f.enqueue(store.NewJob{Local: "a", Unique: store.Unique{Key: "u", OnDuplicate: "replace"}})
		}, func(f *fixture) error {
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "b", Kind: "k", Payload: []byte("y"), MaxAttempts: 3,
				Unique: store.Unique{Key: "u", OnDuplicate: "replace"}}})
			return err
		}, ""},
		{"enqueue held", lua.Enqueue, func(f *fixture) {
			f.enqueue(store.NewJob{Local: "a", Hold: "fp"})
			f.crashOut("a")
		}, func(f *fixture) error {
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "d", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"}})
			return err
		}, ""},
		{"cancel scheduled", lua.Cancel, func(f *fixture) { f.enqueue(store.NewJob{Local: "a", Delay: time.Hour}) }, func(f *fixture) error {
			_, err := f.st.Cancel(f.ctx, f.ref("a"), retainCancelled)
			return err
		}, ""},
		{"cancel as shown", lua.Cancel, func(f *fixture) { f.enqueue(store.NewJob{Local: "a", Delay: time.Hour}) }, func(f *fixture) error {
			c := shownAs(f, "a")
			c.Redrives = new(int64)
			_, err := f.st.CancelOf(f.ctx, f.ref("a"), retainCancelled, c)
			return err
		}, ""},
		{"redrive of a job that ran again since it was shown", lua.Redrive, func(f *fixture) { f.archive("a", "b") }, func(f *fixture) error {
			c := shownAs(f, "a")
			c.Fence = new(int64) // it ran once: fence 1
			errs, err := f.st.RedriveIDsOf(f.ctx, f.p, store.ActionRedrive, []string{"a", "b"}, []store.Created{c, {}})
			if err == nil && (errs[0] == nil || errs[1] != nil) {
				err = fmt.Errorf("a: %v, b: %v; want a refused, b moved", errs[0], errs[1])
			}
			return err
		}, ""},
		{"ack of a child", lua.Ack, func(f *fixture) {
			f.enqueue(store.NewJob{Local: "P"}, store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}})
			f.claimOne("w") // P
			if running = f.claimOne("w"); running.Local != "c" {
				f.t.Fatalf("claimed %s, want the child c", running.Local)
			}
		}, func(f *fixture) error {
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: lease(running), Code: store.CodeOK, Data: []byte("r")}})
			return err
		}, ""},
		{"ack of a child named by its parent's creation time", lua.Ack, func(f *fixture) {
			f.enqueue(store.NewJob{Local: "P"})
			p := f.claimOne("w")
			f.enqueue(store.NewJob{Local: keys.ChildLocal("P", p.Created, "s", 0),
				Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}})
			running = f.claimOne("w")
		}, func(f *fixture) error {
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: lease(running), Code: store.CodeOK, Data: []byte("r")}})
			return err
		}, ""},
		{"step with an effect elsewhere", lua.Step, func(f *fixture) { running = later(f) }, func(f *fixture) error {
			_, err := f.checkpoint(store.Checkpoint{Lease: lease(running), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "a:s",
				Effects: []sluicetype.Effect{fx("INCRBY", redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag()), "7"), fx("INCRBY", f.key("here"), "3")}})
			return err
		}, ""},
		{"schedule sync", lua.Schedule, func(f *fixture) { f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Every: time.Minute}) },
			func(f *fixture) error { _, err := f.st.SyncSchedule(f.ctx, "s", time.Minute); return err }, ""},
		{"schedule claim", lua.Schedule, func(f *fixture) {
			f.st.SyncSchedule(f.ctx, "s", time.Minute)
			f.clk.Advance(2 * time.Minute)
			synced, _ = f.st.SyncSchedule(f.ctx, "s", time.Minute)
		}, func(f *fixture) error {
			_, err := f.st.ClaimTicks(f.ctx, "s", synced.Now, synced.Last, []time.Time{synced.Last.Add(time.Minute)})
			return err
		}, ""},
		{"schedule ack", lua.Schedule, func(f *fixture) {
			f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Every: time.Minute})
			f.st.SyncSchedule(f.ctx, "s", time.Minute)
			f.clk.Advance(2 * time.Minute)
			synced, _ = f.st.SyncSchedule(f.ctx, "s", time.Minute)
			if _, err := f.st.ClaimTicks(f.ctx, "s", synced.Now, synced.Last, []time.Time{synced.Last.Add(time.Minute)}); err != nil {
				f.t.Fatal(err)
			}
		}, func(f *fixture) error {
			return f.st.AckTicks(f.ctx, "s", []time.Time{synced.Last.Add(time.Minute)}, synced.Last.Add(time.Minute))
		}, ""},
		{"schedule pause", lua.Schedule, func(f *fixture) { f.st.SyncSchedule(f.ctx, "s", time.Minute) },
			func(f *fixture) error { return f.st.PauseSchedule(f.ctx, "s") }, ""},
		{"schedule resume", lua.Schedule, func(f *fixture) {
			f.st.SyncSchedule(f.ctx, "s", time.Minute)
			f.st.PauseSchedule(f.ctx, "s")
			f.clk.Advance(time.Minute)
		}, func(f *fixture) error { return f.st.ResumeSchedule(f.ctx, "s") }, ""},
		{"schedule delete", lua.Schedule, func(f *fixture) {
			claimedTick(f.t, f)
			f.clk.Advance(store.ScheduleRunningWithin)
		}, func(f *fixture) error { return f.st.DeleteSchedule(f.ctx, "s", false) }, ""},
		{"schedule delete forced", lua.Schedule, func(f *fixture) { claimedTick(f.t, f) },
			func(f *fixture) error { return f.st.DeleteSchedule(f.ctx, "s", true) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { // one after another: running and synced are shared
			rdb := env.Server.Client()
			t.Cleanup(func() { rdb.Close() })
			f := newFixture(t, backend{"redis", rdb})
			if c.setup != nil {
				c.setup(f)
			}
			var once, twice map[string]string
			hook := &testkit.LoseFirstReply{Script: c.script, Resend: true, Meanwhile: func() { once = nsDump(f) },
				Then: func() { twice = nsDump(f) }}
			rdb.AddHook(hook)
			err := c.op(f)
			if !hook.Lost.Load() {
				t.Fatalf("no call of the script ran (err %v)", err)
			}
			if hook.First != hook.Again && c.answers == "" {
				t.Errorf("the re-sent call answered\n%s\nthe first run\n%s", hook.Again, hook.First)
			}
			for k, v := range twice {
				if once[k] != v {
					t.Errorf("%s after the re-send:\n%s\nafter one run:\n%s", k, v, once[k])
				}
			}
			for k, v := range once {
				if _, ok := twice[k]; !ok {
					t.Errorf("%s gone after the re-send; after one run:\n%s", k, v)
				}
			}
		})
	}
}

// nsDump is every key of f's namespace with its content, as text (not
// its time to live).
func nsDump(f *fixture) map[string]string {
	f.t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	iter := f.rdb.Scan(ctx, 0, "*"+f.st.NS()+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		var v any
		var err error
		switch typ := f.rdb.Type(ctx, k).Val(); typ {
		case "string":
			v, err = f.rdb.Get(ctx, k).Result()
		case "hash":
			var m map[string]string
			m, err = f.rdb.HGetAll(ctx, k).Result()
			ks := make([]string, 0, len(m))
			for field, val := range m {
				ks = append(ks, field+"="+val)
			}
			slices.Sort(ks)
			v = strings.Join(ks, " ")
		case "list":
			v, err = f.rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			var m []string
			m, err = f.rdb.SMembers(ctx, k).Result()
			slices.Sort(m)
			v = m
		case "zset":
			v, err = f.rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "stream":
			v, err = f.rdb.XRange(ctx, k, "-", "+").Result()
		case "none":
			continue
		default:
			v = typ
		}
		if err != nil && err != redis.Nil {
			f.t.Fatalf("%s: %v", k, err)
		}
		out[k] = fmt.Sprintf("%v", v)
	}
	if err := iter.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// shownAs is the Created of job local as it is: its creation time's ms.
func shownAs(f *fixture, local string) store.Created {
	f.t.Helper()
	ms, err := strconv.ParseInt(f.rdb.HGet(f.ctx, f.p.Job(local), keys.FieldCreated).Val(), 10, 64)
	if err != nil {
		f.t.Fatalf("created: %v", err)
	}
	return store.Created{From: time.UnixMilli(ms), Before: time.UnixMilli(ms + 1)}
}
