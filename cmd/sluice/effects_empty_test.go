package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// TestEffectsRedriveOfEntryWithNoEffect: a dead-lettered entry that holds
// no effect to relay (a parent's notification) is listed by `effects
// list`; `effects redrive` of it says why it is refused and exits 1. It
// said the entry it had just listed was not found (exit 3) before.
func TestEffectsRedriveOfEntryWithNoEffect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, _, err := f.st.RegisterLayout(f.ctx, "default", 1); err != nil {
		t.Fatal(err)
	}
	p := keys.Partition{NS: f.ns, Queue: "default", Index: 0}
	sid, err := f.st.Client().XAdd(f.ctx, &redis.XAddArgs{Stream: p.DeadOutbox(),
		Values: []any{"id", "1-1", "o", "1-1", "job", "", "error", "parent notice failed"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	id := "default:0:" + sid
	if list := f.must("effects", "list", "--queue", "default"); !strings.Contains(list, id) {
		t.Fatalf("effects list does not list %s:\n%s", id, list)
	}
	out, errs, code := f.sluice("effects", "redrive", id)
	if code != exitError || strings.Contains(errs, "not found") || !strings.Contains(errs, id+": the dead-lettered entry holds no effect to relay") {
		t.Fatalf("effects redrive %s (listed, holds no effect): exit %d, stdout %q, stderr %q; want exit 1 with the reason",
			id, code, out, errs)
	}
}
