package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestSignalCounterPastTenDigits: a job's signal counter that a signal
// would take past ten digits (written by hand: 9999999999, which HINCRBY
// takes) is corrupt signal data. The signal is refused with ErrMalformed,
// nothing kept, not answered 'ok' and kept in a field no wait, and no
// discard, reads as a signal (lib_waits.lua signal_name: ten digits).
func TestSignalCounterPastTenDigits(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			f.rdb.HSet(f.ctx, f.p.Job("j"), "sq", "9999999999")
			before := f.rdb.HGetAll(f.ctx, f.p.Steps("j")).Val()
			if r, err := f.st.Signal(f.ctx, f.ref("j"), "go", []byte("x"), ""); !errors.Is(err, store.ErrMalformed) {
				t.Fatalf("signal: %+v, %v; want ErrMalformed", r, err)
			}
			if after := f.rdb.HGetAll(f.ctx, f.p.Steps("j")).Val(); len(after) != len(before) {
				t.Fatalf("its checkpoints hold %v, want %v", after, before)
			}
			if sq := f.rdb.HGet(f.ctx, f.p.Job("j"), "sq").Val(); sq != "9999999999" {
				t.Fatalf("its signal counter is %q, want it as it was", sq)
			}
		})
	}
}
