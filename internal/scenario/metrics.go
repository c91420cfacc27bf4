package scenario // import "github.com/otelcol-iclens/otelcol-iclens/internal/scenario"

import (
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// doubleCounters are the counters the receivers report as doubles (value_type double in their
// metadata.yaml): seconds, not bytes or events.
var doubleCounters = map[string]bool{"rnic.burst.time_above": true}

// Metrics turns simulated points into what the receivers send: one resource per node (host.name,
// iclens.case as the demo's resource processor sets them), counters as cumulative sums.
func Metrics(host, caseName string, pts []Point, at time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	if host != "" {
		rm.Resource().Attributes().PutStr("host.name", host)
	}
	if caseName != "" {
		rm.Resource().Attributes().PutStr("iclens.case", caseName)
	}
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	byName := map[string]pmetric.Metric{}
	ts := pcommon.NewTimestampFromTime(at)
	for _, p := range pts {
		m, ok := byName[p.Metric]
		if !ok {
			m = ms.AppendEmpty()
			m.SetName(p.Metric)
			if p.Counter {
				m.SetEmptySum().SetIsMonotonic(true)
				m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			} else {
				m.SetEmptyGauge()
			}
			byName[p.Metric] = m
		}
		var dp pmetric.NumberDataPoint
		if p.Counter {
			dp = m.Sum().DataPoints().AppendEmpty()
			if doubleCounters[p.Metric] {
				dp.SetDoubleValue(p.Value)
			} else {
				dp.SetIntValue(int64(p.Value))
			}
		} else {
			dp = m.Gauge().DataPoints().AppendEmpty()
			dp.SetDoubleValue(p.Value)
		}
		dp.SetTimestamp(ts)
		for k, v := range p.Attrs {
			switch k {
			case "priority":
				n, _ := strconv.Atoi(v)
				dp.Attributes().PutInt(k, int64(n))
			case "burst.share":
				x, _ := strconv.ParseFloat(v, 64)
				dp.Attributes().PutDouble(k, x)
			default:
				dp.Attributes().PutStr(k, v)
			}
		}
	}
	return md
}
