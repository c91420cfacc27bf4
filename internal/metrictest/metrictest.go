// Package metrictest finds metrics and number data points in pmetric.Metrics, for the tests of
// every receiver and of the end-to-end paths.
package metrictest // import "github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"

import (
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// Metrics returns every metric named name, across resources and scopes.
func Metrics(md pmetric.Metrics, name string) []pmetric.Metric {
	var out []pmetric.Metric
	eachMetric(md, func(m pmetric.Metric) {
		if m.Name() == name {
			out = append(out, m)
		}
	})
	return out
}

// Points returns the number data points of every metric named name (sums and gauges).
func Points(md pmetric.Metrics, name string) []pmetric.NumberDataPoint {
	var out []pmetric.NumberDataPoint
	for _, m := range Metrics(md, name) {
		nodestate.NumberPoints(m, func(dp pmetric.NumberDataPoint) { out = append(out, dp) })
	}
	return out
}

// Find returns the first point of metric name whose attributes include every key of want with
// the same value (attribute values compared as their raw Go values: string, int64, ...).
func Find(md pmetric.Metrics, name string, want map[string]any) (pmetric.NumberDataPoint, bool) {
	for _, dp := range Points(md, name) {
		if Matches(dp, want) {
			return dp, true
		}
	}
	return pmetric.NewNumberDataPoint(), false
}

// Matches reports whether the point's attributes include every key of want with its value.
func Matches(dp pmetric.NumberDataPoint, want map[string]any) bool {
	for k, v := range want {
		got, ok := dp.Attributes().Get(k)
		if !ok || got.AsRaw() != v {
			return false
		}
	}
	return true
}

// Select returns every point of metric name whose attributes include want (see Find).
func Select(md pmetric.Metrics, name string, want map[string]any) []pmetric.NumberDataPoint {
	var out []pmetric.NumberDataPoint
	for _, dp := range Points(md, name) {
		if Matches(dp, want) {
			out = append(out, dp)
		}
	}
	return out
}

// ByType returns the number data points of every metric of type typ (gauge or sum), by metric
// name.
func ByType(md pmetric.Metrics, typ pmetric.MetricType) map[string][]pmetric.NumberDataPoint {
	out := map[string][]pmetric.NumberDataPoint{}
	eachMetric(md, func(m pmetric.Metric) {
		if m.Type() == typ && out[m.Name()] == nil {
			out[m.Name()] = Points(md, m.Name())
		}
	})
	return out
}

// eachMetric calls f with every metric of md, across resources and scopes.
func eachMetric(md pmetric.Metrics, f func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				f(ms.At(k))
			}
		}
	}
}
