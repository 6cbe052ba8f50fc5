package store_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestLongValuesKeepCompactHash: payloads and headers longer than Redis's
// listpack value limit come back byte for byte from a claim and a read,
// while the job hash stays in the compact encoding; the same ID with the
// same long payload is a no-op, with another a conflict; replacing a long
// payload by a short one leaves no stale chunk behind.
func TestLongValuesKeepCompactHash(t *testing.T) {
	t.Parallel()
	long := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i/64) // no repeating 64-byte block
		}
		return b
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			cases := map[string][]byte{
				"at-limit": long(64), "just-over": long(65), "kilobyte": long(1000),
				"largest-chunked": long(64 * 96), "stored-whole": long(64*96 + 1),
			}
			for id, p := range cases {
				f.enqueue(store.NewJob{Local: id, Payload: p, Headers: long(len(p) / 2)})
			}
			for _, j := range f.claim(10, "w").Jobs {
				want := cases[j.Local]
				if !bytes.Equal(j.Payload, want) || !bytes.Equal(j.Headers, long(len(want)/2)) {
					t.Errorf("%s: claimed payload %d bytes, headers %d bytes, want %d and %d",
						j.Local, len(j.Payload), len(j.Headers), len(want), len(want)/2)
				}
				if got, _ := f.get(j.Local); !bytes.Equal(got.Payload, want) {
					t.Errorf("%s: read back %d payload bytes, want %d", j.Local, len(got.Payload), len(want))
				}
			}
			if b.name != "miniredis" { // miniredis has no OBJECT ENCODING
				enc, err := f.rdb.ObjectEncoding(f.ctx, f.p.Job("kilobyte")).Result()
				if err != nil || enc != "listpack" {
					t.Errorf("a job with a 1000-byte payload is encoded %q (%v), want listpack", enc, err)
				}
			}

			same := store.NewJob{Local: "kilobyte", Kind: "k", Payload: long(1000), MaxAttempts: 3}
			other := same
			other.Payload = append(long(999), 'x')
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{same, other})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Status != store.Duplicate || res[1].Status != store.Conflicted {
				t.Fatalf("re-enqueue: %+v, want exists then conflict", res)
			}

			uq := store.Unique{Key: "u", OnDuplicate: "replace"}
			f.enqueue(store.NewJob{Local: "u1", Payload: long(500), Unique: uq})
			res, err = f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "u2", Kind: "k", Payload: []byte("short"), MaxAttempts: 3, Unique: uq}})
			if err != nil || res[0].Status != store.Held {
				t.Fatalf("duplicate: %+v, %v", res, err)
			}
			fields, err := f.rdb.HKeys(f.ctx, f.p.Job("u1")).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range fields {
				if strings.HasPrefix(k, "p") && len(k) > 1 && k[1] >= '1' && k[1] <= '9' {
					t.Errorf("stale payload chunk %q after the replace", k)
				}
			}
			if j := f.claimOne("w"); j.Local != "u1" || string(j.Payload) != "short" {
				t.Errorf("claimed %s with payload %q, want u1 with the replacement", j.Local, j.Payload)
			}
		})
	}
}
