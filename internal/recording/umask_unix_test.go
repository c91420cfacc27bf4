//go:build unix

package recording

import (
	"testing"

	"golang.org/x/sys/unix"
)

// setUmask sets the process umask for the test and restores it after.
func setUmask(t *testing.T, mask int) {
	old := unix.Umask(mask)
	t.Cleanup(func() { unix.Umask(old) })
}
