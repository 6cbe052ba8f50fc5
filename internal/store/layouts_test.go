package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestLayoutsCorruptEntry: a queue whose registry value is not a layout
// is that queue's fault alone. Load keeps every other layout and names
// the corrupt ones in an EntryError each (a worker used to fail to start
// on any corrupt entry of its namespace); Use and Lookup of the corrupt
// queue answer an EntryError naming it, ErrMalformed, and Use writes
// nothing over the value.
func TestLayoutsCorruptEntry(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			ns := redistest.NewNamespace(t)
			st := store.New(b.rdb, store.Config{NS: ns})
			reg := store.NewLayouts(st, map[string]int{"wide": 4})
			for _, q := range []string{"wide", "plain", "broken", "typo"} {
				if _, err := reg.Use(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			must(t, b.rdb.HSet(ctx, keys.Queues(ns), "broken", "garbage", "typo", "4:1:0").Err())

			l := store.NewLayouts(st, nil)
			err := l.Load(ctx)
			if got := entryNames(t, "Load", err); !cmp.Equal(got, []string{"broken", "typo"}) {
				t.Errorf("Load named %v, want [broken typo]", got)
			}
			if d := cmp.Diff(map[string]int{"wide": 4, "plain": 1}, l.Counts()); d != "" {
				t.Errorf("Load kept (-want +got):\n%s", d)
			}
			for _, call := range []struct {
				name string
				f    func(context.Context, string) (store.Layout, error)
			}{{"Use", store.NewLayouts(st, nil).Use}, {"Lookup", store.NewLayouts(st, nil).Lookup}} {
				_, err := call.f(ctx, "broken")
				var ee *store.EntryError
				if !errors.As(err, &ee) || ee.Name != "broken" || !errors.Is(err, store.ErrMalformed) {
					t.Errorf("%s of the corrupt queue: %v, want an EntryError naming it, ErrMalformed", call.name, err)
				}
			}
			if v := b.rdb.HGet(ctx, keys.Queues(ns), "broken").Val(); v != "garbage" {
				t.Errorf("the corrupt entry is %q now, want it left as it was", v)
			}
		})
	}
}
