// Package sysfs reads single-value files under /sys the way the kernel writes them: one value per
// file, produced by one show() call, possibly failing with an errno that means "this counter is not
// available here". Every error names the file it came from, so a bad counter costs its own series
// and nothing else.
package sysfs // import "github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrNotAvailable marks a counter the kernel says it cannot provide: old kernels print
// "N/A (no PMA)" when the port's performance-management agent fails
// (drivers/infiniband/core/sysfs.c show_pma_counter before v5.x), newer ones fail the read with
// EINVAL, and some drivers answer EOPNOTSUPP.
var ErrNotAvailable = errors.New("counter not available")

// ValueError reports a file whose content is not what its reader expects.
type ValueError struct {
	Path  string
	Value string
	Err   error
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("%s: unexpected value %q: %v", e.Path, e.Value, e.Err)
}

func (e *ValueError) Unwrap() error { return e.Err }

// PathError reports a failed open or read, naming the file.
type PathError struct {
	Op   string
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }

func (e *PathError) Unwrap() error { return e.Err }

// Is lets errors.Is(err, ErrNotAvailable) match the errnos with which the kernel says that a
// counter cannot be read on this port, as opposed to a real failure.
func (e *PathError) Is(target error) bool {
	return target == ErrNotAvailable && (errors.Is(e.Err, unix.EINVAL) || errors.Is(e.Err, unix.EOPNOTSUPP))
}

// maxValueLen is larger than any single-value attribute file (a 64-bit decimal counter, a rate
// string like "400 Gb/sec (4X NDR)", a GID attribute); sysfs show() output is at most one page but
// the files read through this package are tiny.
const maxValueLen = 256

// Reader reads sysfs files with one open/read/close each and no allocation beyond the error path.
// It counts the files it opened so that tests and benchmarks can hold the per-scrape cost down.
// A Reader is not safe for concurrent use (it reuses one buffer).
type Reader struct {
	buf    [maxValueLen]byte
	opened atomic.Int64
	// OnOpen, when set, is called with every path before it is opened. Tests use it to check what
	// a scrape touches and to make a read fail the way the kernel fails it (EINVAL, EACCES, ...):
	// a non-nil error is returned as the read's error.
	OnOpen func(path string) error
	// OnRead, when set, sees every read's outcome: the trimmed content or the error. Recordings
	// use it to keep the raw readings of a scrape.
	OnRead func(path string, content []byte, err error)
}

// Opened returns the number of files opened so far.
func (r *Reader) Opened() int64 { return r.opened.Load() }

// ReadBytes returns the file's content with surrounding white space trimmed. The slice is only
// valid until the next read.
func (r *Reader) ReadBytes(path string) ([]byte, error) {
	b, err := r.readBytes(path)
	if r.OnRead != nil {
		r.OnRead(path, b, err)
	}
	return b, err
}

func (r *Reader) readBytes(path string) ([]byte, error) {
	r.opened.Add(1)
	if r.OnOpen != nil {
		if err := r.OnOpen(path); err != nil {
			return nil, &PathError{Op: "read", Path: path, Err: err}
		}
	}
	fd, err := openRetry(path)
	if err != nil {
		return nil, &PathError{Op: "open", Path: path, Err: err}
	}
	n, err := readRetry(fd, r.buf[:])
	_ = unix.Close(fd)
	if err != nil {
		return nil, &PathError{Op: "read", Path: path, Err: err}
	}
	return bytes.TrimSpace(r.buf[:n]), nil
}

// ReadString returns the trimmed content of a file.
func (r *Reader) ReadString(path string) (string, error) {
	b, err := r.ReadBytes(path)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ReadUint parses a file holding one unsigned decimal (or 0x-prefixed hexadecimal) counter.
// "N/A (no PMA)" yields an error that matches ErrNotAvailable.
func (r *Reader) ReadUint(path string) (uint64, error) {
	b, err := r.ReadBytes(path)
	if err != nil {
		return 0, err
	}
	return ParseUint(path, b)
}

// ReadInt parses a file holding one signed decimal, such as numa_node (-1 = unknown).
func (r *Reader) ReadInt(path string) (int64, error) {
	b, err := r.ReadBytes(path)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseInt(string(b), 10, 64)
	if perr != nil {
		return 0, &ValueError{Path: path, Value: string(b), Err: perr}
	}
	return v, nil
}

var notAvailable = []byte("N/A")

// ParseUint parses one counter value as the kernel prints it: decimal (%llu), or hexadecimal
// with a 0x prefix (a few drivers print %#llx). Anything else is a ValueError naming path.
func ParseUint(path string, b []byte) (uint64, error) {
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, notAvailable) {
		return 0, &ValueError{Path: path, Value: string(b), Err: ErrNotAvailable}
	}
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		v, err := strconv.ParseUint(string(b[2:]), 16, 64)
		if err != nil {
			return 0, &ValueError{Path: path, Value: string(b), Err: err}
		}
		return v, nil
	}
	// Hand-rolled decimal parse: this is the per-counter hot path and must not allocate.
	if len(b) == 0 || len(b) > 20 {
		return 0, &ValueError{Path: path, Value: string(b), Err: strconv.ErrSyntax}
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, &ValueError{Path: path, Value: string(b), Err: strconv.ErrSyntax}
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, &ValueError{Path: path, Value: string(b), Err: strconv.ErrRange}
		}
		v = v*10 + d
	}
	return v, nil
}

func openRetry(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func readRetry(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// ListDir returns the names of the entries of dir, sorted. A missing directory yields no names
// and no error: the subsystem is simply not there (no RDMA stack, no perf support).
func ListDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// HostRoot returns a receiver's root_path with its default: the host's filesystem root, under
// which sys/ and proc/ are read ("/", or where a container mounts the host's root).
func HostRoot(rootPath string) string {
	if rootPath == "" {
		return "/"
	}
	return rootPath
}
