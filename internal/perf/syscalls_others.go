//go:build !linux

package perf

// Syscalls is the real Opener on Linux (perf_event_open(2)); elsewhere every OpenGroup fails with
// ErrUnsupportedPlatform.
type Syscalls struct {
	// Count counts the system calls made; none are made here.
	Count int64
}

// OpenGroup implements Opener: ErrUnsupportedPlatform.
func (s *Syscalls) OpenGroup(int, []Attr) (Group, error) { return nil, ErrUnsupportedPlatform }
