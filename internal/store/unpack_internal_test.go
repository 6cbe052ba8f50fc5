package store

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// TestUnpackerInts: every integer form msgpack has, as cmsgpack writes
// them (the smallest that holds the value).
func TestUnpackerInts(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"\x00", 0}, {"\x7f", 127}, {"\xff", -1}, {"\xe0", -32},
		{"\xcc\x80", 128}, {"\xcd\x01\x00", 256}, {"\xce\x00\x01\x00\x00", 65536},
		{"\xcf\x00\x00\x01\x9a\xe1\x4a\x26\x58", 1764716324440},
		{"\xd0\xdf", -33}, {"\xd1\xff\x00", -256}, {"\xd2\xff\xff\xff\xff", -1},
		{"\xd3\xff\xff\xff\xff\xff\xff\xff\xfe", -2},
	}
	for _, c := range cases {
		u := unpacker{s: c.in}
		if got := u.int(); got != c.want || u.err != nil || u.i != len(c.in) {
			t.Errorf("int(% x) = %d, %v, read %d bytes; want %d", c.in, got, u.err, u.i, c.want)
		}
	}
}

// TestUnpackerStrings: each string form, read in place, or copied when
// the unpacker owns its strings; false where a string may be absent.
func TestUnpackerStrings(t *testing.T) {
	long := strings.Repeat("x", 70000)
	in := "\xa3abc" + "\xd9\x02hi" + "\xda\x00\x03xyz" + "\xdb\x00\x01\x11\x70" + long + "\xc2" + "\x93\xa1a\xa1b\xa1c"
	for _, own := range []bool{false, true} {
		u := unpacker{s: in, own: own}
		a, b, c, d := u.str(), u.str(), u.str(), u.str()
		_, present := u.strOrFalse()
		list := u.strs(nil)
		if u.err != nil || a != "abc" || b != "hi" || c != "xyz" || d != long || present ||
			strings.Join(list, ",") != "a,b,c" || u.i != len(in) {
			t.Fatalf("own %v: %q %q %q %d bytes, present %v, %q, %v", own, a, b, c, len(d), present, list, u.err)
		}
		inPlace := unsafe.StringData(a) == unsafe.StringData(in[1:])
		if inPlace == own {
			t.Errorf("own %v: string read in place %v", own, inPlace)
		}
	}
}

// TestUnpackerErrors: a reply cut short, a value of another type or a
// length past the end is ErrMalformed, never a panic, and the first error
// sticks.
func TestUnpackerErrors(t *testing.T) {
	cases := []struct {
		name string
		in   string
		read func(u *unpacker)
	}{
		{"empty", "", func(u *unpacker) { u.str() }},
		{"string cut short", "\xa5ab", func(u *unpacker) { u.str() }},
		{"integer cut short", "\xcf\x00\x01", func(u *unpacker) { u.int() }},
		{"string where an integer is", "\xa1a", func(u *unpacker) { u.int() }},
		{"integer where a string is", "\x01", func(u *unpacker) { u.str() }},
		{"double", "\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00", func(u *unpacker) { u.int() }},
		{"uint64 past int64", "\xcf\xff\xff\xff\xff\xff\xff\xff\xff", func(u *unpacker) { u.int() }},
		{"list longer than the reply", "\xdd\x7f\xff\xff\xff\x01", func(u *unpacker) { u.list() }},
		{"string longer than the reply", "\xdb\x7f\xff\xff\xff", func(u *unpacker) { u.str() }},
		{"map", "\x80", func(u *unpacker) { u.list() }},
	}
	for _, c := range cases {
		u := unpacker{s: c.in}
		c.read(&u)
		first := u.err
		u.str()
		u.int()
		if !errors.Is(first, ErrMalformed) || u.err != first {
			t.Errorf("%s: err %v, then %v; want ErrMalformed, kept", c.name, first, u.err)
		}
	}
}
