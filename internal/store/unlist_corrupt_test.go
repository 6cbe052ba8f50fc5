package store_test

import (
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDebounceOverCorruptPinList: a debounced duplicate in an enqueue
// batch puts off its available holder, which leaves its list (unlist,
// lib_limits.lua); a pin list that holds no list (corrupt data) holds no
// entry of it, and the batch's other jobs are enqueued and claimable.
// unlist's LREM of that list raised before, after the batch's earlier
// jobs were written with their pushes still deferred: they were
// available on no list, and a re-send answered 'exists' for them.
func TestDebounceOverCorruptPinList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "holder", Unique: store.Unique{Key: "u"}, Sticky: store.Sticky{Worker: "w2", Mode: "w"}})
			f.overwrite(f.p.Pinned("w2"))
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{
				{Local: "a", Kind: "k", Payload: []byte("a"), MaxAttempts: 3},
				{Local: "dup", Kind: "k", Payload: []byte("d"), MaxAttempts: 3, Delay: time.Minute,
					Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}},
				{Local: "c", Kind: "k", Payload: []byte("c"), MaxAttempts: 3},
			})
			if err != nil {
				t.Errorf("enqueue: %v (want the duplicate handled alone; a is %q, list 0 %v)", err, f.rawState("a"), f.availableOrder(0))
			}
			got := f.claimed("n1")
			sort.Strings(got)
			if len(got) != 2 || got[0] != "a" || got[1] != "c" {
				t.Fatalf("claimed %v, want a and c", got)
			}
		})
	}
}
