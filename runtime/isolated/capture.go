package isolated

import (
	"io"
	"os"
	"sync"
	"time"
)

// excerptHalf is how much of the start and of the end of a child's stderr
// is kept for its error record: a Go panic starts with its message, a C
// library's complaint is usually last.
const excerptHalf = 2 << 10

// capture reads a child's stderr: it keeps an excerpt (its start and its
// end), copies up to limit bytes to an optional writer, and signals when
// the child writes more.
type capture struct {
	r      *os.File
	limit  int
	mirror io.Writer
	full   chan struct{} // closed once more than limit bytes came
	done   chan struct{} // closed when reading ends

	mu      sync.Mutex
	n       int
	head    []byte // the first excerptHalf bytes
	rest    []byte // the last excerptHalf bytes after head
	skipped bool   // whether bytes between head and rest were dropped
}

func newCapture(r *os.File, limit int, copyTo io.Writer) *capture {
	c := &capture{r: r, limit: limit, mirror: copyTo, full: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *capture) loop() {
	defer close(c.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			c.add(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *capture) add(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mirror != nil && c.n < c.limit {
		_, _ = c.mirror.Write(p[:min(len(p), c.limit-c.n)])
	}
	before := c.n
	c.n += len(p)
	if before <= c.limit && c.n > c.limit {
		close(c.full)
	}
	k := min(len(p), excerptHalf-len(c.head))
	c.head = append(c.head, p[:k]...)
	c.rest = append(c.rest, p[k:]...)
	if over := len(c.rest) - excerptHalf; over > 0 {
		c.rest = append(c.rest[:0], c.rest[over:]...)
		c.skipped = true
	}
}

// over reports whether more than limit bytes came.
func (c *capture) over() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n > c.limit
}

// finish waits up to grace for the end of the stream (a process outside
// the child's group may hold it open), stops reading and returns the
// excerpt.
func (c *capture) finish(grace time.Duration) []byte {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	_ = c.r.Close()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]byte(nil), c.head...)
	if c.skipped {
		out = append(out, "\n[...]\n"...)
	}
	return append(out, c.rest...)
}
