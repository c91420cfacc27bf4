package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// The kinds of each link-health family, indexed by sample.entity, in the order of the DCGM field
// tables (dcgmNVLinkErrorFields, dcgmNVLinkBERFields, dcgmC2CErrorFields).
var (
	nvlinkErrorKinds = []metadata.AttributeNvlinkError{
		metadata.AttributeNvlinkErrorRxMalformed, metadata.AttributeNvlinkErrorRxBufferOverrun,
		metadata.AttributeNvlinkErrorRxError, metadata.AttributeNvlinkErrorRxRemote,
		metadata.AttributeNvlinkErrorRxGeneral, metadata.AttributeNvlinkErrorLocalIntegrity,
		metadata.AttributeNvlinkErrorTxDiscard, metadata.AttributeNvlinkErrorRecovery,
		metadata.AttributeNvlinkErrorRecoveryFailed, metadata.AttributeNvlinkErrorSymbol,
		metadata.AttributeNvlinkErrorEffective,
	}
	nvlinkBERKinds = []metadata.AttributeNvlinkBer{metadata.AttributeNvlinkBerSymbol, metadata.AttributeNvlinkBerEffective}
	c2cErrorKinds  = []metadata.AttributeC2cError{
		metadata.AttributeC2cErrorCrc, metadata.AttributeC2cErrorReplay, metadata.AttributeC2cErrorReplayBackToBack,
	}
)

// recordHealth records one link-health sample of a GPU: an error counter as a series of its own
// per kind (a counter that goes back is a reset, as for every counter), a bit error rate as its
// latest value.
func (s *gpuScraper) recordHealth(now pcommon.Timestamp, key string, d gpuDevice, smp sample) {
	kind := int(smp.entity)
	switch smp.q {
	case qNVLinkErrors:
		if kind < len(nvlinkErrorKinds) {
			s.series.Record(seriesKey{gpu: key, q: smp.q, link: smp.entity}, smp.u, counterSpec(smp.wrapBits), now, func(v int64) {
				s.mb.RecordGpuNvlinkErrorsDataPoint(now, v, d.name, d.busID, nvlinkErrorKinds[kind])
			})
		}
	case qC2CErrors:
		if kind < len(c2cErrorKinds) {
			s.series.Record(seriesKey{gpu: key, q: smp.q, link: smp.entity}, smp.u, counterSpec(smp.wrapBits), now, func(v int64) {
				s.mb.RecordGpuC2cErrorsDataPoint(now, v, d.name, d.busID, c2cErrorKinds[kind])
			})
		}
	case qNVLinkBER:
		if kind < len(nvlinkBERKinds) {
			s.series.Gauge(func() { s.mb.RecordGpuNvlinkBitErrorRateDataPoint(now, smp.f, d.name, d.busID, nvlinkBERKinds[kind]) })
		}
	}
}

// healthQuantities are the link-health families the enabled metrics need.
func healthQuantities(m metadata.MetricsConfig) quantitySet {
	var w quantitySet
	if m.GpuNvlinkErrors.Enabled {
		w.add(qNVLinkErrors)
	}
	if m.GpuNvlinkBitErrorRate.Enabled {
		w.add(qNVLinkBER)
	}
	if m.GpuC2cErrors.Enabled {
		w.add(qC2CErrors)
	}
	return w
}
