package counter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func ts(s int64) pcommon.Timestamp { return pcommon.Timestamp(s * 1e9) }

func TestMonotonicReset(t *testing.T) {
	tr := NewTracker[string]()
	spec := Spec{Kind: Monotonic}

	p := tr.Observe("a", 100, spec, ts(10))
	assert.Equal(t, Point{Value: 100, Start: ts(10), Status: First}, p)

	p = tr.Observe("a", 250, spec, ts(20))
	assert.Equal(t, Point{Value: 250, Start: ts(10), Status: OK}, p)

	// perfquery -R or a driver reload: the counter goes back to a small value. The series must
	// restart (new start timestamp) instead of reporting -240.
	p = tr.Observe("a", 10, spec, ts(30))
	assert.Equal(t, Point{Value: 10, Start: ts(20), Status: Reset}, p)

	p = tr.Observe("a", 15, spec, ts(40))
	assert.Equal(t, Point{Value: 15, Start: ts(20), Status: OK}, p)
	assert.True(t, p.Report())
}

func TestSaturatingNarrowCounter(t *testing.T) {
	tr := NewTracker[string]()
	// port_xmit_wait is 32 bits wide and saturates (node_exporter's mlx4_0 fixture holds 4294967295).
	spec := Spec{Kind: Saturating, Width: 32}

	p := tr.Observe("w", 4294967295, spec, ts(1))
	assert.Equal(t, Saturated, p.Status)
	assert.False(t, p.Report())

	tr2 := NewTracker[string]()
	assert.Equal(t, First, tr2.Observe("w", 4294967000, spec, ts(1)).Status)
	p = tr2.Observe("w", 4294967295, spec, ts(2))
	assert.Equal(t, Saturated, p.Status, "reaching all ones is saturation, not 295 ticks of traffic")
	assert.Equal(t, Saturated, tr2.Observe("w", 4294967295, spec, ts(3)).Status)

	// Cleared by an operator: a new series.
	p = tr2.Observe("w", 7, spec, ts(4))
	assert.Equal(t, Point{Value: 7, Start: ts(3), Status: Reset}, p)

	// A 4-bit error counter saturates at 15.
	assert.Equal(t, Saturated, tr2.Observe("e", 15, Spec{Kind: Saturating, Width: 4}, ts(1)).Status)
	assert.Equal(t, First, tr2.Observe("f", 14, Spec{Kind: Saturating, Width: 4}, ts(1)).Status)

	// A value above 2^Width-1 proves the counter wider than assumed: it is data, not saturation.
	assert.Equal(t, Point{Value: 1 << 40, Start: ts(1), Status: First}, tr2.Observe("g", 1<<40, spec, ts(1)))
}

func TestWrappingCounter(t *testing.T) {
	tr := NewTracker[int]()
	// A 36-bit free-running counter (SKX IIO bandwidth) that wraps between two readings.
	spec := Spec{Kind: Wrapping, Width: 36}
	const max36 = 1<<36 - 1

	p := tr.Observe(1, max36-99, spec, ts(1))
	assert.Equal(t, Point{Value: max36 - 99, Start: ts(1), Status: First}, p)

	p = tr.Observe(1, 50, spec, ts(2)) // wrapped: 100 to reach zero, then 50
	assert.Equal(t, Point{Value: max36 - 99 + 150, Start: ts(1), Status: OK}, p)

	p = tr.Observe(1, 60, spec, ts(3))
	assert.Equal(t, uint64(max36-99+160), p.Value)
	assert.Equal(t, ts(1), p.Start, "a wrap is not a reset")

	// 64-bit wrapping counters work too: max+5 wraps to 4 in 64-bit arithmetic.
	tr.Observe(2, ^uint64(0), Spec{Kind: Wrapping, Width: 64}, ts(1))
	assert.Equal(t, uint64(4), tr.Observe(2, 4, Spec{Kind: Wrapping, Width: 64}, ts(2)).Value)
}

