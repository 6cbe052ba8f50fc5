package checkpoint

import (
	"bytes"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestEncodeAsMsgpack: Encode writes the bytes msgpack.Marshal writes for
// the same record, at every size boundary of its integers and results, and
// Decode reads them back.
func TestEncodeAsMsgpack(t *testing.T) {
	ints := []int64{0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, math.MaxUint32, math.MaxUint32 + 1,
		math.MaxInt64, -1, -32, -33, math.MinInt8, math.MinInt8 - 1, math.MinInt16, math.MinInt16 - 1,
		math.MinInt32, math.MinInt32 - 1, math.MinInt64, 1764748800000}
	results := [][]byte{nil, {}, {0x80}, bytes.Repeat([]byte{7}, 255), bytes.Repeat([]byte{7}, 256),
		bytes.Repeat([]byte{7}, 65535), bytes.Repeat([]byte{7}, 65536)}
	for _, n := range ints {
		for _, res := range results {
			r := Record{Index: int(n), Result: res, At: n}
			want, err := msgpack.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got := Encode(r)
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode(index and time %d, %d-byte result) = % x, msgpack writes % x", n, len(res), head(got), head(want))
			}
			back, err := Decode(got)
			if err != nil || back.Index != r.Index || back.At != r.At || !bytes.Equal(back.Result, res) {
				t.Fatalf("Decode(Encode(%+v)) = %+v, %v", r, back, err)
			}
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 24)] }
