package store

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

// FuzzDecodeJob: whatever a job hash holds, decoding returns a job or
// ErrMalformed, never panics.
func FuzzDecodeJob(f *testing.F) {
	f.Add(keys.FieldKind, "kind", keys.FieldFence, "3", keys.FieldLeaseStart, "1700000000000")
	f.Add(keys.FieldKind, "", keys.FieldAttempt, "x", keys.FieldCrashAttempt, "-1")
	f.Add(keys.FieldPayload, "\x00\xff", keys.FieldOrphanExpired, "99999999999999999999", keys.FieldTimeout, "1")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		j, err := decodeJob("id", []any{k1, v1, k2, v2, k3, v3})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if err == nil && j == nil {
			t.Fatal("nil job without error")
		}
		if _, err := decodeJob("id", []any{k1, v1, k2}); !errors.Is(err, ErrMalformed) {
			t.Fatalf("odd field list: %v", err)
		}
	})
}

// FuzzDecodeErrorRecord: an error record decodes or is ErrMalformed.
func FuzzDecodeErrorRecord(f *testing.F) {
	f.Add(`{"k":"panic","t":1,"a":0,"c":1,"m":"boom","s":"stack"}`)
	f.Add(`{"k":1}`)
	f.Add("\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := decodeErrorRecord(s); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
	})
}
