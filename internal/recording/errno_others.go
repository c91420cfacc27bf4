//go:build !linux

package recording

import "syscall"

// errnoByName is empty where there is no sysfs to replay (any OS but Linux): recorded errno names
// stay text.
func errnoByName() map[string]syscall.Errno { return nil }

// ErrnoName returns err's text, for Record.Errors: errno names are Linux's.
func ErrnoName(err error) string { return err.Error() }
