package store_test

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// TestNewerDataModelRefused: once a newer release has raised a partition's
// data model, every call of this release on it (producing, claiming,
// acking, checkpointing, renewing, an operator's cancel, a listing) fails
// with ErrNewerDataModel, naming the partition, and leaves every key of
// the partition as it was; at this release's own model the same calls
// work.
func TestNewerDataModelRefused(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			j := f.claimOne("w")
			running := lease(j)

			f.rdb.Set(f.ctx, f.p.DataModel(), store.DataModel+1, 0)
			before := partitionKeys(t, f)
			calls := modelCalls(f, running)
			for _, c := range calls {
				if err := c.call(); !errors.Is(err, store.ErrNewerDataModel) || !strings.Contains(err.Error(), f.p.Prefix()) {
					t.Errorf("%s at a newer model: %v, want ErrNewerDataModel naming the partition", c.name, err)
				}
			}
			if after := partitionKeys(t, f); !maps.Equal(before, after) {
				t.Fatalf("calls refused for a newer model changed the partition:\nbefore %v\nafter  %v", before, after)
			}

			f.rdb.Set(f.ctx, f.p.DataModel(), store.DataModel, 0)
			for _, c := range calls {
				if err := c.call(); err != nil {
					t.Errorf("%s at this release's model: %v", c.name, err)
				}
			}
		})
	}
}

// TestDataModelKeyOfAnotherType: a partition whose data model key holds
// another type than a model number (written by hand, not by a release)
// refuses every call with ErrMalformed naming that key, scripts and reads
// alike, and leaves the partition as it was (not Redis's bare WRONGTYPE,
// which names no key); once the key is deleted, the same calls work.
func TestDataModelKeyOfAnotherType(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			running := lease(f.claimOne("w"))
			f.rdb.HSet(f.ctx, f.p.DataModel(), "model", "2")
			before := partitionKeys(t, f)
			calls := append(modelCalls(f, running), modelCall{"get", func() error {
				_, _, err := f.st.Get(f.ctx, keys.Ref{Partition: f.p, Local: "a"})
				return err
			}})
			for _, c := range calls {
				if err := c.call(); !errors.Is(err, store.ErrMalformed) || !strings.Contains(err.Error(), f.p.DataModel()) {
					t.Errorf("%s with a data model key of another type: %v, want ErrMalformed naming %s", c.name, err, f.p.DataModel())
				}
			}
			if after := partitionKeys(t, f); !maps.Equal(before, after) {
				t.Fatalf("calls refused for a malformed data model key changed the partition:\nbefore %v\nafter  %v", before, after)
			}
			f.rdb.Del(f.ctx, f.p.DataModel())
			for _, c := range calls {
				if err := c.call(); err != nil {
					t.Errorf("%s once the key is deleted: %v", c.name, err)
				}
			}
		})
	}
}

// modelCall is a call of the store on a partition, by name.
type modelCall struct {
	name string
	call func() error
}

// modelCalls are the store's calls on f's partition that read its data
// model first (running is a lease held there), in an order that works at
// this release's model: the ack last.
func modelCalls(f *fixture, running store.Lease) []modelCall {
	return []modelCall{
		{"enqueue", func() error {
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "c", Kind: "k"}})
			return err
		}},
		{"claim", func() error {
			_, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "n2", PromoteLimit: 100})
			return err
		}},
		{"checkpoint", func() error {
			_, err := f.checkpoint(store.Checkpoint{Lease: running, Field: "s", Record: []byte("r"), Mode: store.ModeOnce})
			return err
		}},
		{"renew", func() error {
			_, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: running, Duration: time.Minute}})
			return err
		}},
		{"cancel", func() error {
			_, err := f.st.Cancel(f.ctx, keys.Ref{Partition: f.p, Local: "b"}, retainCancelled)
			return err
		}},
		{"list", func() error {
			_, err := f.st.List(f.ctx, f.p, "available", "", 10, 100, "")
			return err
		}},
		{"ack", func() error {
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: running, Code: store.CodeOK}})
			return err
		}},
	}
}

// partitionKeys reads every key of f's partition, by name, as text: its
// type and contents (all of a partition's keys share one slot, so one
// node of a cluster holds them).
func partitionKeys(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	var c redis.Cmdable = f.rdb
	if cc, ok := f.rdb.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(f.ctx, f.p.Stats())
		if err != nil {
			t.Fatal(err)
		}
		c = node
	}
	names, err := c.Keys(f.ctx, f.p.Prefix()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range names {
		typ := c.Type(f.ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = c.Get(f.ctx, k).Val()
		case "hash":
			v = c.HGetAll(f.ctx, k).Val()
		case "list":
			v = c.LRange(f.ctx, k, 0, -1).Val()
		case "zset":
			v = c.ZRangeWithScores(f.ctx, k, 0, -1).Val()
		case "set":
			v = c.SMembers(f.ctx, k).Val()
		case "stream":
			v = c.XRange(f.ctx, k, "-", "+").Val()
		}
		out[k] = typ + " " + fmt.Sprint(v)
	}
	return out
}

// TestDataModelAgreesWithLua: the scripts accept the model Go says they
// know, and name it in their refusal.
func TestDataModelAgreesWithLua(t *testing.T) {
	src, m := lua.Prelude(), strconv.Itoa(store.DataModel)
	if !strings.Contains(src, "if not m or m == '"+m+"' then return nil end") || !strings.Contains(src, "know model "+m+" only") {
		t.Fatalf("lua/lib.lua model_error does not accept model %s", m)
	}
}
