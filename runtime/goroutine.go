package runtime

import (
	"bytes"
	goruntime "runtime"
	"strconv"
)

// goid returns the calling goroutine's ID, read from its stack header
// ("goroutine 42 [running]:").
func goid() uint64 {
	var b [64]byte
	n := goruntime.Stack(b[:], false)
	id, _ := stackID(b[:n])
	return id
}

// stackID parses the goroutine ID of one stack dump.
func stackID(s []byte) (uint64, bool) {
	s, ok := bytes.CutPrefix(s, []byte("goroutine "))
	if !ok {
		return 0, false
	}
	i := bytes.IndexByte(s, ' ')
	if i < 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(string(s[:i]), 10, 64)
	return id, err == nil
}

// maxStackDump bounds the buffer of a dump of every goroutine.
const maxStackDump = 64 << 20

// goroutineStacks returns the stacks of the goroutines ids that still
// exist, from a dump of every goroutine.
func goroutineStacks(ids map[uint64]bool) []byte {
	buf := make([]byte, 1<<16)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxStackDump {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []byte
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if id, ok := stackID(g); ok && ids[id] {
			if len(out) > 0 {
				out = append(out, "\n\n"...)
			}
			out = append(out, g...)
		}
	}
	return out
}
