package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
)

// The proxy parses RESP only to find where each request and each reply
// ends, so it can match replies to requests and fault one of them; it
// forwards the bytes it read verbatim and never re-serialises anything.

// errProtocol is returned for a stream that is not RESP as Redis speaks it.
var errProtocol = errors.New("chaos: RESP protocol error")

// maxBulk bounds a bulk length, so a corrupt stream cannot make the proxy
// allocate without limit (Redis's own proto-max-bulk-len is 512 MB).
const maxBulk = 1 << 30

// readRequest reads one client request, a RESP array of bulk strings, and
// appends its bytes to buf. It returns buf and args, to which it appends the
// [start, end) offsets in buf of each argument. A request of no arguments
// ("*0" or "*-1") is valid: Redis ignores it and sends no reply. At a clean
// end of stream it returns io.EOF; in the middle of a request,
// io.ErrUnexpectedEOF.
func readRequest(r *bufio.Reader, buf []byte, args [][2]int) ([]byte, [][2]int, error) {
	buf, n, err := readHeader(r, buf, '*')
	if err != nil {
		return buf, args, err
	}
	for range n {
		var m int
		if buf, m, err = readHeader(r, buf, '$'); err != nil {
			return buf, args, unexpectedEOF(err)
		}
		if m < 0 { // Redis refuses a null argument too
			return buf, args, fmt.Errorf("%w: null bulk string in a request", errProtocol)
		}
		start := len(buf)
		if buf, err = readN(r, buf, m); err != nil {
			return buf, args, err
		}
		args = append(args, [2]int{start, start + m})
	}
	return buf, args, nil
}

// readReply reads one server reply of any RESP2 or RESP3 type, with every
// nested element and any attribute ('|') before it or before one of its
// elements, and appends its bytes to buf. It returns buf and the reply's
// type, that of the value after any attribute, so the caller can tell a
// push ('>') from a reply. At a clean end of stream it returns io.EOF; in
// the middle of a reply, io.ErrUnexpectedEOF.
func readReply(r *bufio.Reader, buf []byte) ([]byte, byte, error) {
	var kind byte
	// pending counts the values still to read; an aggregate adds its
	// elements, an attribute its pairs plus the value it belongs to. So
	// the annotated value of a top-level attribute is the one read when
	// pending is down to 1 again.
	for pending, first := 1, true; pending > 0; first = false {
		start := len(buf)
		var err error
		if buf, err = readLine(r, buf); err != nil {
			if !first {
				err = unexpectedEOF(err)
			}
			return buf, 0, err
		}
		line := buf[start : len(buf)-2]
		t := line[0]
		if first || (kind == '|' && pending == 1) {
			kind = t
		}
		pending--
		switch t {
		case '+', '-', ':', '_', ',', '#', '(':
		case '$', '!', '=':
			n, err := parseLen(line[1:])
			if err != nil {
				return buf, 0, err
			}
			if n >= 0 {
				if buf, err = readN(r, buf, n); err != nil {
					return buf, 0, err
				}
			}
		case '*', '~', '>', '%', '|':
			n, err := parseLen(line[1:])
			if err != nil {
				return buf, 0, err
			}
			if n < 0 {
				if t == '%' || t == '|' {
					return buf, 0, fmt.Errorf("%w: null %q", errProtocol, t)
				}
				break // a null array
			}
			if t == '%' || t == '|' {
				n *= 2
			}
			if t == '|' {
				n++
			}
			pending += n
		default:
			return buf, 0, fmt.Errorf("%w: unknown type %q", errProtocol, t)
		}
	}
	return buf, kind, nil
}

// readHeader reads a length line of type t ("*3", "$5"), appends it to buf
// and returns its length, -1 for a null.
func readHeader(r *bufio.Reader, buf []byte, t byte) ([]byte, int, error) {
	start := len(buf)
	buf, err := readLine(r, buf)
	if err != nil {
		return buf, 0, err
	}
	line := buf[start : len(buf)-2]
	if line[0] != t {
		return buf, 0, fmt.Errorf("%w: type %q, want %q", errProtocol, line[0], t)
	}
	n, err := parseLen(line[1:])
	return buf, n, err
}

// readLine appends one CRLF-terminated line to buf, however long.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	start := len(buf)
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if err == io.EOF && len(buf) > start {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	if n := len(buf) - start; n < 3 || buf[len(buf)-2] != '\r' {
		return buf, fmt.Errorf("%w: bad line %q", errProtocol, buf[start:])
	}
	return buf, nil
}

// readN appends n bytes and the CRLF after them to buf.
func readN(r *bufio.Reader, buf []byte, n int) ([]byte, error) {
	start := len(buf)
	buf = slices.Grow(buf, n+2)[:start+n+2]
	if _, err := io.ReadFull(r, buf[start:]); err != nil {
		return buf[:start], unexpectedEOF(err)
	}
	if buf[len(buf)-2] != '\r' || buf[len(buf)-1] != '\n' {
		return buf, fmt.Errorf("%w: bulk of %d bytes not followed by CRLF", errProtocol, n)
	}
	return buf, nil
}

// parseLen parses a decimal length, -1 or more, without allocating.
func parseLen(b []byte) (int, error) {
	if len(b) == 2 && b[0] == '-' && b[1] == '1' {
		return -1, nil
	}
	if len(b) == 0 || len(b) > 10 {
		return 0, fmt.Errorf("%w: bad length %q", errProtocol, b)
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad length %q", errProtocol, b)
		}
		n = n*10 + int(c-'0')
	}
	if n > maxBulk {
		return 0, fmt.Errorf("%w: length %d too large", errProtocol, n)
	}
	return n, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
