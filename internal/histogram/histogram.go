// Package histogram is an explicit-bucket histogram as OpenTelemetry's metrics data model has it
// (opentelemetry-proto metrics.proto HistogramDataPoint: bucket i counts the values v with
// bounds[i-1] < v <= bounds[i], the last bucket those above the last bound), kept cumulatively and
// written into pdata. The receivers that build histograms by hand (mdatagen's generated histogram
// code does not compile for them) share it: the nccl receiver's bus bandwidth and execution time,
// the rnic receiver's burst utilization.
package histogram // import "github.com/otelcol-iclens/otelcol-iclens/internal/histogram"

import (
	"math"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Explicit is the state of one cumulative explicit-bucket histogram: a count per bucket (one more
// than the bounds), the number of values, their sum, and the lowest and highest (0 before the
// first value).
type Explicit struct {
	Counts        []uint64
	Count         uint64
	Sum, Min, Max float64
}

// Observe adds v to the bucket of bounds it falls in.
func (h *Explicit) Observe(bounds []float64, v float64) {
	if h.Counts == nil {
		h.Counts = make([]uint64, len(bounds)+1)
	}
	if h.Count == 0 {
		h.Min, h.Max = v, v
	}
	h.Counts[sort.SearchFloat64s(bounds, v)]++
	h.Count++
	h.Sum += v
	h.Min = math.Min(h.Min, v)
	h.Max = math.Max(h.Max, v)
}

// Copy returns h with counts of its own.
func (h Explicit) Copy() Explicit {
	h.Counts = append([]uint64(nil), h.Counts...)
	return h
}

// Fill writes h, counted since start, into dp at ts.
func (h Explicit) Fill(dp pmetric.HistogramDataPoint, bounds []float64, start, ts pcommon.Timestamp) {
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.SetCount(h.Count)
	dp.SetSum(h.Sum)
	if h.Count > 0 {
		dp.SetMin(h.Min)
		dp.SetMax(h.Max)
	}
	dp.ExplicitBounds().FromRaw(bounds)
	counts := h.Counts
	if counts == nil {
		counts = make([]uint64, len(bounds)+1)
	}
	dp.BucketCounts().FromRaw(counts)
}

// AddCumulative appends an empty cumulative histogram metric to sm.
func AddCumulative(sm pmetric.ScopeMetrics, name, unit, description string) pmetric.Histogram {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(description)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return h
}
