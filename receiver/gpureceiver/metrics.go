package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"maps"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// seriesKey identifies one series of one GPU across scrapes (and across reconnections, since the
// UUID, not DCGM's id, names the GPU).
type seriesKey struct {
	gpu string
	q   quantity
	// link is the NVLink link of a per-link quantity, the kind of a link-health one, 0 for the rest.
	link uint32
}

type xidKey struct {
	gpu string
	xid uint64
}

// xidSource is where XIDs come from: a GPU, or one of its MIG instances.
type xidSource struct {
	gpu    string
	entity uint32
}

type xidCount struct {
	count uint64
	start pcommon.Timestamp
}

// latest holds the newest valid value of every quantity of every GPU in one scrape.
type latest struct {
	set  [numQuantities]bool
	f    [numQuantities]float64
	u    [numQuantities]uint64
	bits [numQuantities]uint8
}

// link maps one interconnect.io series of a GPU onto its quantities.
type link struct {
	component     metadata.AttributeComponent
	direction     metadata.AttributeDirection
	rate, counter quantity
	hasCounter    bool
}

var links = []link{
	{metadata.AttributeComponentGpuPcie, metadata.AttributeDirectionTransmit, qPCIeTxRate, qPCIeTxBytes, true},
	{metadata.AttributeComponentGpuPcie, metadata.AttributeDirectionReceive, qPCIeRxRate, qPCIeRxBytes, true},
	{metadata.AttributeComponentGpuNvlink, metadata.AttributeDirectionTransmit, qNVLinkTxRate, qNVLinkTxBytes, true},
	{metadata.AttributeComponentGpuNvlink, metadata.AttributeDirectionReceive, qNVLinkRxRate, qNVLinkRxBytes, true},
	{metadata.AttributeComponentGpuC2c, metadata.AttributeDirectionTransmit, qC2CTxRate, 0, false},
	{metadata.AttributeComponentGpuC2c, metadata.AttributeDirectionReceive, qC2CRxRate, 0, false},
	// An AMD GPU's PCIe: one rate for both directions, no counter (amdgpu gpu_metrics).
	{metadata.AttributeComponentGpuPcie, metadata.AttributeDirectionBoth, qPCIeBothRate, 0, false},
	// XGMI has counters only (amdgpu gpu_metrics); its rate quantity is never sampled.
	{metadata.AttributeComponentGpuXgmi, metadata.AttributeDirectionTransmit, numQuantities, qXGMITxBytes, true},
	{metadata.AttributeComponentGpuXgmi, metadata.AttributeDirectionReceive, numQuantities, qXGMIRxBytes, true},
}

// handover is where a link's rate-integrated series stood when its counter took over.
type handover struct {
	bytes uint64
	start pcommon.Timestamp
}

// counterSpec is how a driver counter behaves at the end of its range: one whose value type is
// narrower than 64 bits wraps at that width (NVML FI_DEV_PCIE_COUNT_TX/RX_BYTES: "Value can be
// wrapped", nvml.h); a 64-bit one only goes back on a reset.
func counterSpec(wrapBits uint8) counter.Spec {
	if wrapBits > 0 && wrapBits < 64 {
		return counter.Spec{Kind: counter.Wrapping, Width: wrapBits}
	}
	return counter.Spec{Kind: counter.Monotonic}
}

