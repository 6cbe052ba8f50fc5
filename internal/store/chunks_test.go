package store_test

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestLongValuesKeepCompactHash: payloads and headers longer than Redis's
// listpack value limit come back byte for byte from a claim and a read,
// while the job hash stays in the compact encoding; a payload over bodyMin
// bytes is a key of its own instead of chunks; the same ID with the same
// long payload is a no-op, with another a conflict; replacing a payload
// leaves no stale chunk or key behind, whichever way it is stored.
func TestLongValuesKeepCompactHash(t *testing.T) {
	const bodyMin = 832 // lua/lib_chunks.lua BODY_MIN
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
				"at-limit": long(64), "just-over": long(65), "largest-chunked": long(bodyMin),
				"kilobyte": long(1000), "headers-whole": long(2*64*96 + 2),
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
				if own := exists(t, f, f.p.Body(j.Local)) == 1; own != (len(want) > bodyMin) {
					t.Errorf("%s: %d-byte payload in a key of its own: %v", j.Local, len(want), own)
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

			// Replaced: chunks by a key of its own, that by chunks, then by
			// a short payload.
			uq := store.Unique{Key: "u", OnDuplicate: "replace"}
			f.enqueue(store.NewJob{Local: "u1", Payload: long(500), Unique: uq})
			for i, p := range [][]byte{long(3000), long(700), []byte("short")} {
				res, err = f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: fmt.Sprint("u", i+2), Kind: "k", Payload: p, MaxAttempts: 3, Unique: uq}})
				if err != nil || res[0].Status != store.Held {
					t.Fatalf("duplicate: %+v, %v", res, err)
				}
				if got, _ := f.get("u1"); !bytes.Equal(got.Payload, p) {
					t.Fatalf("after replacing by %d bytes, read back %d", len(p), len(got.Payload))
				}
				fields, err := f.rdb.HKeys(f.ctx, f.p.Job("u1")).Result()
				if err != nil {
					t.Fatal(err)
				}
				var got, want []string // the payload's fields
				for _, k := range fields {
					if k == keys.FieldPayload || k == keys.FieldPayloadBody || isPayloadChunk(k) {
						got = append(got, k)
					}
				}
				if len(p) > bodyMin {
					want = []string{keys.FieldPayloadBody}
				} else {
					want = []string{keys.FieldPayload}
					for i := 1; i < (len(p)+63)/64; i++ {
						want = append(want, fmt.Sprint(i))
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("after replacing by %d bytes: payload fields %v, want %v", len(p), got, want)
				}
				if own := exists(t, f, f.p.Body("u1")) == 1; own != (len(p) > bodyMin) {
					t.Errorf("after replacing by %d bytes: payload in a key of its own: %v", len(p), own)
				}
			}
			if j := f.claimOne("w"); j.Local != "u1" || string(j.Payload) != "short" {
				t.Errorf("claimed %s with payload %q, want u1 with the replacement", j.Local, j.Payload)
			}
		})
	}
}

// TestMissingPayloadKey: a job whose payload key is gone is archived as
// malformed at claim rather than run, and stays readable, with no payload.
func TestMissingPayloadKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Payload: make([]byte, 2000)})
			if err := f.rdb.Del(f.ctx, f.p.Body("j")).Err(); err != nil {
				t.Fatal(err)
			}
			res := f.claim(1, "w")
			if len(res.Jobs) != 0 || len(res.Parked) != 1 || res.Parked[0].Reason != "malformed" {
				t.Fatalf("claim: %d jobs, archived %+v; want j archived as malformed", len(res.Jobs), res.Parked)
			}
			if got, _ := f.get("j"); got.State != "archived" || got.Payload != nil {
				t.Errorf("read back: %s with %d payload bytes, want archived with none", got.State, len(got.Payload))
			}
		})
	}
}

// isPayloadChunk says whether field names a payload chunk after the first:
// "1", "2", ..., or "p1", "p2", ... as written before numbers.
func isPayloadChunk(field string) bool {
	field = strings.TrimPrefix(field, keys.FieldPayload)
	_, err := strconv.Atoi(field)
	return err == nil && field[0] != '0'
}

// TestChunkNamesBeforeNumbers: a payload written in chunks named "p1",
// "p2", ... (before numbered chunks) reads back whole, from a claim, a
// read and a duplicate's comparison, and a replacement leaves none of
// those chunks behind.
func TestChunkNamesBeforeNumbers(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 10) // 160 bytes: 3 chunks
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			for _, id := range []string{"a", "b"} {
				f.enqueue(store.NewJob{Local: id, Payload: payload, Unique: store.Unique{Key: id, OnDuplicate: "replace"}})
				jk := f.p.Job(id)
				if err := f.rdb.HDel(f.ctx, jk, "1", "2").Err(); err != nil {
					t.Fatal(err)
				}
				if err := f.rdb.HSet(f.ctx, jk, "p1", payload[64:128], "p2", payload[128:]).Err(); err != nil {
					t.Fatal(err)
				}
				if got, _ := f.get(id); !bytes.Equal(got.Payload, payload) {
					t.Fatalf("%s read back as %q", id, got.Payload)
				}
			}
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "a", Kind: "k", Payload: payload, MaxAttempts: 3}})
			if err != nil || res[0].Status != store.Duplicate {
				t.Fatalf("the same job again: %+v, %v; want a duplicate", res, err)
			}
			uq := store.Unique{Key: "b", OnDuplicate: "replace"}
			res, err = f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "b2", Kind: "k", Payload: []byte("short"), MaxAttempts: 3, Unique: uq}})
			if err != nil || res[0].Status != store.Held {
				t.Fatalf("replacing b: %+v, %v", res, err)
			}
			if fields, _ := f.rdb.HKeys(f.ctx, f.p.Job("b")).Result(); slices.ContainsFunc(fields, isPayloadChunk) {
				t.Errorf("b keeps chunk fields after its payload was replaced: %v", fields)
			}
			if j := f.claimOne("w"); j.Local != "a" || !bytes.Equal(j.Payload, payload) {
				t.Errorf("claimed %s with payload %q, want a with its whole payload", j.Local, j.Payload)
			}
		})
	}
}
