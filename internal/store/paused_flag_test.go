package store_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestPausedFlagOfAnotherType: a paused flag that holds another type than
// the string pause.lua writes (corrupt data) pauses the partition, as any
// value there does: an enqueue is refused with ErrMalformed naming the
// key (not Redis's bare WRONGTYPE), writing nothing, and a claim takes
// nothing. Resuming the partition deletes the value, and both work again.
func TestPausedFlagOfAnotherType(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			f.rdb.HSet(f.ctx, f.p.Paused(), "by", "hand")
			before := partitionKeys(t, f)
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "b", Kind: "k", Payload: []byte("p"), MaxAttempts: 3}})
			if !errors.Is(err, store.ErrMalformed) || !strings.Contains(err.Error(), f.p.Paused()) {
				t.Fatalf("enqueue with a paused flag of another type: %v, want ErrMalformed naming %s", err, f.p.Paused())
			}
			if after := partitionKeys(t, f); !maps.Equal(before, after) {
				t.Fatalf("the refused enqueue changed the partition:\nbefore %v\nafter  %v", before, after)
			}
			if res := f.claim(5, "w"); len(res.Jobs) != 0 {
				t.Fatalf("a paused partition leased %d jobs", len(res.Jobs))
			}
			if was, err := f.st.SetPaused(f.ctx, f.p, false); err != nil || !was {
				t.Fatalf("resume: was paused %v, %v; want true", was, err)
			}
			f.enqueue(store.NewJob{Local: "b"})
			if res := f.claim(5, "w"); len(res.Jobs) != 2 {
				t.Fatalf("resumed: leased %d jobs, want 2", len(res.Jobs))
			}
		})
	}
}
