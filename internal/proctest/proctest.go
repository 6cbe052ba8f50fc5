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
