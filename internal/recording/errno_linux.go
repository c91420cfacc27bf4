package recording

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// errnoByName maps the kernel's errno names (EINVAL) back to values, built once.
var errnoByName = sync.OnceValue(func() map[string]unix.Errno {
	m := map[string]unix.Errno{}
	for e := unix.Errno(1); e < 256; e++ {
		if n := unix.ErrnoName(e); n != "" {
			m[n] = e
		}
	}
	return m
})

// ErrnoName returns the kernel's name of err's errno (EINVAL), or err's text, for Record.Errors.
func ErrnoName(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
	}
	return err.Error()
}
