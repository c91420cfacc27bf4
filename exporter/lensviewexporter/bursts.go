package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// What the receivers' fast samplers saw inside each collection interval (bursts.period): a
// port's peak window rate, drawn as a dotted line beside the port's average on the bandwidth
// chart, and the share of time the port ran at or above a share of its line rate, on the chart's
// right axis. A ring AllReduce at line rate for 40 ms of every 600 ms averages 7 %: the average
// alone hides a saturated link, the peak and the time above show it. The cpuuncore receiver's
// peaks (host memory, CPU PCIe) are per memory controller or IIO stack, where the chart sums
// their averages into one line a direction: the peaks of several devices, each over its own
// window, do not add up, so the chart draws the busiest device's.

// The kinds of line beside the averages.
const (
	kindPeak  = "peak"
	kindAbove = "time_above"
)

// burstPeak draws a device's peak window rate (rnic.burst.peak_rate, cpuuncore.burst.peak_rate,
// gpu.burst.peak_rate: gauges) beside its average; where the averages of a component's devices sum into one line, the
// highest of their peaks at each time.
func (s *store) burstPeak(n *node, a pcommon.Map, dp pmetric.NumberDataPoint) {
	comp, dir, dev := attr(a, nodestate.AttrComponent), attr(a, nodestate.AttrDirection), attr(a, nodestate.AttrDevice)
	id, label, summed := bandwidthSeries(comp, dir, dev)
	label += " peak/" + attr(a, nodestate.AttrBurstWindow)
	if summed {
		dev, label = "", label+" (busiest device)"
	}
	sr := s.seriesFor(n, series{id: kindPeak + "/" + id, label: label,
		component: comp, direction: dir, device: dev, kind: kindPeak, unit: "By/s", axis: axisBytes})
	t := ms(dp.Timestamp())
	if sr == nil || !s.stepped(sr.ring, t) {
		return
	}
	if summed {
		sr.ring.raise(t, nodestate.PointValue(dp))
	} else {
		sr.ring.set(t, nodestate.PointValue(dp))
	}
}

// burstTimeAbove draws the share of time a port ran at or above a share of its line rate: the
// seconds of rnic.burst.time_above (cumulative) per second.
func (s *store) burstTimeAbove(n *node, a pcommon.Map, dp pmetric.NumberDataPoint) {
	comp, dir, dev, share := attr(a, nodestate.AttrComponent), attr(a, nodestate.AttrDirection), attr(a, nodestate.AttrDevice), attr(a, nodestate.AttrBurstShare)
	r, ok := s.rate(n, nodestate.MetricBurstTimeAbove+"|"+comp+"|"+dir+"|"+dev+"|"+share, dp)
	if !ok {
		return
	}
	id, label, _ := bandwidthSeries(comp, dir, dev)
	sr := s.seriesFor(n, series{id: kindAbove + "/" + id + "/" + share, label: label + " ≥" + sharePercent(share) + " of line",
		component: comp, direction: dir, device: dev, kind: kindAbove, unit: "1", axis: axisRatio})
	if sr != nil {
		sr.ring.push(ms(dp.Timestamp()), r)
	}
}

// sharePercent writes a burst.share ("0.9") as a percentage ("90 %"), or as it came.
func sharePercent(share string) string {
	v, err := strconv.ParseFloat(share, 64)
	if err != nil {
		return share
	}
	return strconv.FormatFloat(v*100, 'f', -1, 64) + " %"
}
