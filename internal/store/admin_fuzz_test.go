package store

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

// FuzzDecodeWorker: whatever a worker's registry hash holds, decoding
// returns a worker or ErrMalformed, never panics.
func FuzzDecodeWorker(f *testing.F) {
	f.Add("42", "1700000000000", "q:2,r:1", "q:3,r:1", "8", "q:0:a q:1:b")
	f.Add("x", "", "q", "q", "-1", "")
	f.Add("1", "1", "q:x,:,,", "q:x,:,,", "1", " ")
	f.Fuzz(func(t *testing.T, pid, started, queues, versions, conc, jobs string) {
		m := map[string]string{"pid": pid, "started": started, "queues": queues, "qv": versions, "conc": conc, "jobs": jobs, "seen": started}
		if _, err := decodeWorker("w", m); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
	})
}

// TestDecodeWorkerVersions: the layout versions a heartbeat registers
// are read back; a record of a release that wrote none has none (a
// caller then compares partition counts only), and one that does not
// parse is ErrMalformed.
func TestDecodeWorkerVersions(t *testing.T) {
	base := map[string]string{"pid": "1", "started": "1", "seen": "1", "conc": "1", "queues": "q:2,r:1"}
	with := func(qv string) map[string]string {
		m := map[string]string{"qv": qv}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	w, err := decodeWorker("w", with("q:3,r:1"))
	if err != nil || w.QueueVersions["q"] != 3 || w.QueueVersions["r"] != 1 || len(w.QueueVersions) != 2 {
		t.Fatalf("versions: %v, %v", w.QueueVersions, err)
	}
	if w, err := decodeWorker("w", base); err != nil || w.QueueVersions != nil {
		t.Fatalf("an older release's record: %v, %v; want no versions", w.QueueVersions, err)
	}
	if w, err := decodeWorker("w", with("")); err != nil || w.QueueVersions == nil || len(w.QueueVersions) != 0 {
		t.Fatalf("a worker serving no queue: %#v, %v; want an empty map", w.QueueVersions, err)
	}
	if _, err := decodeWorker("w", with("q:x")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a version that is not a number: %v", err)
	}
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
