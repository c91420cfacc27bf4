package counter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// recorded is what a fake builder saw: each value with the start time set when it was recorded.
type recorded struct {
	v     int64
	start pcommon.Timestamp
}

func TestSeriesSetsStartOnEveryPoint(t *testing.T) {
	var cur pcommon.Timestamp
	var got []recorded
	s := NewSeries[string](func(ts pcommon.Timestamp) { cur = ts }, 5, SinceFirstReading())
	rec := func(v int64) { got = append(got, recorded{v, cur}) }

	s.Record("a", 100, Spec{Kind: Monotonic}, 10, rec)
	s.Gauge(func() { got = append(got, recorded{-1, cur}) })
	s.Record("b", 7, Spec{Kind: Monotonic}, 20, rec)
	s.Record("a", 150, Spec{Kind: Monotonic}, 30, rec)
	s.Gauge(func() { got = append(got, recorded{-1, cur}) })
	// a reset: the series restarts at the previous reading's time
	s.Record("a", 3, Spec{Kind: Monotonic}, 40, rec)

	assert.Equal(t, []recorded{{0, 10}, {-1, 5}, {0, 20}, {50, 10}, {-1, 5}, {3, 30}}, got)
}

func TestSeriesSaturatedRecordsNothing(t *testing.T) {
	var n int
	s := NewSeries[string](func(pcommon.Timestamp) {}, 0)
	p := s.Record("a", 1<<32-1, Spec{Kind: Saturating, Width: 32}, 1, func(int64) { n++ })
	assert.Equal(t, Saturated, p.Status)
	assert.Zero(t, n)
}

func TestAccumulatorCarries(t *testing.T) {
	var a Accumulator
	for range 10 {
		a.Add(0.25)
	}
	assert.EqualValues(t, 2, a.Total())
	a.AddCounts(3, 64)
	assert.EqualValues(t, 2+192, a.Total())
	a.AddCounts(3, 0.5) // 1.5 + the 0.5 carried from the quarters
	assert.EqualValues(t, 196, a.Total())
	a.Add(-1)
	assert.EqualValues(t, 196, a.Total())
}

func TestAccumulatorExactAbove2To53(t *testing.T) {
	var a Accumulator
	a.AddCounts(1<<54+1, 64)
	assert.EqualValues(t, uint64(1<<54+1)*64, a.Total())
}
