package histogram

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestObserveBuckets: bucket i holds bounds[i-1] < v <= bounds[i] (metrics.proto
// HistogramDataPoint.explicit_bounds), a value on a bound in the bucket below it, above the last
// bound in the last bucket.
func TestObserveBuckets(t *testing.T) {
	bounds := []float64{1, 10}
	var h Explicit
	for _, v := range []float64{0.5, 1, 5, 10, 11} {
		h.Observe(bounds, v)
	}
	assert.Equal(t, []uint64{2, 2, 1}, h.Counts)
	assert.EqualValues(t, 5, h.Count)
	assert.Equal(t, 27.5, h.Sum)
	assert.Equal(t, 0.5, h.Min)
	assert.Equal(t, 11.0, h.Max)

	c := h.Copy()
	h.Observe(bounds, 2)
	assert.Equal(t, []uint64{2, 2, 1}, c.Counts, "a copy keeps its counts")
}

// TestFill: the point carries the state and its bounds; an empty histogram has no min or max and a
// zero count per bucket.
func TestFill(t *testing.T) {
	sm := pmetric.NewScopeMetrics()
	hist := AddCumulative(sm, "x", "1", "d")
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, hist.AggregationTemporality())
	var h Explicit
	h.Observe([]float64{1}, 3)
	h.Fill(hist.DataPoints().AppendEmpty(), []float64{1}, pcommon.Timestamp(1), pcommon.Timestamp(2))
	Explicit{}.Fill(hist.DataPoints().AppendEmpty(), []float64{1}, 1, 2)
	full, empty := hist.DataPoints().At(0), hist.DataPoints().At(1)
	assert.Equal(t, []uint64{0, 1}, full.BucketCounts().AsRaw())
	assert.Equal(t, 3.0, full.Max())
	assert.Equal(t, pcommon.Timestamp(1), full.StartTimestamp())
	assert.Equal(t, []uint64{0, 0}, empty.BucketCounts().AsRaw())
	assert.False(t, empty.HasMin())
}
