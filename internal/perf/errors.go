package perf

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// ErrUnsupportedPlatform is what Syscalls.OpenGroup fails with where there is no
// perf_event_open(2) (any OS but Linux).
var ErrUnsupportedPlatform = fmt.Errorf("perf: unsupported platform: %w", errors.ErrUnsupported)

// OpenError is a failed perf_event_open, with what was asked for and, for the errors an operator
// can fix, how.
type OpenError struct {
	Attr Attr
	CPU  int
	Err  error
}

func (e *OpenError) Error() string {
	msg := fmt.Sprintf("perf_event_open(%s, cpu %d): %v", e.Attr, e.CPU, e.Err)
	if hint := Hint(e.Err); hint != "" {
		msg += ": " + hint
	}
	return msg
}

func (e *OpenError) Unwrap() error { return e.Err }

// IsPermission reports whether err is the kernel refusing a system-wide counter to an
// unprivileged process.
func IsPermission(err error) bool {
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, fs.ErrPermission)
}

// Hint says how to fix an error, or "" where there is nothing to say. System-wide (pid -1, cpu N)
// counters need perf_event_paranoid < 1 or CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN
// (kernel/events/core.c perf_allow_cpu; perf_event_open(2)).
func Hint(err error) string {
	switch {
	case IsPermission(err):
		return "permission denied: set sysctl kernel.perf_event_paranoid=0 (or lower), or give the collector CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN"
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENODEV):
		return "the PMU or CPU is gone (CPU offline, driver unloaded)"
	case errors.Is(err, syscall.EINVAL):
		return "the kernel rejected the event encoding or CPU"
	case errors.Is(err, syscall.EMFILE):
		return "out of file descriptors (raise the collector's RLIMIT_NOFILE)"
	}
	return ""
}
