// Package counter turns raw hardware counter readings into OpenTelemetry cumulative sums.
//
// Hardware counters come in three kinds, and each needs different handling:
//
//   - Monotonic counters (64-bit sysfs and ethtool counters, 32-bit mlx5 Q counters printed as
//     u64): a decrease can only mean a reset (driver reload, `perfquery -R`, a device that came
//     back). The series restarts with a new start timestamp; no negative delta is ever produced.
//   - Saturating counters (InfiniBand PortCounters: "instead of overflowing, they shall stop at all
//     ones", IBA 1.8 §16.1.3.5): a value of all ones means "unknown, at least this much". Such a
//     reading is flagged and not reported, because the rate it implies is not traffic.
//   - Wrapping counters (free-running uncore counters, 36 or 48 bits): a decrease is a wrap. The
//     tracker extends them to 64 bits by adding the modular difference; a reset cannot be told
//     apart from a wrap, so readers must be sampled faster than the counter wraps.
//
// The start-time rule, the same for every receiver (metadata/start-time.md), is what a tracker
// made with SinceFirstReading applies: a point's value is
// what was counted since its start time (OpenTelemetry data model, "Sums": a cumulative stream
// reports the total since its start). Hardware counters count since boot, driver load or device
// reset, a moment no receiver can prove, so the first reading of a series is its baseline: the
// first point is 0 with start = the time of that reading, and every later point is the reading
// minus the baseline. After a reset the counter counts from 0 again, somewhere after the previous
// reading: the series restarts with start = the previous reading's time and the raw value.
// This is also what the GCP ops collector's dcgmreceiver reports (util.go:
// cumulativeValue = intValue - initialCumulativeValue).
package counter // import "github.com/otelcol-iclens/otelcol-iclens/internal/counter"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Kind says how a counter behaves at the end of its range.
type Kind uint8

const (
	// Monotonic counters only ever grow; a decrease is a reset.
	Monotonic Kind = iota
	// Saturating counters stop at 2^Width-1.
	Saturating
	// Wrapping counters roll over to zero after 2^Width-1.
	Wrapping
)

// Spec describes one counter's range.
type Spec struct {
	Kind Kind
	// Width in bits, 1 to 64. Monotonic counters ignore it.
	Width uint8
}

// max returns the largest value the counter can hold.
func (s Spec) max() uint64 {
	if s.Width == 0 || s.Width >= 64 {
		return ^uint64(0)
	}
	return 1<<s.Width - 1
}

// Status says what an observation meant.
type Status uint8

const (
	// OK: the value continues the series.
	OK Status = iota
	// First: the first observation of this series; Start is when it was made.
	First
	// Reset: the counter went backwards; the series restarts with a new Start.
	Reset
	// Saturated: the counter is stuck at its maximum; do not report it.
	Saturated
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case First:
		return "first"
	case Reset:
		return "reset"
	case Saturated:
		return "saturated"
	}
	return "unknown"
}

// Point is the value to report for one observation.
type Point struct {
	// Value is the cumulative count since Start, in the counter's own unit: the reading minus the
	// series' first reading (0 for the first point), or the raw reading after a reset.
	Value uint64
	// Start is the start timestamp of the cumulative series.
	Start  pcommon.Timestamp
	Status Status
}

// Report says whether the point carries a value to emit.
func (p Point) Report() bool { return p.Status != Saturated }

type series struct {
	start pcommon.Timestamp
	last  uint64 // last raw reading
	base  uint64 // the reading that Value counts from: the first one, 0 after a reset
	prev  pcommon.Timestamp
	total uint64 // Wrapping: the value extended to 64 bits (from 0 at the first reading under SinceFirstReading)
	gen   uint32 // the sweep generation in which the series was last seen
}

// Tracker keeps the state of many counter series, keyed by K. It is not safe for concurrent use.
type Tracker[K comparable] struct {
	series map[K]*series
	gen    uint32
	// sinceFirst applies the start-time rule: values count from the first reading.
	sinceFirst bool
}

// Option configures a Tracker.
type Option func(*options)

type options struct{ sinceFirst bool }

// SinceFirstReading makes the tracker apply the start-time rule of the package comment: the first
// reading of a series is its baseline (first point 0), later points report what was counted
// since. Without it a point carries the raw reading, which counts from an unknown moment before
// the start time: the form the rnic receiver still emits until it moves to the rule.
func SinceFirstReading() Option { return func(o *options) { o.sinceFirst = true } }

// NewTracker returns an empty tracker.
func NewTracker[K comparable](opts ...Option) *Tracker[K] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Tracker[K]{series: map[K]*series{}, sinceFirst: o.sinceFirst}
}

// Observe records a raw reading taken at now and returns what to report.
func (t *Tracker[K]) Observe(key K, raw uint64, spec Spec, now pcommon.Timestamp) Point {
	s, ok := t.series[key]
	if !ok {
		s = &series{start: now, last: raw, prev: now, gen: t.gen}
		if t.sinceFirst {
			s.base = raw
		} else {
			s.total = raw
		}
		t.series[key] = s
		if spec.Kind == Saturating && raw == spec.max() {
			return Point{Value: raw - s.base, Start: now, Status: Saturated}
		}
		return Point{Value: raw - s.base, Start: now, Status: First}
	}
	s.gen = t.gen
	prevTime := s.prev
	s.prev = now

	switch spec.Kind {
	case Wrapping:
		s.total += (raw - s.last) & spec.max()
		s.last = raw
		return Point{Value: s.total, Start: s.start, Status: OK}

	case Saturating:
		// Exactly all ones. A larger value proves the counter wider than its Spec said (the
		// InfiniBand PMA table without unicast counters exists in a 32-bit and a 64-bit flavour),
		// so it is taken as an ordinary reading.
		if raw == spec.max() {
			s.last = raw
			return Point{Value: raw - s.base, Start: s.start, Status: Saturated}
		}
	}

	status := OK
	if raw < s.last {
		// The counter restarted somewhere between the previous reading and this one; everything it
		// now holds was counted after prevTime.
		s.start = prevTime
		s.base = 0
		status = Reset
	}
	s.last = raw
	return Point{Value: raw - s.base, Start: s.start, Status: status}
}

// Hold keeps a series whose reading failed this time (a read error that costs one scrape), so
// that the next Sweep does not forget it and its next reading continues the series.
func (t *Tracker[K]) Hold(key K) {
	if s, ok := t.series[key]; ok {
		s.gen = t.gen
	}
}

// Sweep forgets every series not observed since the previous Sweep, so that a device that
// disappears does not keep its state forever (and starts a new series if it comes back).
func (t *Tracker[K]) Sweep() {
	for k, s := range t.series {
		if s.gen != t.gen {
			delete(t.series, k)
		}
	}
	t.gen++
}

// Len returns the number of series tracked.
func (t *Tracker[K]) Len() int { return len(t.series) }
