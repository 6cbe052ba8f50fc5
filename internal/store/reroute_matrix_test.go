package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// count j's entries on every list that may hold it.
func (f *fixture) listEntries(local string) map[string]int {
	out := map[string]int{}
	for name, k := range map[string]string{"shared": f.p.Available(0), "pinW": f.p.Pinned("W"), "pinX": f.p.Pinned("X"),
		"cw": f.p.ConcurrencyWait("k"), "rw": f.p.RateWait("slow")} {
		es, _ := f.rdb.LRange(f.ctx, k, 0, -1).Result()
		for _, e := range es {
			if e == local {
				out[name]++
			}
		}
	}
	return out
}

// TestRerouteMatrix: from {unpinned, pinned not handed, pinned handed,
// waiting on a key (unpinned / pinned), waiting on a class (pinned)} x to
// {unpin, same worker, other worker}: after the reroute j is listed once
// on the right list, and once let go, its worker's claims lease it once.
func TestRerouteMatrix(t *testing.T) {
	froms := []string{"unpinned", "pinned", "handed", "keywait", "keywait-pinned", "ratewait-pinned"}
	tos := []struct {
		name string
		s    store.Sticky
		list string
		by   string
	}{
		{"unpin", store.Sticky{}, "shared", "any"},
		{"same", store.Sticky{Worker: "W", Mode: "a", After: time.Hour}, "pinW", "W"},
		{"other", store.Sticky{Worker: "X", Mode: "a", After: time.Hour}, "pinX", "X"},
	}
	for _, b := range backends(t) {
		for _, from := range froms {
			for _, to := range tos {
				t.Run(b.name+"/"+from+"/"+to.name, func(t *testing.T) {
					f := newFixture(t, b)
					lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
					rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
					var holder string
					j := store.NewJob{Local: "j"}
					switch from {
					case "unpinned":
					case "pinned":
						j.Sticky = store.Sticky{Worker: "W", Mode: "a", After: time.Hour}
					case "handed":
						j.Sticky = store.Sticky{Worker: "W", Mode: "a", After: time.Second}
						f.enqueue(store.NewJob{Local: "hi", Priority: 9})
					case "keywait", "keywait-pinned":
						f.enqueue(store.NewJob{Local: "h", Limits: lim})
						holder = "h"
						j.Limits = lim
						if from == "keywait-pinned" {
							j.Sticky = store.Sticky{Worker: "W", Mode: "a", After: time.Hour}
						}
					case "ratewait-pinned":
						f.enqueue(store.NewJob{Local: "h", Limits: rl})
						j.Limits = rl
						j.Sticky = store.Sticky{Worker: "W", Mode: "a", After: time.Hour}
					}
					var held *store.Job
					if holder != "" || from == "ratewait-pinned" {
						held = f.claimOne("w")
					}
					f.enqueue(j)
					switch from {
					case "handed":
						f.clk.Advance(2 * time.Second)
						if c := f.claimOne("w"); c.Local != "hi" {
							t.Fatalf("claimed %s", c.Local)
						}
					case "keywait":
						f.claim(10, "w")
					case "keywait-pinned", "ratewait-pinned":
						f.claim(10, "W")
					}
					before := f.listEntries("j")
					if _, err := f.st.Reroute(f.ctx, f.ref("j"), to.s); err != nil {
						t.Fatal(err)
					}
					after := f.listEntries("j")
					want := to.list
					if from == "keywait" || from == "keywait-pinned" {
						want = "cw"
					} else if from == "ratewait-pinned" {
						want = "rw"
					}
					total := 0
					for _, n := range after {
						total += n
					}
					if after[want] != 1 || total != 1 {
						t.Errorf("before %v, after %v: want j once, on %s", before, after, want)
					}
					// let it go, then claims lease it once
					if held != nil {
						if r := f.ack(held, store.Ack{Code: store.CodeOK}); r.Err != nil {
							t.Fatal(r.Err)
						}
					}
					if from == "ratewait-pinned" {
						f.clk.Advance(time.Hour)
					}
					leased := 0
					for i := 0; i < 3; i++ {
						for _, w := range []string{"other", "W", "X"} {
							for _, c := range f.claim(10, w).Jobs {
								if c.Local == "j" {
									leased++
									if to.by != "any" && w != to.by {
										t.Errorf("j leased by %s, routed to %s", w, to.by)
									}
								}
							}
						}
					}
					if leased != 1 {
						t.Errorf("j leased %d times (entries after the reroute %v, now %v)", leased, after, f.listEntries("j"))
					}
				})
			}
		}
	}
}

// TestRerouteResentPinPaths: a re-sent reroute (lost reply, duplicate)
// on the paths that take a shared-list entry out: unpinned -> pinned, and
// pinned handed -> unpinned.
func TestRerouteResentPinPaths(t *testing.T) {
	for _, kind := range []chaos.FaultKind{chaos.DropReply, chaos.Duplicate} {
		for _, c := range []struct {
			name string
			j    store.NewJob
			to   store.Sticky
			hand bool
			list func(p keys.Partition) string
		}{
			{"pin", store.NewJob{Local: "j"}, store.Sticky{Worker: "c", Mode: "w"}, false, func(p keys.Partition) string { return p.Pinned("c") }},
			{"unpin-handed", store.NewJob{Local: "j", Sticky: store.Sticky{Worker: "b", Mode: "a", After: time.Second}}, store.Sticky{}, true,
				func(p keys.Partition) string { return p.Available(0) }},
		} {
			t.Run(fmt.Sprint(kind, "/", c.name), func(t *testing.T) {
				l := newLossy(t)
				if err := lua.Reroute.Load(context.Background(), l.rdb); err != nil {
					t.Fatal(err)
				}
				l.enqueue(c.j)
				if c.hand {
					l.enqueue(store.NewJob{Local: "hi", Priority: 9})
					l.clk.Advance(2 * time.Second)
					if got := l.claimOne("w"); got.Local != "hi" {
						t.Fatalf("claimed %s", got.Local)
					}
				}
				check := l.fault(kind)
				state, err := l.st.Reroute(l.ctx, keys.Ref{Partition: l.p, Local: "j"}, c.to)
				check()
				if err != nil || state != "available" {
					t.Fatalf("reroute: %q %v", state, err)
				}
				all := map[string][]string{}
				for _, k := range []string{l.p.Available(0), l.p.Pinned("b"), l.p.Pinned("c")} {
					all[k], _ = l.rdb.LRange(l.ctx, k, 0, -1).Result()
				}
				n := 0
				for _, es := range all {
					n += len(es)
				}
				if len(all[c.list(l.p)]) != 1 || n != 1 {
					t.Fatalf("lists after the re-sent reroute: %v; want j once on %s", all, c.list(l.p))
				}
			})
		}
	}
}
