// Package syncbuf is a bytes.Buffer that a running process's output can be written to while a test
// reads it: the end-to-end, fault and package tests collect the collector's (and Prometheus's) log
// in one.
package syncbuf // import "github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"

import (
	"bytes"
	"sync"
)

// Buffer collects writes from one goroutine (exec.Cmd's copier) while others read it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
