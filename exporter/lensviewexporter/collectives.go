package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// componentNCCL is the component of a collective type's bus bandwidth series, drawn on the node's
// bandwidth axis beside the bytes of the links that carry it.
const componentNCCL = "nccl"

// collectiveBusBandwidth draws the nccl receiver's newest bus bandwidth of a collective type, per
// communicator: the best of its large messages over the node's ranks, as the diagnosis reads it
// (nodestate.CollectiveOp.BusBandwidth), in bytes/s. A small message's bus bandwidth is set by
// latency, not by the links, and is not drawn.
func (s *store) collectiveBusBandwidth(n *node, a pcommon.Map, dp pmetric.NumberDataPoint) {
	if !slices.Contains(nodestate.LargeMessageBuckets, attr(a, nodestate.AttrMessageSize)) {
		return
	}
	comm, op := attr(a, nodestate.AttrCommID), attr(a, nodestate.AttrCollective)
	sr := s.seriesFor(n, series{id: "nccl/" + comm + "/" + op, label: "NCCL " + op + "(" + comm + ") bus bw", component: componentNCCL,
		direction: op, device: comm, unit: "By/s", axis: axisBytes})
	if sr == nil {
		return
	}
	t, v := ms(dp.Timestamp()), nodestate.PointValue(dp)*1e9 // GBy/s
	if lt, lv, ok := sr.ring.last(); ok && lt == t {
		v = max(v, lv) // another rank or bucket of the same scrape
	} else if !s.stepped(sr.ring, t) {
		return
	}
	sr.ring.set(t, v)
}
