package isolated

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/sluicehq/sluice/runtime"
)

// kindHandlers serves every kind with one handler.
type kindHandlers struct{ h runtime.Handler }

func (k kindHandlers) Handler(string) (runtime.Handler, bool) { return k.h, true }

// TestServeGarbledFromParent: a child whose parent sends what is not an
// answer (another frame type, a body that does not decode, a frame of
// another version) gives up with a protocol error that says so, not
// with ErrParentGone (after which Main kills its group silently); a
// stream that ends, even inside a frame, is the parent's going away.
func TestServeGarbledFromParent(t *testing.T) {
	var start bytes.Buffer
	if err := writeFrame(&start, frameStart, startMsg{NS: "t", ID: "q:0:abc", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	frame := func(typ byte, msg any) []byte {
		var b bytes.Buffer
		if err := writeFrame(&b, typ, msg); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	answer := frame(frameAnswer, answerMsg{Seq: 1})
	badVersion := append([]byte{Version + 1}, answer[1:]...)
	badBody := append([]byte{Version, frameAnswer, 0, 0, 0, 1}, 0xc1) // 0xc1: never valid msgpack
	for name, tc := range map[string]struct {
		after    []byte
		garbled  bool
		contains string
	}{
		"start again": {after: frame(frameStart, startMsg{}), garbled: true, contains: `unexpected frame type 'S'`},
		"bad body":    {after: badBody, garbled: true},
		"bad version": {after: badVersion, garbled: true, contains: "frame version 2"},
		"end":         {},
		"truncated":   {after: answer[:len(answer)-1]},
	} {
		in := io.MultiReader(bytes.NewReader(start.Bytes()), bytes.NewReader(tc.after))
		h := runtime.HandlerFunc(func(ctx context.Context, _ *runtime.Attempt) ([]byte, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
		var out bytes.Buffer
		_, err := serve(context.Background(), kindHandlers{h}, in, &out)
		switch {
		case !tc.garbled && !errors.Is(err, ErrParentGone):
			t.Errorf("%s: %v, want ErrParentGone", name, err)
		case tc.garbled && (errors.Is(err, ErrParentGone) || !errors.Is(err, errProtocol) || !bytes.Contains([]byte(err.Error()), []byte(tc.contains))):
			t.Errorf("%s: %v, want a protocol error with %q", name, err, tc.contains)
		}
		if out.Len() != 0 {
			t.Errorf("%s: the child wrote %q", name, out.Bytes())
		}
	}
}
