//go:build !linux

package sysfs

import "os"

// sysfs is Linux's: elsewhere every open fails with ErrUnsupportedPlatform, so a receiver built
// for another platform reads nothing and says so.

func isNotAvailableErrno(error) bool { return false }

func isGoneErrno(error) bool { return false }

func openDirPath(string) (int, error) { return -1, ErrUnsupportedPlatform }

func closeFD(int) error { return nil }

// ReadDir fails with ErrUnsupportedPlatform: there is no sysfs to list.
func ReadDir(dir string) ([]os.DirEntry, error) {
	return nil, &os.PathError{Op: "open", Path: dir, Err: ErrUnsupportedPlatform}
}

func (r *Reader) open(string) (int, error) { return -1, ErrUnsupportedPlatform }

func readRetry(int, []byte) (int, error) { return 0, ErrUnsupportedPlatform }

func preadRetry(int, []byte) (int, error) { return 0, ErrUnsupportedPlatform }
