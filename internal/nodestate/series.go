package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// sample is one point: its time (ns since the epoch) and value.
type sample struct {
	t int64
	v float64
}

// series is one time series of a node: a metric and one set of attribute values. Only the two
// newest samples are kept, which is all PromQL's irate reads.
type series struct {
	metric string
	attrs  map[string]string
	last   sample
	prev   sample
	n      int
}

func (s *series) add(t int64, v float64) {
	if s.n > 0 && t <= s.last.t {
		// Already seen: the same batch reached the consumer through two pipelines, or a receiver
		// re-sent a point.
		return
	}
	s.prev, s.last = s.last, sample{t, v}
	s.n++
}

// rate is PromQL's irate(x[window]) at now: the increase between the two newest samples over the
// time between them, with a decrease read as a counter reset to 0. ok is false when either sample
// is outside (now-window, now].
func (s *series) rate(now int64, window time.Duration) (float64, bool) {
	if s.n < 2 || s.prev.t <= now-window.Nanoseconds() || s.last.t > now {
		return 0, false
	}
	d := s.last.v - s.prev.v
	if s.last.v < s.prev.v {
		d = s.last.v
	}
	return d / (float64(s.last.t-s.prev.t) / 1e9), true
}

// value is the newest sample at or before now if it is within the lookback, as a PromQL instant
// selector reads it: a sample stamped after now (a receiver's point that arrived while the
// evaluation at now waited for the lock) hides neither the one before it nor the series.
func (s *series) value(now int64, lookback time.Duration) (float64, bool) {
	for i, p := range [2]sample{s.last, s.prev} {
		if i >= s.n {
			break
		}
		if p.t <= now {
			return p.v, p.t > now-lookback.Nanoseconds()
		}
	}
	return 0, false
}

// seriesKey identifies a series by metric name and every attribute, as Prometheus does by labels.
func seriesKey(metric string, attrs pcommon.Map) string {
	keys := make([]string, 0, attrs.Len())
	attrs.Range(func(k string, _ pcommon.Value) bool {
		keys = append(keys, k)
		return true
	})
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(metric)
	for _, k := range keys {
		v, _ := attrs.Get(k)
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v.AsString())
	}
	return b.String()
}

// NumberPoints calls f for every point of a sum or gauge metric.
func NumberPoints(m pmetric.Metric, f func(pmetric.NumberDataPoint)) {
	var dps pmetric.NumberDataPointSlice
	switch m.Type() {
	case pmetric.MetricTypeSum:
		dps = m.Sum().DataPoints()
	case pmetric.MetricTypeGauge:
		dps = m.Gauge().DataPoints()
	default:
		return
	}
	for i := range dps.Len() {
		f(dps.At(i))
	}
}

// PointValue is a number point's value, whichever type it holds.
func PointValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}
