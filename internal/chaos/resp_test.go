package chaos

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readers returns the ways the parser tests read in: at once, and a byte
// per read through the smallest buffer bufio allows, so every frame is
// split across reads and long lines overflow the buffer.
func readers(in string) map[string]*bufio.Reader {
	return map[string]*bufio.Reader{
		"whole":      bufio.NewReader(strings.NewReader(in)),
		"bytewise16": bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(in)), 16),
	}
}

// TestRespReply: every RESP2 and RESP3 reply type is read whole, bytes
// verbatim, and no further, whatever the reads; attributes count with the
// value they annotate, and the type reported is that value's.
func TestRespReply(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		kind     byte
	}{
		{"simple", "+OK\r\n", '+'},
		{"empty simple", "+\r\n", '+'},
		{"long simple", "+" + strings.Repeat("x", 100) + "\r\n", '+'},
		{"error", "-ERR unknown command\r\n", '-'},
		{"integer", ":-42\r\n", ':'},
		{"null", "_\r\n", '_'},
		{"double", ",3.14\r\n", ','},
		{"boolean", "#t\r\n", '#'},
		{"big number", "(3492890328409238509324850943850943825024385\r\n", '('},
		{"bulk", "$5\r\nhello\r\n", '$'},
		{"bulk with CRLF inside", "$6\r\n\r\n*1\r\n\r\n", '$'},
		{"empty bulk", "$0\r\n\r\n", '$'},
		{"null bulk", "$-1\r\n", '$'},
		{"long bulk", "$40\r\n" + strings.Repeat("y", 40) + "\r\n", '$'},
		{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", '!'},
		{"verbatim", "=15\r\ntxt:Some string\r\n", '='},
		{"array", "*2\r\n$3\r\nfoo\r\n:1\r\n", '*'},
		{"empty array", "*0\r\n", '*'},
		{"null array", "*-1\r\n", '*'},
		{"nested", "*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Hello\r\n-World\r\n", '*'},
		{"deep", "*1\r\n*1\r\n*1\r\n*2\r\n*-1\r\n$-1\r\n", '*'},
		{"set", "~2\r\n+a\r\n$1\r\nb\r\n", '~'},
		{"map", "%2\r\n+first\r\n:1\r\n+second\r\n*2\r\n_\r\n%1\r\n$1\r\nk\r\n$-1\r\n", '%'},
		{"empty map", "%0\r\n", '%'},
		{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", '>'},
		{"attribute", "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n", '*'},
		{"attribute before a push", "|1\r\n+a\r\n+b\r\n>1\r\n+c\r\n", '>'},
		{"attribute before a simple", "|0\r\n:7\r\n", ':'},
		{"attribute in an array", "*3\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n:3\r\n", '*'},
	} {
		for how, r := range readers(tt.in + "+next\r\n") {
			got, kind, err := readReply(r, []byte("kept"))
			if err != nil {
				t.Errorf("%s, %s: %v", tt.name, how, err)
				continue
			}
			if string(got) != "kept"+tt.in || kind != tt.kind {
				t.Errorf("%s, %s: read %q of type %q, want %q of type %q", tt.name, how, got, kind, "kept"+tt.in, tt.kind)
			}
			if next, _, err := readReply(r, nil); err != nil || string(next) != "+next\r\n" {
				t.Errorf("%s, %s: then read %q, %v, want the next reply", tt.name, how, next, err)
			}
			if _, _, err := readReply(r, nil); err != io.EOF {
				t.Errorf("%s, %s: at the end: %v, want EOF", tt.name, how, err)
			}
		}
	}
}

// TestRespReplyBad: a truncated reply is an unexpected EOF, and what is
// not RESP an error.
func TestRespReplyBad(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want error
	}{
		{"+OK", io.ErrUnexpectedEOF},
		{"$5\r\nhel", io.ErrUnexpectedEOF},
		{"*2\r\n:1\r\n", io.ErrUnexpectedEOF},
		{"|1\r\n+a\r\n+b\r\n", io.ErrUnexpectedEOF},
		{"?1\r\n", errProtocol},
		{"+OK\n", errProtocol},
		{"\r\n", errProtocol},
		{"$x\r\n", errProtocol},
		{"$-2\r\n", errProtocol},
		{"$3\r\nabcd\r\n", errProtocol},
		{"%-1\r\n", errProtocol},
		{"$99999999999\r\n", errProtocol},
	} {
		for how, r := range readers(tt.in) {
			if got, _, err := readReply(r, nil); !errors.Is(err, tt.want) {
				t.Errorf("%q, %s: read %q, %v, want %v", tt.in, how, got, err, tt.want)
			}
		}
	}
}

// TestRespRequest: requests are read whole, bytes verbatim, with their
// arguments (binary ones too); an empty one has none; what is not a
// request of bulk strings is an error.
func TestRespRequest(t *testing.T) {
	t.Parallel()
	reqs := []struct {
		in   string
		args []string
	}{
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n", []string{"SET", "k", "a\r\nb"}},
		{"*0\r\n", nil},
		{"*-1\r\n", nil},
		{"*2\r\n$4\r\necho\r\n$0\r\n\r\n", []string{"echo", ""}},
		{"*2\r\n$7\r\nevalsha\r\n$30\r\n" + strings.Repeat("z", 30) + "\r\n", []string{"evalsha", strings.Repeat("z", 30)}},
	}
	var in string
	for _, req := range reqs {
		in += req.in
	}
	for how, r := range readers(in) {
		var (
			buf  []byte
			offs [][2]int
			err  error
		)
		for _, req := range reqs {
			if buf, offs, err = readRequest(r, buf[:0], offs[:0]); err != nil {
				t.Fatalf("%s: %q: %v", how, req.in, err)
			}
			var args []string
			for _, o := range offs {
				args = append(args, string(buf[o[0]:o[1]]))
			}
			if string(buf) != req.in || !cmp.Equal(args, req.args) {
				t.Errorf("%s: read %q with arguments %q, want %q with %q", how, buf, args, req.in, req.args)
			}
		}
		if _, _, err := readRequest(r, nil, nil); err != io.EOF {
			t.Errorf("%s: at the end: %v, want EOF", how, err)
		}
	}

	for _, tt := range []struct {
		in   string
		want error
	}{
		{"*2\r\n$3\r\nGET\r\n", io.ErrUnexpectedEOF},
		{"*1\r\n$3\r\nGE", io.ErrUnexpectedEOF},
		{"*1\r\n:1\r\n", errProtocol},
		{"*1\r\n$-1\r\n", errProtocol},
		{"+PING\r\n", errProtocol},
	} {
		for how, r := range readers(tt.in) {
			if _, _, err := readRequest(r, nil, nil); !errors.Is(err, tt.want) {
				t.Errorf("%q, %s: %v, want %v", tt.in, how, err, tt.want)
			}
		}
	}
}
