package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// hostNameKey is the resource attribute a node is keyed by; a node agent's metrics without it
// are "this node" (key "").
// (OpenTelemetry semantic conventions, host.name).
const hostNameKey = "host.name"

// node is everything the connector keeps about one node: the newest two samples of each series
// it reads, the node's resource attributes, and what the last evaluations decided.
type node struct {
	name     string
	resource pcommon.Map
	series   map[string]*series
	lastSeen int64

	// streak counts, per verdict and device, the consecutive evaluations its condition held.
	streak map[verdictKey]int
	// nodeHeld is the node's last traffic verdict that held, deviceHeld the device verdicts that
	// hold: what the logs reported last.
	nodeHeld   string
	deviceHeld map[verdictKey]bool
	// portPeaks remembers the rates each port reported, for link_degraded.
	portPeaks map[string][]ratePoint
}

type verdictKey struct{ verdict, device string }

// ratePoint is a stretch of time over which a port reported one rate.
type ratePoint struct {
	rate        float64
	first, last int64
}

func newNode(name string) *node {
	return &node{
		name: name, resource: pcommon.NewMap(), series: map[string]*series{},
		streak: map[verdictKey]int{}, deviceHeld: map[verdictKey]bool{}, portPeaks: map[string][]ratePoint{},
	}
}

// nodeKey is the node a resource's metrics belong to.
func nodeKey(res pcommon.Resource) string {
	if v, ok := res.Attributes().Get(hostNameKey); ok {
		return v.AsString()
	}
	return ""
}

// ingest keeps the points of the metrics the diagnosis reads.
func (n *node) ingest(res pcommon.Resource, sm pmetric.ScopeMetricsSlice, seen int64) {
	if !readsAny(sm) {
		// A training job's own metrics on the same node: its resource (service.name, ...) is not
		// the node's.
		return
	}
	// The node's resource is the union of its receivers' resources (host.name, iclens.case, ...).
	res.Attributes().Range(func(k string, v pcommon.Value) bool {
		v.CopyTo(n.resource.PutEmpty(k))
		return true
	})
	n.lastSeen = seen
	for i := range sm.Len() {
		ms := sm.At(i).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			name := m.Name()
			if !counterMetrics[name] && !gaugeMetrics[name] {
				continue
			}
			numberPoints(m, func(dp pmetric.NumberDataPoint) {
				key := seriesKey(name, dp.Attributes())
				s := n.series[key]
				if s == nil {
					s = &series{metric: name, attrs: map[string]string{}}
					dp.Attributes().Range(func(k string, v pcommon.Value) bool {
						s.attrs[k] = v.AsString()
						return true
					})
					n.series[key] = s
				}
				s.add(int64(dp.Timestamp()), pointValue(dp))
			})
		}
	}
}

// forget drops the series that have not reported within the lookback, so that a device that
// disappeared (or a series with a changed attribute) does not stay in memory.
func (n *node) forget(now, lookback int64) {
	for k, s := range n.series {
		if s.last.t <= now-lookback {
			delete(n.series, k)
		}
	}
}

// rememberRate records a port's current rate and returns the highest it reported within memory
// (PromQL max_over_time(rate[memory])).
func (n *node) rememberRate(port string, rate float64, t, memory int64) float64 {
	pts := n.portPeaks[port]
	if k := len(pts) - 1; k >= 0 && pts[k].rate == rate {
		if t > pts[k].last {
			pts[k].last = t
		}
	} else {
		pts = append(pts, ratePoint{rate: rate, first: t, last: t})
	}
	// Stretches that ended before the memory window are forgotten.
	keep := pts[:0]
	for _, p := range pts {
		if p.last > t-memory {
			keep = append(keep, p)
		}
	}
	n.portPeaks[port] = keep
	peak := rate
	for _, p := range keep {
		peak = max(peak, p.rate)
	}
	return peak
}

// readsAny reports whether sm holds a metric the diagnosis reads.
func readsAny(sm pmetric.ScopeMetricsSlice) bool {
	for i := range sm.Len() {
		ms := sm.At(i).Metrics()
		for j := range ms.Len() {
			if name := ms.At(j).Name(); counterMetrics[name] || gaugeMetrics[name] {
				return true
			}
		}
	}
	return false
}
