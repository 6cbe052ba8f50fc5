package msgview_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/msgview"
)

// TestDecode: maps with non-string keys, nested in slices and maps, and
// bytes come out as JSON can print them; what is not msgpack is an error.
func TestDecode(t *testing.T) {
	b, err := msgpack.Marshal(map[string]any{"a": []any{map[int]string{1: "x"}, []byte("raw")}, "n": 3})
	if err != nil {
		t.Fatal(err)
	}
	v, err := msgview.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"a":[{"1":"x"},"raw"],"n":3}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := msgview.Decode([]byte{0xc1}); err == nil {
		t.Fatal("0xc1 (never used in msgpack) decoded")
	}
}

// TestDecodeDepth: a value nested up to MaxDepth levels decodes; one
// nested deeper (a megabyte of one-element arrays is a million levels,
// within the payload bound) is ErrTooDeep, refused before the recursive
// decoder overflows the stack, which kills the process. Every kind of
// container header counts, and the scalars of every size between them
// are stepped over, not taken for headers.
func TestDecodeDepth(t *testing.T) {
	nested := func(depth int, open, leaf []byte) []byte {
		b := bytes.Repeat(open, depth)
		return append(b, leaf...)
	}
	for _, tc := range []struct {
		name string
		open []byte // one level
	}{
		{"fixarray", []byte{0x91}},
		{"array16", []byte{0xdc, 0, 1}},
		{"array32", []byte{0xdd, 0, 0, 0, 1}},
		{"fixmap", []byte{0x81, 0xa1, 'k'}},
		{"map16 with a float key", []byte{0xde, 0, 1, 0xcb, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"map32 with a str8 key", []byte{0xdf, 0, 0, 0, 1, 0xd9, 2, 0x91, 0x91}},
		{"array of a timestamp ext and the next level", []byte{0x92, 0xd6, 0xff, 0x91, 0x91, 0x91, 0x91}},
		{"array of a bin16 and the next level", []byte{0x92, 0xc5, 0, 3, 0x91, 0x91, 0x91}},
	} {
		if _, err := msgview.Decode(nested(msgview.MaxDepth, tc.open, []byte{0xc0})); err != nil {
			t.Errorf("%s, %d levels: %v", tc.name, msgview.MaxDepth, err)
		}
		if _, err := msgview.Decode(nested(msgview.MaxDepth+1, tc.open, []byte{0xc0})); !errors.Is(err, msgview.ErrTooDeep) {
			t.Errorf("%s, %d levels: %v, want ErrTooDeep", tc.name, msgview.MaxDepth+1, err)
		}
	}
	deep := nested(1<<20-16, []byte{0x91}, []byte{0xc0})
	if _, err := msgview.Decode(deep); !errors.Is(err, msgview.ErrTooDeep) {
		t.Fatalf("a megabyte of nested arrays: %v, want ErrTooDeep", err)
	}
	// wide, not deep: many siblings at one level are no deeper
	wide, err := msgpack.Marshal([]any{[]any{1, 2}, []any{3, []any{4}}, map[string]any{"a": []any{}}, "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := msgview.Decode(append([]byte{0x91}, wide...)); err != nil {
		t.Errorf("a shallow value: %v", err)
	}
	// truncated: the decoder's error, not a depth one
	if _, err := msgview.Decode([]byte{0x92, 0x91}); err == nil || errors.Is(err, msgview.ErrTooDeep) {
		t.Errorf("a truncated value: %v, want the decoder's error", err)
	}
}
