package store

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

// FuzzDecodeWorker: whatever a worker's registry hash holds, decoding
// returns a worker or ErrMalformed, never panics.
func FuzzDecodeWorker(f *testing.F) {
	f.Add("42", "1700000000000", "q:2,r:1", "8", "q:0:a q:1:b")
	f.Add("x", "", "q", "-1", "")
	f.Add("1", "1", "q:x,:,,", "1", " ")
	f.Fuzz(func(t *testing.T, pid, started, queues, conc, jobs string) {
		m := map[string]string{"pid": pid, "started": started, "queues": queues, "conc": conc, "jobs": jobs, "seen": started}
		if _, err := decodeWorker("w", m); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
	})
}

// FuzzDecodeListed: a listing entry decodes or is ErrMalformed.
func FuzzDecodeListed(f *testing.F) {
	f.Add("3", "1700000000000", "id", "archived", "k", "1")
	f.Add("", "x", "", "", "", "y")
	f.Fuzz(func(t *testing.T, after, key, id, state, kind, attempt string) {
		e := []any{after, key, id}
		vals := map[string]string{keys.FieldState: state, keys.FieldKind: kind, keys.FieldAttempt: attempt}
		for _, f := range listFields {
			if v, ok := vals[f]; ok {
				e = append(e, v)
			} else {
				e = append(e, nil)
			}
		}
		le, err := decodeListed(e)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if err == nil && le.Job == nil {
			t.Fatal("nil job without error")
		}
		if _, err := decodeListed(e[:3]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("short entry: %v", err)
		}
	})
}
