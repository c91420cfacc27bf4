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

// series is one time series of a node: a metric and one set of attribute values. Only the three
// newest samples are kept: PromQL's irate reads the two newest at or before the evaluation, and
// under load a receiver's point stamped just after an evaluation's time can reach the consumer
// before that evaluation runs (its ticker fired, the evaluation waited for the CPU or the lock);
// the third keeps the two the evaluation should read, instead of leaving it without a rate.
type series struct {
	metric string
	attrs  map[string]string
	last   sample
	prev   sample
	older  sample
	n      int
}

func (s *series) add(t int64, v float64) {
	if s.n > 0 && t <= s.last.t {
		// Already seen: the same batch reached the consumer through two pipelines, or a receiver
		// re-sent a point.
		return
	}
	s.older, s.prev, s.last = s.prev, s.last, sample{t, v}
	s.n++
}

// newest returns the kept samples, newest first.
func (s *series) newest() []sample {
	all := [3]sample{s.last, s.prev, s.older}
	return all[:min(s.n, len(all))]
}

// rate is PromQL's irate(x[window]) at now: the increase between the two newest samples at or
// before now over the time between them, with a decrease read as a counter reset to 0. ok is
// false when there are not two such samples within (now-window, now].
func (s *series) rate(now int64, window time.Duration) (float64, bool) {
	kept := s.newest()
	i := 0
	for i < len(kept) && kept[i].t > now {
		i++
	}
	if i+1 >= len(kept) {
		return 0, false
	}
	last, prev := kept[i], kept[i+1]
	if prev.t <= now-window.Nanoseconds() {
		return 0, false
	}
	d := last.v - prev.v
	if last.v < prev.v {
		d = last.v
	}
	return d / (float64(last.t-prev.t) / 1e9), true
}

// value is the newest sample at or before now if it is within the lookback, as a PromQL instant
// selector reads it: a sample stamped after now (a receiver's point that arrived while the
// evaluation at now waited for the lock) hides neither the one before it nor the series.
func (s *series) value(now int64, lookback time.Duration) (float64, bool) {
	for _, p := range s.newest() {
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
