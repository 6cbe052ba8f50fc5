// Package proctest holds helpers for tests that run real child processes.
package proctest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for a child process's output writer and a
// test reading it at the same time.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Lines is an io.Writer for a child process's output that calls Line with
// each complete line, without its newline, in order.
type Lines struct {
	Line func(string)

	mu      sync.Mutex
	partial []byte
}

// Write buffers p and passes on the lines it completes.
func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		l.Line(line)
	}
}
