package sysfs

import (
	"errors"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// ReadDir is os.ReadDir that cannot block: os.Open of a named pipe waits in open(2) for a writer
// (fifo(7)), so a pipe in place of a sysfs directory would hang whoever lists it. O_DIRECTORY
// makes the open of anything but a directory fail at once with ENOTDIR (open(2)). Entries are
// sorted by name.
func ReadDir(dir string) ([]os.DirEntry, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b os.DirEntry) int {
		switch {
		case a.Name() < b.Name():
			return -1
		case a.Name() > b.Name():
			return 1
		}
		return 0
	})
	return entries, err
}

// ReadFile is os.ReadFile for files read outside a Reader (PCI config space, /proc files), bounded
// to max bytes and refusing what is not a regular file (ErrNotRegular) before any blocking read.
func ReadFile(path string, max int64) ([]byte, error) {
	var r Reader
	fd, err := r.open(path)
	if err != nil {
		return nil, &PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}
