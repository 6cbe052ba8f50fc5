package msgview_test

import (
	"encoding/json"
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
