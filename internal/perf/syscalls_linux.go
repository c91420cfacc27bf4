//go:build linux

package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Syscalls is the real Opener: perf_event_open(2) through golang.org/x/sys/unix.
type Syscalls struct {
	// Syscalls counts the system calls made (open, ioctl, read, close), so that benchmarks can
	// report the per-scrape cost.
	Count int64
}

// readFormat asks for one read(2) that returns every member plus the group's times:
// { u64 nr; u64 time_enabled; u64 time_running; u64 values[nr]; } (perf_event_open(2)).
const readFormat = unix.PERF_FORMAT_GROUP | unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING

// OpenGroup implements Opener. The leader is opened disabled so that the whole group starts
// counting at the same instant (PERF_EVENT_IOC_ENABLE with PERF_IOC_FLAG_GROUP).
func (s *Syscalls) OpenGroup(cpu int, attrs []Attr) (Group, error) {
	if len(attrs) == 0 {
		return nil, errors.New("perf: empty group")
	}
	g := &syscallGroup{s: s, fds: make([]int, 0, len(attrs)), buf: make([]byte, 8*(3+len(attrs)))}
	for i, a := range attrs {
		attr := unix.PerfEventAttr{
			Type:        a.Type,
			Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Config:      a.Config,
			Ext1:        a.Config1,
			Ext2:        a.Config2,
			Read_format: readFormat,
			// exclude_* stay 0: uncore PMUs are PERF_PMU_CAP_NO_EXCLUDE and reject them.
		}
		leader := -1
		if i == 0 {
			attr.Bits = unix.PerfBitDisabled
		} else {
			leader = g.fds[0]
		}
		s.Count++
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, leader, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			_ = g.Close()
			return nil, &OpenError{Attr: a, CPU: cpu, Err: err}
		}
		g.fds = append(g.fds, fd)
	}
	s.Count++
	if err := unix.IoctlSetInt(g.fds[0], unix.PERF_EVENT_IOC_ENABLE, unix.PERF_IOC_FLAG_GROUP); err != nil {
		_ = g.Close()
		return nil, fmt.Errorf("perf: enabling group on CPU %d: %w", cpu, err)
	}
	return g, nil
}

type syscallGroup struct {
	s   *Syscalls
	fds []int
	buf []byte
}

func (g *syscallGroup) Read(r *Reading) error {
	if len(g.fds) == 0 {
		return errors.New("perf: group is closed")
	}
	var n int
	var err error
	for {
		g.s.Count++
		n, err = unix.Read(g.fds[0], g.buf)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("perf: reading group: %w", err)
	}
	if n < 24 {
		return fmt.Errorf("perf: short group read (%d bytes)", n)
	}
	nr := binary.NativeEndian.Uint64(g.buf[0:])
	if nr != uint64(len(g.fds)) || n < int(8*(3+nr)) || len(r.Values) < int(nr) {
		return fmt.Errorf("perf: group read returned %d values for %d events", nr, len(g.fds))
	}
	r.Enabled = binary.NativeEndian.Uint64(g.buf[8:])
	r.Running = binary.NativeEndian.Uint64(g.buf[16:])
	for i := range int(nr) {
		r.Values[i] = binary.NativeEndian.Uint64(g.buf[24+8*i:])
	}
	return nil
}

// Close closes the members before the leader.
func (g *syscallGroup) Close() error {
	var errs []error
	for i := len(g.fds) - 1; i >= 0; i-- {
		g.s.Count++
		if err := unix.Close(g.fds[i]); err != nil {
			errs = append(errs, err)
		}
	}
	g.fds = nil
	return errors.Join(errs...)
}