func TestSweepForgetsVanishedSeries(t *testing.T) {
	tr := NewTracker[string]()
	spec := Spec{Kind: Monotonic}
	tr.Observe("a", 1, spec, ts(1))
	tr.Observe("b", 1, spec, ts(1))
	tr.Sweep()
	tr.Observe("a", 2, spec, ts(2))
	tr.Sweep()
	assert.Equal(t, 1, tr.Len())

	// "b" comes back: it is a new series with its own start.
	p := tr.Observe("b", 5, spec, ts(3))
	assert.Equal(t, Point{Value: 5, Start: ts(3), Status: First}, p)
}

func TestStatusString(t *testing.T) {
	assert.Equal(t, "saturated", Saturated.String())
	assert.Equal(t, "reset", Reset.String())
}

func TestStartTimes(t *testing.T) {
	var resets []pcommon.Timestamp
	st := newStartTimes(func(ts pcommon.Timestamp) { resets = append(resets, ts) })
	st.Use(ts(1))
	st.Use(ts(1))
	st.Use(ts(2))
	st.Use(ts(1))
	assert.Equal(t, []pcommon.Timestamp{ts(1), ts(2), ts(1)}, resets, "the builder is reset only when the start changes")
}

// TestSinceFirstReading: the start-time rule (metadata/start-time.md). A point's value is what
// was counted since its start time: the first reading is the baseline (0 at the time it was
// taken), a reset restarts the series at the previous reading's time with the raw value.
func TestSinceFirstReading(t *testing.T) {
	tr := NewTracker[string](SinceFirstReading())
	mono := Spec{Kind: Monotonic}
	assert.Equal(t, Point{Value: 0, Start: ts(10), Status: First}, tr.Observe("a", 5_000_000_000_000, mono, ts(10)),
		"a since-boot counter's first point is 0, not the bytes counted before the series began")
	assert.Equal(t, Point{Value: 250, Start: ts(10), Status: OK}, tr.Observe("a", 5_000_000_000_250, mono, ts(20)))
	assert.Equal(t, Point{Value: 7, Start: ts(20), Status: Reset}, tr.Observe("a", 7, mono, ts(30)),
		"after a reset the counter holds what it counted since, which began after the previous reading")
	assert.Equal(t, Point{Value: 9, Start: ts(20), Status: OK}, tr.Observe("a", 9, mono, ts(40)))

	wrap := Spec{Kind: Wrapping, Width: 36}
	const max36 = 1<<36 - 1
	assert.Equal(t, uint64(0), tr.Observe("w", max36-99, wrap, ts(1)).Value)
	assert.Equal(t, Point{Value: 150, Start: ts(1), Status: OK}, tr.Observe("w", 50, wrap, ts(2)))

	sat := Spec{Kind: Saturating, Width: 32}
	assert.Equal(t, Point{Value: 0, Start: ts(1), Status: First}, tr.Observe("s", 100, sat, ts(1)))
	assert.Equal(t, Point{Value: 20, Start: ts(1), Status: OK}, tr.Observe("s", 120, sat, ts(2)))
	assert.False(t, tr.Observe("s", 1<<32-1, sat, ts(3)).Report())

	// A series that vanished and comes back starts from its new first reading.
	tr.Sweep()
	tr.Sweep()
	assert.Equal(t, Point{Value: 0, Start: ts(50), Status: First}, tr.Observe("a", 1000, mono, ts(50)))
}

func TestHoldKeepsAFailedSeries(t *testing.T) {
	tr := NewTracker[string](SinceFirstReading())
	spec := Spec{Kind: Monotonic}
	tr.Observe("a", 100, spec, ts(1))
	tr.Sweep()
	tr.Hold("a") // the read failed this time
	tr.Sweep()
	assert.Equal(t, Point{Value: 50, Start: ts(1), Status: OK}, tr.Observe("a", 150, spec, ts(3)), "the series goes on")
	tr.Hold("b") // unknown: nothing to hold
	assert.Equal(t, 1, tr.Len())
}
