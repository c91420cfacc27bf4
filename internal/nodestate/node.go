package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Node is what is kept of one node's metrics: the newest two samples of each series a State is
// made of, and the node's resource (the union of its receivers' resources).
type Node struct {
	Name     string
	Resource pcommon.Map
	// LastSeen is when the node last sent a metric of its state (ns since the epoch, the
	// consumer's clock).
	LastSeen int64

	series map[string]*series
	limits Limits
}

// Limits bound what a Node takes, whatever the pipeline sends.
type Limits struct {
	// MaxSeries bounds the series of one node (0: no bound); further series are not kept.
	MaxSeries int
	// MaxSkew refuses points stamped further than this from the consumer's clock, ahead or
	// behind (0: none refused): one point stamped years ahead would otherwise stay the newest
	// sample of its series, and every later one would be read as already seen.
	MaxSkew time.Duration
}

// Ingested counts what one Ingest did not keep.
type Ingested struct {
	// Skewed points were stamped further than MaxSkew from now; Dropped found the node full.
	Skewed, Dropped int
}

// New returns an empty node.
func New(name string, limits Limits) *Node {
	return &Node{Name: name, Resource: pcommon.NewMap(), series: map[string]*series{}, limits: limits}
}

// Key is the node a resource's metrics belong to: its host.name, "" without one.
func Key(res pcommon.Resource) string {
	if v, ok := res.Attributes().Get(HostNameKey); ok {
		return v.AsString()
	}
	return ""
}

// ReadsAny reports whether sm holds a metric of a node's state: a training job's own metrics on
// the same node (service.name, ...) are not the node's.
func ReadsAny(sm pmetric.ScopeMetricsSlice) bool {
	for i := range sm.Len() {
		ms := sm.At(i).Metrics()
		for j := range ms.Len() {
			if Reads(ms.At(j).Name()) {
				return true
			}
		}
	}
	return false
}

// Ingest keeps the points of sm that a State reads; now is the consumer's clock (ns).
func (n *Node) Ingest(res pcommon.Resource, sm pmetric.ScopeMetricsSlice, now int64) Ingested {
	var out Ingested
	if !ReadsAny(sm) {
		return out
	}
	res.Attributes().Range(func(k string, v pcommon.Value) bool {
		v.CopyTo(n.Resource.PutEmpty(k))
		return true
	})
	n.LastSeen = now
	skew := n.limits.MaxSkew.Nanoseconds()
	for i := range sm.Len() {
		ms := sm.At(i).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			name := m.Name()
			if !Reads(name) {
				continue
			}
			NumberPoints(m, func(dp pmetric.NumberDataPoint) {
				t := int64(dp.Timestamp())
				if skew > 0 && (t > now+skew || t < now-skew) {
					out.Skewed++
					return
				}
				key := seriesKey(name, dp.Attributes())
				s := n.series[key]
				if s == nil {
					if n.limits.MaxSeries > 0 && len(n.series) >= n.limits.MaxSeries {
						out.Dropped++
						return
					}
					s = &series{metric: name, attrs: map[string]string{}}
					dp.Attributes().Range(func(k string, v pcommon.Value) bool {
						s.attrs[k] = v.AsString()
						return true
					})
					n.series[key] = s
				}
				s.add(t, PointValue(dp))
			})
		}
	}
	return out
}

// Forget drops the series that have not reported within the lookback, so that a device that
// disappeared (or a series with a changed attribute) does not stay in memory.
func (n *Node) Forget(now int64, lookback time.Duration) {
	for k, s := range n.series {
		if s.last.t <= now-lookback.Nanoseconds() {
			delete(n.series, k)
		}
	}
}

// Series is how many series the node keeps.
func (n *Node) Series() int { return len(n.series) }
