package store_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// TestAckRefusesMalformedOutcome: an ack call whose outcomes the store
// could not have sent (a hand-made call) fails before anything is
// written, as one naming an unknown code does:
//   - a delay that is no number: before, it raised part-way (the
//     outcomes before it written, the state counters not), and then, once
//     a plain completion's delay was left nil and defaulted to 0, it was
//     taken as no delay, a mistake answered as fine;
//   - a list that ends before its last outcome's fields do (by any
//     number of them, up to the whole outcome): the loop
//     reads a plain completion's missing fields as their defaults, and
//     the cut outcome was taken for one, answered as fine.
func TestAckRefusesMalformedOutcome(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		spoil func([]byte) []byte // the packed arguments as sent
		want  string              // in the error; "": any error
	}{
		// a delay of a minute ("60000", a fixstr) becomes "xxxxx", no
		// number, of the same length
		{"delay", func(v []byte) []byte {
			return bytes.ReplaceAll(v, []byte("\xa560000"), []byte("\xa5xxxxx"))
		}, "malformed delay for job y"},
	}
	// the outcome list (msgpack array 32) shorter by its count, by one
	// entry up to all nine of the last outcome's: whatever it loses, it
	// is refused. Past four, the entries left over after the list no
	// longer read as whole values, and the list's decoding fails first
	// (want "": any error, nothing written)
	for k := uint32(1); k <= 9; k++ {
		want := "malformed outcome for job"
		if k == 1 {
			want += " y" // the last outcome, its lease start gone
		}
		if k > 4 {
			want = ""
		}
		cases = append(cases, struct {
			name  string
			spoil func([]byte) []byte
			want  string
		}{fmt.Sprintf("cut%d", k), func(v []byte) []byte {
			if len(v) >= 5 && v[0] == 0xdd {
				v = bytes.Clone(v)
				binary.BigEndian.PutUint32(v[1:5], binary.BigEndian.Uint32(v[1:5])-k)
			}
			return v
		}, want})
	}
	for _, b := range backends(t) {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"})
				held := f.claimLeases(2, "w")
				b.rdb.AddHook(spoilCalls{lua.Ack, func(args []any) {
					for i, a := range args { // each argument, as bytes
						switch v := a.(type) {
						case []byte:
							args[i] = c.spoil(v)
						case string:
							args[i] = string(c.spoil([]byte(v)))
						}
					}
				}})
				_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
					{Lease: held["x"], Code: store.CodeOK},
					{Lease: held["y"], Code: store.CodeRetry, Delay: time.Minute, Message: "boom", Reason: "error"},
				})
				if err == nil || (c.want != "" && !strings.Contains(err.Error(), c.want)) {
					t.Fatalf("ack: %v, want %q", err, c.want)
				}
				for _, id := range []string{"x", "y"} {
					if j, _ := f.get(id); j.State != "running" || j.Attempt != 0 {
						t.Errorf("%s: %s, attempt %d after a refused call; want running, attempt 0", id, j.State, j.Attempt)
					}
				}
				if s := f.stats(); s["running"] != 2 {
					t.Errorf("state counts %v, want running 2", s)
				}
			})
		}
	}
}
