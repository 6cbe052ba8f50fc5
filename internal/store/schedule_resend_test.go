package store_test

import (
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// TestSchedulePauseResumeResent: a pause whose reply was lost is sent
// again by go-redis, after an operator's resume landed; the re-send
// answers its first run and must not pause the schedule again (nor a
// resume's re-send resume it after a later pause). Before, both ran
// again.
func TestSchedulePauseResumeResent(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			publishMinutely(t, f)
			ks := keys.Schedules{NS: f.st.NS()}
			run := func(op, id string) {
				t.Helper()
				now := strconv.FormatInt(f.clk.Now().UnixMilli(), 10)
				if _, err := lua.Schedule.Run(f.ctx, f.rdb, []string{ks.Schedule("s"), ks.Pending("s")},
					now, ks.Prefix(), op, id).Result(); err != nil {
					t.Fatalf("%s %s: %v", op, id, err)
				}
			}
			paused := func() bool {
				t.Helper()
				ss, err := f.st.Schedules(f.ctx)
				if err != nil || len(ss) != 1 {
					t.Fatalf("schedules: %+v, %v", ss, err)
				}
				return ss[0].Paused
			}
			run("pause", "call-p")
			run("resume", "call-r")
			run("pause", "call-p") // the first pause, sent again
			if paused() {
				t.Fatal("a pause sent again after a resume paused the schedule again")
			}
			f.clk.Advance(time.Minute)
			run("pause", "call-p2")
			run("resume", "call-r") // the first resume, sent again
			if !paused() {
				t.Fatal("a resume sent again after a later pause resumed the schedule")
			}

			// a sync whose abandon delay is no number (no caller of this
			// release sends one) is refused before it writes: a first sync
			// would otherwise set the schedule's start, then raise
			before := f.rdb.HGetAll(f.ctx, ks.Schedule("s")).Val()
			f.rdb.HDel(f.ctx, ks.Schedule("s"), "last")
			delete(before, "last")
			if _, err := lua.Schedule.Run(f.ctx, f.rdb, []string{ks.Schedule("s"), ks.Pending("s")},
				strconv.FormatInt(f.clk.Now().UnixMilli(), 10), ks.Prefix(), "sync", "soon", "call-s").Result(); err == nil {
				t.Fatal("a sync with an abandon delay of 'soon' answered")
			}
			if after := f.rdb.HGetAll(f.ctx, ks.Schedule("s")).Val(); !maps.Equal(before, after) {
				t.Fatalf("a refused sync wrote: before %v, after %v", before, after)
			}
		})
	}
}
