package isolated

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestFrames: frames round-trip; a bad version, a truncated frame or one
// over the limit is refused.
func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	in := checkpointMsg{Seq: 3, Field: "s1", Record: []byte{1, 2}, Mode: store.ModeOnce, Commit: "c",
		Effects: []sluicetype.Effect{{Op: "INCRBY", Key: "k", Args: []string{"1"}}}}
	if err := writeFrame(&buf, frameCheckpoint, in); err != nil {
		t.Fatal(err)
	}
	raw := append([]byte(nil), buf.Bytes()...)
	typ, body, err := readFrame(&buf, 1<<10, childFrames)
	if err != nil || typ != frameCheckpoint {
		t.Fatalf("readFrame: type %q, %v", typ, err)
	}
	var out checkpointMsg
	if err := decode(body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Seq != in.Seq || out.Field != in.Field || !bytes.Equal(out.Record, in.Record) || len(out.Effects) != 1 || out.Effects[0].Key != "k" {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
	if _, _, err := readFrame(&buf, 1<<10, childFrames); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}

	bad := append([]byte{Version + 1}, raw[1:]...)
	var long *tooLongError
	for name, tc := range map[string]struct {
		b     []byte
		limit int
		want  func(error) bool
	}{
		"version":   {bad, 1 << 10, func(err error) bool { return errors.Is(err, errProtocol) }},
		"header":    {raw[:3], 1 << 10, func(err error) bool { return errors.Is(err, errProtocol) }},
		"body":      {raw[:len(raw)-1], 1 << 10, func(err error) bool { return errors.Is(err, errProtocol) }},
		"too long":  {raw, len(raw) - headerLen - 1, func(err error) bool { return errors.As(err, &long) }},
		"just fits": {raw, len(raw) - headerLen, func(err error) bool { return err == nil }},
		// a type the reader does not take is garbage, whatever length
		// its header names: not over the limit (a child's garbage
		// charged as ErrOutputLimit spent an attempt, not a crash)
		"type": {[]byte{Version, 'Z', 0xff, 0xff, 0xff, 0xff}, 1 << 10, func(err error) bool {
			return errors.Is(err, errProtocol) && !errors.As(err, &long)
		}},
	} {
		if _, _, err := readFrame(bytes.NewReader(tc.b), tc.limit, childFrames); !tc.want(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCaptureExcerpt: a long stderr is kept as its start and its end.
func TestCaptureExcerpt(t *testing.T) {
	c := &capture{limit: 1 << 20, full: make(chan struct{})}
	c.add([]byte("start;"))
	c.add([]byte(strings.Repeat("x", 3*excerptHalf)))
	c.add([]byte(";end"))
	if len(c.head) != excerptHalf || !strings.HasPrefix(string(c.head), "start;") ||
		len(c.rest) != excerptHalf || !strings.HasSuffix(string(c.rest), "x;end") || !c.skipped {
		t.Errorf("head %d bytes, rest %d bytes, skipped %v", len(c.head), len(c.rest), c.skipped)
	}
	select {
	case <-c.full:
		t.Errorf("full signalled under the limit")
	default:
	}
	c.add(make([]byte, 1<<20))
	select {
	case <-c.full:
	default:
		t.Errorf("full not signalled over the limit")
	}
}

// FuzzReadFrame: any input is a frame, an error or the end, never a
// panic, and a frame never exceeds the limit.
func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	_ = writeFrame(&buf, frameReply, replyMsg{Outcome: outcomeOK, Result: []byte("r")})
	f.Add(buf.Bytes())
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			typ, body, err := readFrame(r, 64, childFrames)
			if err != nil {
				return
			}
			if len(body) > 64 {
				t.Fatalf("a body of %d bytes over the limit", len(body))
			}
			var m replyMsg
			if typ == frameReply {
				_ = decode(body, &m)
			}
		}
	})
}
