package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestUnsignalOfCorruptCreatedIsMalformedAndDiscardsNothing: UnsignalOf
// checks the job's creation time in its own call. A created-time field
// that is no whole number of ms (written by hand: reading the job is
// ErrMalformed) cannot tell which job it is: the discard is ErrMalformed
// naming the job, and the signal is kept. 'nan' passed any range and
// discarded the signal; another value was taken as the job's generated
// ID's time, or answered "another job, created 1970".
func TestUnsignalOfCorruptCreatedIsMalformedAndDiscardsNothing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, bad := range []string{"nan", "soon", "1.5", "1e12"} {
			t.Run(b.name+"/"+bad, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "w"})
				if _, err := f.signal("w", "approve", "p"); err != nil {
					t.Fatal(err)
				}
				f.rdb.HSet(f.ctx, f.p.Job("w"), keys.FieldCreated, bad)
				from := time.UnixMilli(0)
				before := time.UnixMilli(1 << 50)
				seq, _, _, err := f.st.UnsignalOf(f.ctx, f.ref("w"), "approve", 0, from, before)
				var other *sluicetype.OtherJobError
				if !errors.Is(err, store.ErrMalformed) || errors.As(err, &other) {
					t.Errorf("discard of a job whose created field is %q: seq %d, %v; want ErrMalformed", bad, seq, err)
				}
				if n := f.rdb.HLen(f.ctx, f.p.Steps("w")).Val(); n != 1 {
					t.Errorf("the signal's field is gone (%d fields left): the refused discard wrote", n)
				}
			})
		}
	}
}
