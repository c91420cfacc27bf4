package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/histogram"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver/internal/metadata"
)

// The two histograms of the receiver. They are declared here rather than in metadata.yaml because
// the mdatagen this repository builds with generates histogram code that does not compile; their
// attributes are those of nccl.collective.samples, so one query joins them.
const (
	metricBusBandwidth = "nccl.collective.bus_bandwidth"
	metricDuration     = "nccl.collective.duration"
)

// appendHistograms adds, to each host's resource in md, the bus-bandwidth and duration histograms
// of its series (cumulative since each series' first record).
func appendHistograms(md pmetric.Metrics, series map[seriesKey]series, byHost map[string][]seriesKey, ts pcommon.Timestamp) {
	for host, keys := range byHost {
		sm := scopeOf(md, host)
		bwh := histogram.AddCumulative(sm, metricBusBandwidth, "GBy/s",
			"Bus bandwidth of the sampled operations (coll_busbw_gbs: the algorithm bandwidth times the collective's factor, nccl-tests doc/PERFORMANCE.md), records without one left out.")
		duh := histogram.AddCumulative(sm, metricDuration, "us",
			"Execution time of the sampled operations (coll_exec_time_us: the GPU kernels' time where kernel_gpu timing is available).")
		sortKeys(keys)
		for _, k := range keys {
			s := series[k]
			start := pcommon.NewTimestampFromTime(s.first)
			if s.busBw.Count > 0 {
				fillPoint(bwh.DataPoints().AppendEmpty(), k, s, &s.busBw, busBwBounds, start, ts)
			}
			fillPoint(duh.DataPoints().AppendEmpty(), k, s, &s.duration, durationBounds, start, ts)
		}
	}
}

func fillPoint(dp pmetric.HistogramDataPoint, k seriesKey, s series, h *histogram.Explicit, bounds []float64, start, ts pcommon.Timestamp) {
	h.Fill(dp, bounds, start, ts)
	a := dp.Attributes()
	a.PutStr("nccl.comm.id", k.commID)
	a.PutStr("nccl.comm.name", s.commName)
	a.PutInt("nccl.comm.size", s.nranks)
	a.PutInt("nccl.comm.nodes", s.nnodes)
	a.PutInt("nccl.rank", k.rank)
	a.PutStr("nccl.collective", k.op)
	a.PutStr("nccl.message_size", k.bucket)
	a.PutStr("pci.bus_id", s.busID)
}

// scopeOf returns the receiver's scope in host's resource, adding the resource when the builder
// emitted nothing for it.
func scopeOf(md pmetric.Metrics, host string) pmetric.ScopeMetrics {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		if v, ok := rm.Resource().Attributes().Get("host.name"); ok && v.Str() == host {
			return rm.ScopeMetrics().At(0)
		}
	}
	rm := rms.AppendEmpty()
	rm.Resource().Attributes().PutStr("host.name", host)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	return sm
}
