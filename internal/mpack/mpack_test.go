package mpack

import (
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type decodeCase struct {
	Name  string
	N     int64
	Tags  []string
	Attrs map[string]any
	Inner *struct{ X float64 }
}

// TestUnmarshalAsMsgpack: the pooled decoder decodes what msgpack.Unmarshal
// does, value for value and error for error, and a decoder that failed
// or decoded one type is clean for the next call.
func TestUnmarshalAsMsgpack(t *testing.T) {
	full, err := msgpack.Marshal(decodeCase{Name: "a", N: -7, Tags: []string{"x", ""}, Attrs: map[string]any{"k": 1, "s": "v"},
		Inner: &struct{ X float64 }{2.5}})
	if err != nil {
		t.Fatal(err)
	}
	small, _ := msgpack.Marshal(decodeCase{Name: "b"})
	for _, in := range [][]byte{full, small, full[:len(full)/2], {0xc1}, nil, small} {
		var got, want decodeCase
		errGot, errWant := Unmarshal(in, &got), msgpack.Unmarshal(in, &want)
		if !reflect.DeepEqual(got, want) || (errGot == nil) != (errWant == nil) {
			t.Fatalf("% x: got %+v, %v; msgpack.Unmarshal %+v, %v", in, got, errGot, want, errWant)
		}
		var m, wantM map[string]string
		errGot, errWant = Unmarshal(in, &m), msgpack.Unmarshal(in, &wantM)
		if !reflect.DeepEqual(m, wantM) || (errGot == nil) != (errWant == nil) {
			t.Fatalf("% x as a map: got %v, %v; msgpack.Unmarshal %v, %v", in, m, errGot, wantM, errWant)
		}
	}
}

// TestMarshalAsMsgpack: the pooled encoder writes what msgpack.Marshal
// does, value for value and error for error (a channel cannot be
// encoded), and an encoder that failed, or grew past what the pool keeps,
// leaves the next call clean.
func TestMarshalAsMsgpack(t *testing.T) {
	big := decodeCase{Name: string(make([]byte, keepMax+1))}
	values := []any{
		// maps of one key: msgpack writes a map in Go's iteration order
		decodeCase{Name: "a", N: -7, Tags: []string{"x", ""}, Attrs: map[string]any{"k": 1}, Inner: &struct{ X float64 }{2.5}},
		struct{}{}, nil, "s", int64(-1) << 40, make(chan int), []byte{1, 2}, big, map[string]string{"h": "v"}, decodeCase{Name: "b"},
	}
	for _, v := range values {
		got, errGot := Marshal(v)
		want, errWant := msgpack.Marshal(v)
		if !reflect.DeepEqual(got, want) || (errGot == nil) != (errWant == nil) {
			t.Fatalf("%T: got % x, %v; msgpack.Marshal % x, %v", v, head(got), errGot, head(want), errWant)
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 32)] }
