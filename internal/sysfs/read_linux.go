//go:build linux

package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// isNotAvailableErrno: the errnos with which the kernel says a counter cannot be read here.
func isNotAvailableErrno(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)
}

// isGoneErrno: a read through a descriptor of a removed kernfs node.
func isGoneErrno(err error) bool { return errors.Is(err, unix.ENODEV) }

// openDirPath opens dir as a path-only descriptor for openat2 (Confine).
func openDirPath(dir string) (int, error) {
	return unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func closeFD(fd int) error { return unix.Close(fd) }

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

// open opens path for reading, refusing anything but a regular file. O_NONBLOCK makes the
// open of a FIFO return at once instead of waiting for a writer (fifo(7)); it has no effect on
// regular files (open(2)), so the reads of a sysfs attribute are unchanged. The type is checked on
// the open descriptor (fstat), so a file swapped between a check and the open cannot slip by.
func (r *Reader) open(path string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK
	open := func() (int, error) { return unix.Open(path, flags, 0) }
	if r.beneath != "" {
		rel, ok := strings.CutPrefix(path, r.beneath+"/")
		if !ok {
			return -1, ErrOutside
		}
		how := &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
		open = func() (int, error) {
			fd, err := unix.Openat2(r.beneathFD, rel, how)
			if err == unix.ENOSYS {
				// openat2 is Linux 5.6 and later; before it (RHEL 8's 4.18) the links are resolved
				// here and the result must stay inside the directory.
				return openResolvedBeneath(r.beneath, path, flags)
			}
			return fd, err
		}
	}
	for {
		fd, err := open()
		if err == unix.EINTR {
			continue
		}
		if err == unix.EXDEV && r.beneath != "" {
			return -1, ErrOutside // openat2(2): RESOLVE_BENEATH refused a step out of the directory
		}
		if err != nil {
			return fd, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = closeFD(fd)
			return -1, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			_ = closeFD(fd)
			return -1, ErrNotRegular
		}
		return fd, nil
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

func preadRetry(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// openResolvedBeneath opens path after resolving its links, refusing a result outside dir: what
// RESOLVE_BENEATH does, on kernels without openat2 (a link swapped between the check and the open
// can slip by there).
func openResolvedBeneath(dir, path string, flags int) (int, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return -1, err
	}
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return -1, err
	}
	if !strings.HasPrefix(real, base+string(filepath.Separator)) {
		return -1, unix.EXDEV
	}
	return unix.Open(real, flags, 0)
}
