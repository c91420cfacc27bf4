package sysfs

import (
	"errors"
	"io"
	"os"
)

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
