package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// counterState is the reference point of one cumulative series: the rate of the next point is
// taken against it. A cumulative sum restarts when its start time changes or its value goes
// down (a counter reset the receiver reported as a new series, internal/counter): no rate is
// drawn across a restart.
type counterState struct {
	start pcommon.Timestamp
	t     int64 // unix milliseconds of the reference point
	ns    pcommon.Timestamp
	v     float64
}

// rate returns the per-second rate between the reference point and (start, ts, v), once at
// least minStep has passed since the reference; the point then becomes the reference. ok is
// false for the first point of a series, after a restart, and before minStep has passed (the
// reference stays, so a fast collection interval yields one rate per step over the whole step).
func (c *counterState) rate(start, ts pcommon.Timestamp, v float64, minStepNs int64) (r float64, ok bool) {
	if c.ns == 0 || start != c.start || v < c.v || ts < c.ns {
		*c = counterState{start: start, t: ts.AsTime().UnixMilli(), ns: ts, v: v}
		return 0, false
	}
	dt := int64(ts - c.ns)
	if dt < minStepNs || dt <= 0 {
		return 0, false
	}
	r = (v - c.v) / (float64(dt) / 1e9)
	*c = counterState{start: start, t: ts.AsTime().UnixMilli(), ns: ts, v: v}
	return r, true
}
