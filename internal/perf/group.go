// Package perf opens and reads perf_event_open counters and describes the PMUs that sysfs lists
// under /sys/bus/event_source/devices. The syscall sits behind Opener so that receivers can be
// tested with a fake counter source producing known counts; the real implementation (Syscalls)
// is tested on any Linux machine with software events.
package perf // import "github.com/otelcol-iclens/otelcol-iclens/internal/perf"

// Opener opens counter groups. A group's events are scheduled together (all or none counting:
// perf_event_open(2), group_fd) and read with one syscall.
type Opener interface {
	// OpenGroup opens attrs as one group on cpu, for all processes (pid -1), which is what uncore
	// PMUs require (uncore.c uncore_pmu_event_init rejects per-task events and cpu < 0). The
	// group counts from the moment it is returned.
	OpenGroup(cpu int, attrs []Attr) (Group, error)
}

// Group is a set of counters opened together.
type Group interface {
	// Read fills r with the current values, one per attr in open order, and the group's
	// enabled/running times. r.Values must have room for every member.
	Read(r *Reading) error
	Close() error
}

// Reading is one read of a group.
type Reading struct {
	// Values are the raw counts as the kernel accumulates them: 64-bit, whatever the hardware
	// counter's width (uncore.c uncore_perf_event_update extends each delta into event->count).
	Values []uint64
	// Enabled and Running are the nanoseconds the group was enabled and actually counting. They
	// differ when the kernel multiplexes the group with others.
	Enabled, Running uint64
}

// Multiplexed reports whether the group did not count all the time it was enabled.
func (r *Reading) Multiplexed() bool { return r.Running < r.Enabled }

// RunningRatio is time_running/time_enabled: 1 when the group counted all the time, 0 when it
// never got a counter.
func (r *Reading) RunningRatio() float64 {
	if r.Enabled == 0 {
		return 1
	}
	return float64(r.Running) / float64(r.Enabled)
}

// Scaled returns value i extrapolated over the time the group was enabled, as perf stat does
// ("values can be used to scale an estimated value", perf_event_open(2) "Reading results").
// ok is false when the group never ran, so there is nothing to extrapolate from.
func (r *Reading) Scaled(i int) (v uint64, ok bool) {
	raw := r.Values[i]
	if r.Running == 0 {
		return 0, raw == 0 && r.Enabled == 0
	}
	if r.Running >= r.Enabled {
		return raw, true
	}
	return uint64(float64(raw) * float64(r.Enabled) / float64(r.Running)), true
}
