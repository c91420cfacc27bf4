//go:build !linux

package sysfs

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// There is no sysfs off Linux. What is read there is a tree materialized from a recording (a
// replay, internal/recording) or a test's tree: plain files, read through os.File. The handles
// are kept in a table under the int descriptors the Reader deals in.

func isNotAvailableErrno(error) bool { return false }

func isGoneErrno(error) bool { return false }

var files = struct {
	sync.Mutex
	next int
	open map[int]*os.File
}{open: map[int]*os.File{}}

func register(f *os.File) int {
	files.Lock()
	defer files.Unlock()
	files.next++
	files.open[files.next] = f
	return files.next
}

func lookup(fd int) (*os.File, bool) {
	files.Lock()
	defer files.Unlock()
	f, ok := files.open[fd]
	return f, ok
}

// openDirPath opens the directory a Reader is confined to; off Linux only its existence matters
// (the confinement resolves paths, see open).
func openDirPath(dir string) (int, error) {
	f, err := os.Open(dir)
	if err != nil {
		return -1, err
	}
	return register(f), nil
}

func closeFD(fd int) error {
	files.Lock()
	f, ok := files.open[fd]
	delete(files.open, fd)
	files.Unlock()
	if !ok {
		return os.ErrClosed
	}
	return f.Close()
}

// ReadDir lists a directory.
func ReadDir(dir string) ([]os.DirEntry, error) { return os.ReadDir(dir) }

// open opens path for reading, refusing anything but a regular file. A Reader confined to a
// directory (Confine) resolves the path's links first and refuses a result outside it, as
// RESOLVE_BENEATH does on Linux.
func (r *Reader) open(path string) (int, error) {
	if r.beneath != "" {
		if !strings.HasPrefix(path, r.beneath+string(filepath.Separator)) {
			return -1, ErrOutside
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return -1, err
		}
		base, err := filepath.EvalSymlinks(r.beneath)
		if err != nil {
			return -1, err
		}
		if !strings.HasPrefix(real, base+string(filepath.Separator)) {
			return -1, ErrOutside
		}
		path = real
	}
	f, err := os.Open(path)
	if err != nil {
		return -1, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		if err != nil {
			return -1, err
		}
		return -1, ErrNotRegular
	}
	return register(f), nil
}

func readRetry(fd int, buf []byte) (int, error) {
	f, ok := lookup(fd)
	if !ok {
		return 0, os.ErrClosed
	}
	n, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return n, err
}

func preadRetry(fd int, buf []byte) (int, error) {
	f, ok := lookup(fd)
	if !ok {
		return 0, os.ErrClosed
	}
	n, err := f.ReadAt(buf, 0)
	if err == io.EOF {
		err = nil
	}
	return n, err
}