// record turns the samples of one poll into metrics.
func (s *gpuScraper) record(now pcommon.Timestamp) {
	devs := s.src.devices()
	if cap(s.cur) < len(devs) {
		s.cur = make([]latest, len(devs))
	}
	s.cur = s.cur[:len(devs)]
	clear(s.cur)

	keys := make([]string, len(devs))
	for i, d := range devs {
		keys[i] = d.uuid
		if keys[i] == "" {
			keys[i] = d.name
		}
		if _, ok := s.firstSeen[keys[i]]; !ok {
			s.firstSeen[keys[i]] = now
		}
	}

	if s.resync {
		for _, g := range s.integ {
			g.resync = true
		}
		s.resync = false
	}
	for _, smp := range s.buf {
		if smp.gpu < 0 || smp.gpu >= len(devs) {
			continue
		}
		key := keys[smp.gpu]
		switch {
		case smp.q.isRate():
			g := s.integ[seriesKey{gpu: key, q: smp.q}]
			if g == nil {
				g = &integrator{}
				s.integ[seriesKey{gpu: key, q: smp.q}] = g
			}
			g.add(smp, s.sampleUs, s.maxGapUs)
		case smp.q == qXID:
			src := xidSource{key, smp.entity}
			if !smp.valid || smp.ts <= s.lastXID[src] {
				continue
			}
			s.lastXID[src] = smp.ts
			c := s.xids[xidKey{key, smp.u}]
			if c == nil {
				c = &xidCount{start: s.firstSeen[key]}
				s.xids[xidKey{key, smp.u}] = c
			}
			c.count++
		case smp.q.isLinkRate():
			k := seriesKey{gpu: key, q: smp.q, link: smp.entity}
			g := s.integ[k]
			if g == nil {
				g = &integrator{}
				s.integ[k] = g
			}
			g.add(smp, s.sampleUs, s.maxGapUs)
		case smp.q.isPerLink():
			if smp.valid {
				s.recordLink(now, key, devs[smp.gpu], smp)
			}
		case smp.q.isHealthKind():
			if smp.valid {
				s.recordHealth(now, key, devs[smp.gpu], smp)
			}
		case smp.valid:
			l := &s.cur[smp.gpu]
			l.set[smp.q], l.f[smp.q], l.u[smp.q], l.bits[smp.q] = true, smp.f, smp.u, smp.wrapBits
		}
	}

	present := make(map[string]bool, len(devs))
	for i, d := range devs {
		key := keys[i]
		present[key] = true
		l := &s.cur[i]
		s.series.Gauge(func() {
			s.mb.RecordGpuInfoDataPoint(now, 1, d.name, d.busID, d.numaNode, d.uuid, d.model, metadata.MapAttributeSource[s.src.kind()])
		})

		for _, ln := range links {
			if ln.hasCounter && l.set[ln.counter] {
				s.recordCounterLink(now, key, d, ln, l)
				continue
			}
			if ln.hasCounter && s.byCounter[seriesKey{gpu: key, q: ln.counter}] {
				// The link's series is the counter's now: a rate sample left over (or a blank
				// counter this scrape) must not start a second series with the same attributes.
				continue
			}
			if g := s.integ[seriesKey{gpu: key, q: ln.rate}]; g != nil && g.updated {
				g.updated = false
				s.series.RecordValue(g.start, func() {
					s.mb.RecordInterconnectIoDataPoint(now, int64(g.bytes.Total()), ln.component, ln.direction, d.name, d.busID, d.numaNode)
				})
			}
		}

		s.recordLinkRates(now, key, d)
		if l.set[qPCIeReplays] {
			s.series.Record(seriesKey{gpu: key, q: qPCIeReplays}, l.u[qPCIeReplays], counter.Spec{Kind: counter.Monotonic}, now, func(v int64) {
				s.mb.RecordGpuPcieReplaysDataPoint(now, v, d.name, d.busID)
			})
		}
		for _, g := range ratioGauges {
			if l.set[g.q] {
				s.series.Gauge(func() { g.record(s.mb, now, l.f[g.q], d.name, d.busID) })
			}
		}
		for _, g := range levelGauges {
			if l.set[g.q] {
				s.series.Gauge(func() { g.record(s.mb, now, int64(l.u[g.q]), d.name, d.busID) })
			}
		}
	}
	for k, c := range s.xids {
		if !present[k.gpu] {
			continue
		}
		d := s.device(devs, keys, k.gpu)
		s.series.RecordValue(c.start, func() {
			s.mb.RecordGpuXidErrorsDataPoint(now, int64(c.count), d.name, d.busID, int64(k.xid))
		})
	}

	// A GPU that is gone loses its state, so that one that comes back starts new series.
	s.series.Sweep()
	maps.DeleteFunc(s.handover, func(k seriesKey, _ handover) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.byCounter, func(k seriesKey, _ bool) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.integ, func(k seriesKey, _ *integrator) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.xids, func(k xidKey, _ *xidCount) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.firstSeen, func(k string, _ pcommon.Timestamp) bool { return !present[k] })
	maps.DeleteFunc(s.lastXID, func(k xidSource, _ int64) bool { return !present[k.gpu] })
}

// recordCounterLink records a link whose bytes come from its cumulative counter.
func (s *gpuScraper) recordCounterLink(now pcommon.Timestamp, key string, d gpuDevice, ln link, l *latest) {
	ck := seriesKey{gpu: key, q: ln.counter}
	p := s.series.Observe(ck, l.u[ln.counter], counterSpec(l.bits[ln.counter]), now)
	switch p.Status {
	case counter.First:
		// The counter takes over from the rate (DCGM 4.6 GPM counters produce their first value
		// two GPM samples after the watch): the link's series goes on from the bytes the rate
		// counted, with the rate's start.
		if g := s.integ[seriesKey{gpu: key, q: ln.rate}]; g != nil && g.lastTS != 0 {
			s.handover[ck] = handover{bytes: g.bytes.Total(), start: g.start}
			delete(s.integ, seriesKey{gpu: key, q: ln.rate})
		}
	case counter.Reset:
		delete(s.handover, ck)
	}
	s.byCounter[ck] = true
	if !p.Report() {
		return
	}
	start, v := p.Start, p.Value
	if h, ok := s.handover[ck]; ok {
		start, v = h.start, h.bytes+p.Value
	}
	s.series.RecordValue(start, func() {
		s.mb.RecordInterconnectIoDataPoint(now, int64(v), ln.component, ln.direction, d.name, d.busID, d.numaNode)
	})
}

