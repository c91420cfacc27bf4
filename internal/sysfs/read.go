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
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
)

// ErrNotAvailable marks a counter the kernel says it cannot provide: old kernels print
// "N/A (no PMA)" when the port's performance-management agent fails
// (drivers/infiniband/core/sysfs.c show_pma_counter before v5.x), newer ones fail the read with
// EINVAL, and some drivers answer EOPNOTSUPP.
var ErrNotAvailable = errors.New("counter not available")

// ErrUnsupportedPlatform says that there is no sysfs here (any OS but Linux), for callers that
// refuse to start a live reader there. The Reader itself reads plain files anywhere: off Linux
// that is a tree materialized from a recording (read_others.go).
var ErrUnsupportedPlatform = fmt.Errorf("sysfs: unsupported platform: %w", errors.ErrUnsupported)

// ErrNotRegular marks a path that is not a regular file. Every sysfs attribute is one (kernfs
// creates attributes as S_IFREG, fs/kernfs/inode.c kernfs_init_inode); a named pipe, socket or
// device node in its place would block a read forever or read something that is no counter, so
// it is refused before any read.
var ErrNotRegular = errors.New("not a regular file")

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
// counter cannot be read on this port, as opposed to a real failure. errors.Is(err,
// os.ErrNotExist) also matches ENODEV: kernfs fails reads of a file kept open after its device
// was removed with ENODEV (fs/kernfs/file.c, kernfs_get_active fails), where a new open would
// fail with ENOENT. Both mean the same to a caller: the device went away.
func (e *PathError) Is(target error) bool {
	switch target {
	case ErrNotAvailable:
		return isNotAvailableErrno(e.Err)
	case os.ErrNotExist:
		return isGoneErrno(e.Err)
	}
	return false
}

// maxValueLen is larger than any single-value attribute file (a 64-bit decimal counter, a rate
// string like "400 Gb/sec (4X NDR)", a GID attribute); sysfs show() output is at most one page but
// the files read through this package are tiny.
const maxValueLen = 256

// Reader reads sysfs files with one open/read/close each, or, for the files read on every scrape,
// with one pread of a descriptor kept open (ReadBytesKept), and no allocation beyond the error
// path and the first open of a kept file. It counts the files it read and opened so that tests and
// benchmarks can hold the per-scrape cost down. A Reader is not safe for concurrent use (it reuses
// one buffer).
type Reader struct {
	// parent, for a Reader made by Fork, holds the hooks and the counts.
	parent *Reader
	buf    [maxValueLen]byte
	opened atomic.Int64
	reads  atomic.Int64
	// beneath, when set (Confine), is the directory every open resolves inside, and beneathFD
	// its descriptor.
	beneath   string
	beneathFD int
	// maxKept caps the descriptors kept open by this Reader and its forks together (SetMaxKept);
	// keptTotal counts them.
	maxKept   int64
	keptTotal atomic.Int64
	// kept holds the descriptors of the files read through ReadBytesKept, by path.
	kept map[string]int
	// OnOpen, when set, is called with every path before it is opened or, for a kept file, read.
	// Tests use it to check what a scrape touches and to make a read fail the way the kernel fails
	// it (EINVAL, EACCES, ...): a non-nil error is returned as the read's error.
	OnOpen func(path string) error
	// OnRead, when set, sees every read's outcome: the trimmed content or the error. Recordings
	// use it to keep the raw readings of a scrape.
	OnRead func(path string, content []byte, err error)
}

// Fork returns a Reader with its own buffer and kept descriptors that shares r's hooks (OnOpen,
// OnRead, looked up at each read) and counts into r's Opened and Reads. Each goroutine that reads
// at the same time as others uses its own fork.
func (r *Reader) Fork() *Reader { return &Reader{parent: r.root()} }

func (r *Reader) root() *Reader {
	if r.parent != nil {
		return r.parent
	}
	return r
}

// ErrOutside marks a path that would be read outside the directory a Reader is confined to.
var ErrOutside = errors.New("outside the directory the reads are confined to")

// Confine makes every later open of r (and of its forks) resolve inside dir, as openat2 with
// RESOLVE_BENEATH resolves it: neither the path nor a link on the way may lead out of dir, and
// paths not under dir are refused. A replay reads a tree materialized from a recording that came
// from elsewhere; this keeps a crafted link from exposing any file of the replaying host.
func (r *Reader) Confine(dir string) error {
	fd, err := openDirPath(dir)
	if err != nil {
		return &PathError{Op: "open", Path: dir, Err: err}
	}
	rt := r.root()
	rt.beneath, rt.beneathFD = filepath.Clean(dir), fd
	return nil
}

// SetMaxKept caps the descriptors ReadBytesKept keeps open, by r and its forks together; past
// the cap a file is read with open-read-close, as ReadBytes does. Without a cap a node with
// thousands of ports runs into the process's descriptor limit (EMFILE), and then every open
// fails: the collector's own sockets included. 0 removes the cap.
func (r *Reader) SetMaxKept(n int) { r.root().maxKept = int64(n) }

