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
	// chunk 0 apart, in a field: most values have no other, and then
	// reading one allocates no slices
	first    string
	hasFirst bool
	rest     []string // chunk n at n-1
	set      []bool
}

// add records chunk n.
func (c *chunks) add(n int, v string) {
	if n == 0 {
		c.first, c.hasFirst = v, true
		return
	}
	if n > len(c.rest) {
		c.rest = append(c.rest, make([]string, n-len(c.rest))...)
		c.set = append(c.set, make([]bool, n-len(c.set))...)
	}
	c.rest[n-1], c.set[n-1] = v, true
}

// join returns the whole value (nil when no chunk was seen), or
// ErrMalformed when a chunk is missing.
func (c *chunks) join(local, what string) ([]byte, error) {
	if !c.hasFirst && len(c.rest) == 0 {
		return nil, nil
	}
	if !c.hasFirst {
		return nil, fmt.Errorf("%w: job %s: %s chunk 0 is missing", ErrMalformed, local, what)
	}
	size := len(c.first)
	for i, ok := range c.set {
		if !ok {
			return nil, fmt.Errorf("%w: job %s: %s chunk %d is missing", ErrMalformed, local, what, i+1)
		}
		size += len(c.rest[i])
	}
	b := make([]byte, 0, size)
	b = append(b, c.first...)
	for _, p := range c.rest {
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