// recordLinkRates records the per-link NVLink bytes integrated from DCGM's per-link rates.
func (s *gpuScraper) recordLinkRates(now pcommon.Timestamp, key string, d gpuDevice) {
	for k, g := range s.integ {
		if k.gpu != key || !k.q.isLinkRate() || !g.updated {
			continue
		}
		g.updated = false
		dir := metadata.AttributeDirectionTransmit
		if k.q == qNVLinkLinkRxRate {
			dir = metadata.AttributeDirectionReceive
		}
		s.series.RecordValue(g.start, func() {
			s.mb.RecordGpuNvlinkLinkIoDataPoint(now, int64(g.bytes.Total()), d.name, d.busID, int64(k.link), dir)
		})
	}
}

// recordLink records one NVLink or XGMI link's counter (the opt-in per-link metrics).
func (s *gpuScraper) recordLink(now pcommon.Timestamp, key string, d gpuDevice, smp sample) {
	k := seriesKey{gpu: key, q: smp.q, link: smp.entity}
	link := int64(smp.entity)
	s.series.Record(k, smp.u, counterSpec(smp.wrapBits), now, func(v int64) {
		switch smp.q {
		case qNVLinkLinkTxBytes:
			s.mb.RecordGpuNvlinkLinkIoDataPoint(now, v, d.name, d.busID, link, metadata.AttributeDirectionTransmit)
		case qNVLinkLinkRxBytes:
			s.mb.RecordGpuNvlinkLinkIoDataPoint(now, v, d.name, d.busID, link, metadata.AttributeDirectionReceive)
		case qNVLinkLinkCRCErrors:
			s.mb.RecordGpuNvlinkLinkErrorsDataPoint(now, v, d.name, d.busID, link, metadata.AttributeNvlinkErrorCrc)
		case qNVLinkLinkReplays:
			s.mb.RecordGpuNvlinkLinkErrorsDataPoint(now, v, d.name, d.busID, link, metadata.AttributeNvlinkErrorReplay)
		case qNVLinkLinkRecoveries:
			s.mb.RecordGpuNvlinkLinkErrorsDataPoint(now, v, d.name, d.busID, link, metadata.AttributeNvlinkErrorRecovery)
		case qXGMILinkTxBytes:
			s.mb.RecordGpuXgmiLinkIoDataPoint(now, v, d.name, d.busID, link, metadata.AttributeDirectionTransmit)
		case qXGMILinkRxBytes:
			s.mb.RecordGpuXgmiLinkIoDataPoint(now, v, d.name, d.busID, link, metadata.AttributeDirectionReceive)
		}
	})
}

// ratioGauges and levelGauges are the per-GPU gauges, each the latest value of its quantity.
var ratioGauges = []struct {
	q      quantity
	record func(*metadata.MetricsBuilder, pcommon.Timestamp, float64, string, string)
}{
	{qDRAMActive, (*metadata.MetricsBuilder).RecordGpuDramActiveDataPoint},
	{qMemCopyUtil, (*metadata.MetricsBuilder).RecordGpuMemoryCopyUtilizationDataPoint},
	{qSMActive, (*metadata.MetricsBuilder).RecordGpuSmActiveDataPoint},
	{qGREngineActive, (*metadata.MetricsBuilder).RecordGpuGraphicsEngineActiveDataPoint},
	{qGPUUtil, (*metadata.MetricsBuilder).RecordGpuUtilizationDataPoint},
}

var levelGauges = []struct {
	q      quantity
	record func(*metadata.MetricsBuilder, pcommon.Timestamp, int64, string, string)
}{
	{qPCIeLinkGen, (*metadata.MetricsBuilder).RecordGpuPcieLinkGenerationDataPoint},
	{qPCIeMaxLinkGen, (*metadata.MetricsBuilder).RecordGpuPcieLinkMaxGenerationDataPoint},
	{qPCIeLinkWidth, (*metadata.MetricsBuilder).RecordGpuPcieLinkWidthDataPoint},
	{qPCIeMaxLinkWidth, (*metadata.MetricsBuilder).RecordGpuPcieLinkMaxWidthDataPoint},
}

// device returns the GPU whose key is key (present this scrape).
func (s *gpuScraper) device(devs []gpuDevice, keys []string, key string) gpuDevice {
	for i, k := range keys {
		if k == key {
			return devs[i]
		}
	}
	return gpuDevice{name: key}
}
