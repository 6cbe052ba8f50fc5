// Package proctest holds helpers for tests that run real child processes.
package proctest

import (
	"bytes"
	"strings"
	"sync"
	"time"
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
	l.partial = splitLines(append(l.partial, p...), l.Line)
	return len(p), nil
}

// splitLines calls line with each complete line of buf and returns what
// is left after the last newline.
func splitLines(buf []byte, line func(string)) []byte {
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		line(string(buf[:i]))
		buf = buf[i+1:]
	}
}

// LineLog is an io.Writer for a child process's output that keeps its
// complete lines and lets a test wait for one.
type LineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	changed chan struct{} // closed and replaced when a line arrives
}

// Write buffers p and keeps the lines it completes.
func (l *LineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = splitLines(append(l.partial, p...), func(s string) { l.lines = append(l.lines, s) })
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return len(p), nil
}

// Wait returns the first line that starts with prefix, waiting up to
// timeout for it; false if none came.
func (l *LineLog) Wait(prefix string, timeout time.Duration) (string, bool) {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		for _, s := range l.lines {
			if strings.HasPrefix(s, prefix) {
				l.mu.Unlock()
				return s, true
			}
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return "", false
		}
	}
}

// Matching returns the lines so far that start with prefix.
func (l *LineLog) Matching(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// String returns everything written so far.
func (l *LineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + string(l.partial)
}
