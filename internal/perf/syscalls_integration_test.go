//go:build linux && integration

// The real perf_event_open(2) of this machine's kernel: host-dependent, so behind the integration
// tag (make test sets it).

package perf

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSyscallsSoftwareGroup exercises the real perf_event_open path (open disabled leader, member
// with group_fd, group enable, read with PERF_FORMAT_GROUP|TOTAL_TIME_*, close) with software
// events, which every Linux kernel has, opened system-wide on CPU 0 as the receiver opens uncore
// events (pid -1). It needs perf_event_paranoid < 1 or CAP_PERFMON/CAP_SYS_ADMIN; without them
// the test checks that the error names the fix.
func TestSyscallsSoftwareGroup(t *testing.T) {
	s := &Syscalls{}
	attrs := []Attr{
		{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK},
		{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK},
	}
	g, err := s.OpenGroup(0, attrs)
	if IsPermission(err) {
		assert.ErrorContains(t, err, "CAP_PERFMON")
		t.Skipf("system-wide perf events not permitted here: %v", err)
	}
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.Count, "two perf_event_open and one ioctl")

	r := Reading{Values: make([]uint64, 2)}
	require.NoError(t, g.Read(&r))
	first := r
	first.Values = append([]uint64(nil), r.Values...)

	// Burn CPU 0 time is not guaranteed to be ours, but cpu-clock counts wall time on CPU 0
	// whatever runs there.
	time.Sleep(30 * time.Millisecond)
	require.NoError(t, g.Read(&r))
	assert.Equal(t, int64(5), s.Count, "one read(2) per group read")

	assert.Greater(t, r.Enabled, first.Enabled)
	assert.Greater(t, r.Running, uint64(0))
	assert.LessOrEqual(t, r.Running, r.Enabled)
	assert.GreaterOrEqual(t, r.Enabled, uint64(25*time.Millisecond), "enabled time covers the sleep")
	assert.Greater(t, r.Values[0], first.Values[0], "cpu-clock advances")
	assert.InDelta(t, float64(r.Enabled), float64(r.Values[0]), float64(5*time.Millisecond),
		"cpu-clock counts nanoseconds while enabled")
	v, ok := r.Scaled(0)
	assert.True(t, ok)
	assert.GreaterOrEqual(t, v, r.Values[0])

	require.NoError(t, g.Close())
	assert.Equal(t, int64(7), s.Count, "two close(2)")
	assert.Error(t, g.Read(&r), "a closed group cannot be read")
}

func TestSyscallsOpenErrors(t *testing.T) {
	s := &Syscalls{}
	// No PMU has this type: the kernel answers ENOENT, and the error says what was asked.
	_, err := s.OpenGroup(0, []Attr{{Type: 0x7fff0000}})
	require.Error(t, err)
	var oe *OpenError
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, 0, oe.CPU)
	assert.Contains(t, err.Error(), "type=2147418112")

	// A failing member closes the leader again (no leaked descriptor).
	_, err = s.OpenGroup(0, []Attr{
		{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK},
		{Type: 0x7fff0000},
	})
	require.Error(t, err)

	_, err = s.OpenGroup(0, nil)
	assert.Error(t, err)
}

// BenchmarkGroupRead measures the real read(2) of a two-event group (the per-group cost of a
// scrape), with software events since this machine may have no uncore PMU.
func BenchmarkGroupRead(b *testing.B) {
	s := &Syscalls{}
	g, err := s.OpenGroup(0, []Attr{
		{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK},
		{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK},
	})
	if err != nil {
		b.Skipf("cannot open system-wide software events: %v", err)
	}
	defer g.Close()
	r := Reading{Values: make([]uint64, 2)}
	before := s.Count
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := g.Read(&r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.Count-before)/float64(b.N), "syscalls/op")
}
