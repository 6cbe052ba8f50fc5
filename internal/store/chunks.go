package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/keys"
)

// chunks reassembles a value lua/lib.lua stored in chunks (put_chunked):
// field f holds chunk 0, further fields the rest (chunkIndex), so that the
// job hash keeps Redis's compact encoding.
type chunks struct {
	parts []string
	set   []bool
}

// add records chunk n.
func (c *chunks) add(n int, v string) {
	if n >= len(c.parts) {
		c.parts = append(c.parts, make([]string, n+1-len(c.parts))...)
		c.set = append(c.set, make([]bool, n+1-len(c.set))...)
	}
	c.parts[n], c.set[n] = v, true
}

// join returns the whole value (nil when no chunk was seen), or
// ErrMalformed when a chunk is missing.
func (c *chunks) join(local, what string) ([]byte, error) {
	if len(c.parts) == 0 {
		return nil, nil
	}
	size := 0
	for i, ok := range c.set {
		if !ok {
			return nil, fmt.Errorf("%w: job %s: %s chunk %d is missing", ErrMalformed, local, what, i)
		}
		size += len(c.parts[i])
	}
	b := make([]byte, 0, size)
	for _, p := range c.parts {
		b = append(b, p...)
	}
	return b, nil
}

// maxChunks bounds the chunk numbers decoded, far above the 96 the
// scripts write, so a corrupt field name cannot make join allocate much.
const maxChunks = 1024

// chunkIndex reports whether field is chunk n >= 1 of the field f
// (keys.FieldHeaders or keys.FieldPayload): "h1", "h2", ... for headers;
// for the payload the number alone, "1", "2", ..., or "p1", "p2", ... as
// written before numbers (lua/lib_chunks.lua chunk_name).
func chunkIndex(field, f string) (int, bool) {
	digits := field
	switch {
	case f != "" && strings.HasPrefix(field, f):
		digits = field[len(f):]
	case f != keys.FieldPayload:
		return 0, false
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n < maxChunks
}
