package store

import "testing"

// FuzzDecodeRetention: a record read from Redis never panics the decoder,
// and one it accepts is written back as it was read.
func FuzzDecodeRetention(f *testing.F) {
	for _, s := range []string{"86400000:604800000:86400000:1767268800000:host:12:ab", "-1:1:0:0:w", "1:2:3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r, err := DecodeRetention("q", v)
		if err != nil {
			return
		}
		if got := encodeRetention(r); got != v {
			t.Fatalf("%q decodes to %+v, which encodes as %q", v, r, got)
		}
	})
}
