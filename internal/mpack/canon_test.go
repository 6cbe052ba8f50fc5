package mpack

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

type plainArgs struct {
	To    string
	N     int
	Tags  []string
	Inner struct{ A, B int }
}

type mapArgs struct {
	Labels map[string]string
	Counts map[string]int
	ByID   map[int][]string
	Nested map[string]map[string]float64
	Any    any
	When   time.Time
	Blob   []byte
	Deep   []map[uint8]bool
}

func labels(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = fmt.Sprint(i)
	}
	return m
}

func newMapArgs() mapArgs {
	a := mapArgs{Labels: labels(20), Counts: map[string]int{}, ByID: map[int][]string{}, Nested: map[string]map[string]float64{},
		Any: map[string]any{"x": 1, "y": []any{map[string]any{"b": 2, "a": 1}}, "z": "w"}, When: time.Unix(1700000000, 5).UTC(),
		Blob: bytes.Repeat([]byte{7}, 300)}
	for i := range 20 {
		a.Counts[fmt.Sprint("c", i)] = i * 1000
		a.ByID[i*70000] = []string{fmt.Sprint(i)}
		a.Nested[fmt.Sprint("n", i)] = map[string]float64{"p": float64(i) / 3, "q": 1e300}
		a.Deep = append(a.Deep, map[uint8]bool{1: true, 2: false, 200: true})
	}
	return a
}

// TestCanonicalEqualValuesEqualBytes: values that are equal encode to the
// same bytes however Go iterates their maps, of any key and value type,
// nested, behind an interface, beside times and binaries; and the bytes
// decode back to the value.
func TestCanonicalEqualValuesEqualBytes(t *testing.T) {
	first, err := Canonical(newMapArgs())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		b, err := Canonical(newMapArgs())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, first) {
			t.Fatalf("encoding %d of an equal value differs", i)
		}
	}
	var back mapArgs
	if err := msgpack.Unmarshal(first, &back); err != nil {
		t.Fatal(err)
	}
	// an interface decodes small integers as int8, which encode with a
	// type byte: that field is compared by its text
	if fmt.Sprint(back.Any) != fmt.Sprint(newMapArgs().Any) {
		t.Errorf("decoded Any %v", back.Any)
	}
	back.Any = newMapArgs().Any
	if again, err := Canonical(back); err != nil || !bytes.Equal(again, first) {
		t.Errorf("the value decoded does not encode to the same bytes (%v)", err)
	}
	if want := newMapArgs(); !reflect.DeepEqual(back.Labels, want.Labels) || !reflect.DeepEqual(back.ByID, want.ByID) ||
		!reflect.DeepEqual(back.Deep, want.Deep) || !back.When.Equal(want.When) {
		t.Errorf("decoded %+v\nwant %+v", back, want)
	}
	// the same bytes whichever order msgpack wrote the entries in
	for range 10 {
		raw, _ := msgpack.Marshal(newMapArgs())
		c, rest, err := canon(nil, raw)
		if err != nil || len(rest) != 0 || !bytes.Equal(c, first) {
			t.Fatalf("canon of a Marshal: %v, %d left, equal %v", err, len(rest), bytes.Equal(c, first))
		}
	}
}

// TestCanonicalPlainIsMarshal: a type that can hold no map encodes as
// Marshal does, byte for byte (jobs enqueued before canonical encoding
// keep matching their repeats), and is not walked.
func TestCanonicalPlainIsMarshal(t *testing.T) {
	v := plainArgs{To: "a", N: -5, Tags: []string{"x"}}
	want, _ := msgpack.Marshal(v)
	got, err := Canonical(v)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%x %v, want %x", got, err, want)
	}
	if mayHoldMap(reflect.TypeOf(v)) {
		t.Error("plainArgs may hold a map, says mayHoldMap")
	}
	// a value whose maps hold one entry or none, or whose interface holds
	// no map, had stable bytes before Canonical: they stay those bytes
	type withMaps struct {
		Name  string
		ID    int
		Meta  map[string]string
		One   map[int]string
		Note  any
		inner map[string]int
		Skip  map[string]int `msgpack:"-"`
	}
	for _, v := range []withMaps{
		{Name: "a@b", ID: 7, Note: "hi"},
		{Name: "a@b", Meta: map[string]string{}, One: map[int]string{3: "x"}, Note: []any{1, "two"}},
		{Name: "a@b", inner: map[string]int{"a": 1, "b": 2}, Skip: map[string]int{"a": 1, "b": 2}},
	} {
		want, _ := msgpack.Marshal(v)
		if got, err := Canonical(v); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%+v: %x %v, want Marshal's %x", v, got, err, want)
		}
	}
	for _, v := range []any{mapArgs{}, map[string]int{}, []any{}, &struct{ M map[int]int }{}} {
		if !mayHoldMap(reflect.TypeOf(v)) {
			t.Errorf("%T may hold a map, yet mayHoldMap says no", v)
		}
	}
	type list struct {
		Next *list
		V    int
	}
	if mayHoldMap(reflect.TypeOf(list{})) {
		t.Error("a recursive type without maps may hold one, says mayHoldMap")
	}
}

// TestCanonBadInput: bytes that end inside a value are an error, not a
// panic or a short read.
func TestCanonBadInput(t *testing.T) {
	full, _ := msgpack.Marshal(newMapArgs())
	for n := range len(full) {
		if _, rest, err := canon(nil, full[:n]); err == nil && len(rest) == 0 && n > 0 {
			t.Fatalf("a prefix of %d of %d bytes read as a whole value", n, len(full))
		}
	}
}
