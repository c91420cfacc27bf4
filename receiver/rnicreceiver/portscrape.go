package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// readPort reads the port's files into its readings; it runs on the device's reading goroutine
// (readgroup.go) and touches nothing but r and the port.
func (s *rnicScraper) readPort(r *sysfs.Reader, p *port, slow bool) {
	for i := range p.gauges {
		g := &p.gauges[i]
		if g.off {
			continue
		}
		var b []byte
		if b, g.err = r.ReadBytesKept(g.path); g.err == nil {
			g.v, g.extra, g.err = g.def.parse(g.path, p.linkLayer, b)
		}
	}
	for i := range p.counters {
		cf := &p.counters[i]
		if cf.off || (cf.slow && !slow) {
			continue
		}
		s.readCounter(r, cf)
	}
}

func (s *rnicScraper) scrapePort(p *port, run *scrapeRun) {
	for i := range p.gauges {
		g := &p.gauges[i]
		if g.off {
			continue
		}
		if !s.check(run, g.path, g.def.points, g.err) {
			g.off = s.unavailable[g.path]
			continue
		}
		if g.def.file == "rate" {
			p.lineRate = float64(g.v) // bytes/s (parseRate): the fast sampler's line rate
		}
		s.series.Gauge(func() { g.def.record(s.mb, run.now, p.name, g.v, g.extra) })
	}
	if run.slow {
		// Static facts, resolved at discovery: they follow the slow cadence (README.md, "Slow counters").
		s.series.Gauge(func() {
			s.mb.RecordRnicPortInfoDataPoint(run.now, 1, p.name, p.linkLayer, p.netdev, p.pciBusID, p.numaNode,
				p.hcaType, p.fwVersion, p.nodeGUID, p.boardID, p.plane)
		})
	}

	for i := range p.counters {
		cf := &p.counters[i]
		if cf.off || (cf.slow && !run.slow) {
			continue
		}
		if !s.counterRead(cf, run) {
			s.series.Hold(cf.key) // a failed read costs the point, not the series
			continue
		}
		if cf.primer {
			continue
		}
		unrepresentable := false
		pt := s.series.Record(cf.key, cf.raw, cf.spec, run.now, func(v int64) {
			// v is the count as an int64; one of 2^63 and above (negative here) or one that does not
			// fit after scaling is no count an integer point can hold.
			scaled, ok := counter.Scaled(uint64(v), cf.scale)
			if !ok {
				unrepresentable = true
				return
			}
			s.recordCounter(p, cf, uint64(v), scaled, run.now)
		})
		s.recordSaturation(&cf.flagged, !pt.Report() || unrepresentable, cf.owner, cf.name, run.now)
	}
}

// recordSaturation records rnic.counter.saturated: 1 for a counter stuck at all ones (or a value
// no integer point can hold after scaling, a 64-bit PMA counter at 2^61 and above times 4: the
// rate it would imply is not traffic), and 0 from then on once it reads normally again (a reset,
// perfquery -R).
func (s *rnicScraper) recordSaturation(flagged *bool, saturated bool, owner, name string, now pcommon.Timestamp) {
	switch {
	case saturated:
		*flagged = true
		s.series.Gauge(func() { s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, owner, name) })
	case *flagged:
		s.series.Gauge(func() { s.mb.RecordRnicCounterSaturatedDataPoint(now, 0, owner, name) })
	}
}

// readCounter reads a counter file and the files summed into it, keeping each file's error.
func (s *rnicScraper) readCounter(r *sysfs.Reader, cf *counterFile) {
	if cf.errs == nil {
		cf.errs = make([]error, 1+len(cf.sum))
	}
	cf.raw = 0
	for i := range cf.errs {
		v, err := s.readCounterFile(r, cf, cf.file(i))
		cf.errs[i] = err
		cf.raw += v
	}
}

// counterRead checks the reads of the counter's files; a failure of any of them costs the point
// and is reported against the file that failed. A file the hardware does not provide takes the
// counter out of the plan (a sum without one of its terms is not the total).
func (s *rnicScraper) counterRead(cf *counterFile, run *scrapeRun) bool {
	ok := true
	for i, err := range cf.errs {
		path := cf.file(i)
		if !s.check(run, path, cf.points(), err) {
			ok = false
			if s.unavailable[path] {
				cf.off = true
				s.unavailable[cf.key] = true
			}
		}
	}
	return ok
}

// readCounterFile reads one counter file. The ones read on every scrape keep their descriptor
// open between scrapes (sysfs.Reader.ReadBytesKept); the slow ones, read every slow_interval, are
// opened each time, so that a node does not hold a descriptor and a sysfs buffer for each of them.
func (s *rnicScraper) readCounterFile(r *sysfs.Reader, cf *counterFile, path string) (uint64, error) {
	if cf.slow && s.cfg.SlowInterval > 0 {
		return r.ReadUint(path)
	}
	return r.ReadUintKept(path)
}

// recordCounter records a counter's point: raw in the counter's unit, scaled in the metric's
// (counter.Scaled checked that both fit).
func (s *rnicScraper) recordCounter(p *port, cf *counterFile, raw uint64, scaled int64, now pcommon.Timestamp) {
	v := int64(raw)
	if cf.driver {
		s.mb.RecordRnicDriverCounterDataPoint(now, v, cf.owner, cf.name, cf.source)
	}
	switch cf.kind {
	case kindBytes:
		if p.plane {
			return // a plane of a multi-plane device: its bytes are counted by the device itself
		}
		s.mb.RecordInterconnectIoDataPoint(now, scaled, metadata.AttributeComponentRnic, cf.direction,
			cf.owner, p.pciBusID, p.numaNode)
	case kindOperationBytes:
		if p.plane {
			return
		}
		s.mb.RecordRnicOperationIoDataPoint(now, v, cf.owner, cf.operation, cf.direction)
	case kindPackets:
		if p.plane {
			return
		}
		s.mb.RecordRnicPacketsDataPoint(now, v, cf.owner, cf.direction)
	case kindPortError:
		s.mb.RecordRnicPortErrorsDataPoint(now, v, cf.owner, cf.label)
	case kindXmitWait:
		s.mb.RecordRnicPortXmitWaitDataPoint(now, v, cf.owner)
	case kindCNP:
		s.mb.RecordRnicRoceCnpDataPoint(now, v, cf.owner, cf.label)
	case kindECN:
		s.mb.RecordRnicRoceEcnMarkedDataPoint(now, v, cf.owner)
	case kindTransportEvent:
		s.mb.RecordRnicTransportEventsDataPoint(now, v, cf.owner, cf.label)
	case kindTransportError:
		s.mb.RecordRnicTransportErrorsDataPoint(now, v, cf.owner, cf.label)
	}
}