// Opened returns the number of files opened so far.
func (r *Reader) Opened() int64 { return r.opened.Load() }

// Reads returns the number of file reads so far (each a show() call on sysfs), kept files included.
func (r *Reader) Reads() int64 { return r.reads.Load() }

// Kept returns the number of descriptors kept open by ReadBytesKept.
func (r *Reader) Kept() int { return len(r.kept) }

// ReadBytes returns the file's content with surrounding white space trimmed. The slice is only
// valid until the next read.
func (r *Reader) ReadBytes(path string) ([]byte, error) {
	b, err := r.readBytes(path)
	return r.seen(path, b, err)
}

// seen hands a read's outcome to OnRead and returns it.
func (r *Reader) seen(path string, b []byte, err error) ([]byte, error) {
	if onRead := r.root().OnRead; onRead != nil {
		onRead(path, b, err)
	}
	return b, err
}

func (r *Reader) readBytes(path string) ([]byte, error) {
	rt := r.root()
	rt.reads.Add(1)
	rt.opened.Add(1)
	if rt.OnOpen != nil {
		if err := rt.OnOpen(path); err != nil {
			return nil, &PathError{Op: "read", Path: path, Err: err}
		}
	}
	fd, err := rt.open(path)
	if err != nil {
		return nil, &PathError{Op: "open", Path: path, Err: err}
	}
	n, err := readRetry(fd, r.buf[:])
	_ = closeFD(fd)
	if err != nil {
		return nil, &PathError{Op: "read", Path: path, Err: err}
	}
	return bytes.TrimSpace(r.buf[:n]), nil
}

// ReadBytesKept is ReadBytes for a file that is read again and again, such as a counter read on
// every scrape: its descriptor stays open and every read after the first is one pread at offset 0.
// sysfs calls the attribute's show() again for each such read (Documentation/filesystems/sysfs.rst:
// "If userspace seeks back to zero or does a pread(2) with an offset of '0' the show() method will
// be called again, rearmed, to fill the buffer"), so the value is as fresh as after an open, while
// the path walk through the class symlinks, the open and the close are saved: on sysfs most of the
// cost of a read of a small attribute.
//
// A failed read closes the descriptor, so that the next read opens the path afresh: a file of a
// device that went away fails with ENODEV, which matches os.ErrNotExist. CloseKept closes them all;
// call it when the paths may lead elsewhere (a rediscovery) and at shutdown.
func (r *Reader) ReadBytesKept(path string) ([]byte, error) {
	b, err := r.readKept(path)
	return r.seen(path, b, err)
}

func (r *Reader) readKept(path string) ([]byte, error) {
	rt := r.root()
	if _, ok := r.kept[path]; !ok && rt.maxKept > 0 && rt.keptTotal.Load() >= rt.maxKept {
		return r.readBytes(path)
	}
	rt.reads.Add(1)
	if rt.OnOpen != nil {
		if err := rt.OnOpen(path); err != nil {
			r.closeKept(path)
			return nil, &PathError{Op: "read", Path: path, Err: err}
		}
	}
	fd, ok := r.kept[path]
	if !ok {
		rt.opened.Add(1)
		var err error
		if fd, err = rt.open(path); err != nil {
			return nil, &PathError{Op: "open", Path: path, Err: err}
		}
		if r.kept == nil {
			r.kept = map[string]int{}
		}
		r.kept[path] = fd
		rt.keptTotal.Add(1)
	}
	n, err := preadRetry(fd, r.buf[:])
	if err != nil {
		r.closeKept(path)
		return nil, &PathError{Op: "read", Path: path, Err: err}
	}
	return bytes.TrimSpace(r.buf[:n]), nil
}

// ReadUintKept is ReadUint through ReadBytesKept.
func (r *Reader) ReadUintKept(path string) (uint64, error) {
	b, err := r.ReadBytesKept(path)
	if err != nil {
		return 0, err
	}
	return ParseUint(path, b)
}

func (r *Reader) closeKept(path string) {
	if fd, ok := r.kept[path]; ok {
		_ = closeFD(fd)
		delete(r.kept, path)
		r.root().keptTotal.Add(-1)
	}
}

// CloseKept closes every descriptor kept open by ReadBytesKept.
func (r *Reader) CloseKept() {
	for _, fd := range r.kept {
		_ = closeFD(fd)
	}
	r.root().keptTotal.Add(-int64(len(r.kept)))
	clear(r.kept)
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

// ListDir returns the names of the entries of dir, sorted. A missing directory yields no names
// and no error: the subsystem is simply not there (no RDMA stack, no perf support).
func ListDir(dir string) ([]string, error) {
	entries, err := ReadDir(dir)
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
