package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"fmt"
	"path/filepath"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

func (s *rnicScraper) scrapeNetdev(nd *netdev, run *scrapeRun) {
	if s.cfg.Metrics.InterconnectIo.Enabled {
		s.netdevBytes(nd, nd.txBytes, nd.tx, metadata.AttributeDirectionTransmit, run)
		s.netdevBytes(nd, nd.rxBytes, nd.rx, metadata.AttributeDirectionReceive, run)
	}
	if s.ethtool != nil {
		for _, tg := range nd.ethtool {
			if !tg.off {
				s.scrapeEthtoolTarget(tg, run)
			}
		}
	}
}

func (s *rnicScraper) netdevBytes(nd *netdev, path string, rd uintReading, dir metadata.AttributeDirection, run *scrapeRun) {
	if !s.check(run, path, 1, rd.err) {
		s.series.Hold(path)
		return
	}
	s.recordMonotonic(path, rd.raw, nd.name, filepath.Base(path), run.now, func(v int64) {
		s.mb.RecordInterconnectIoDataPoint(run.now, v, metadata.AttributeComponentNetdev, dir, nd.name, nd.pciBusID, nd.numaNode)
	})
}

// recordMonotonic records a plain monotonic counter (netdev and ethtool statistics); one above
// 2^63-1, which no integer point can hold, is flagged instead.
func (s *rnicScraper) recordMonotonic(key string, raw uint64, owner, name string, now pcommon.Timestamp, record func(v int64)) {
	over := false
	s.series.Record(key, raw, counter.Spec{Kind: counter.Monotonic}, now, func(v int64) {
		if over = v < 0; !over {
			record(v)
		}
	})
	if over {
		s.series.Gauge(func() { s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, owner, name) })
	}
}

func ethtoolKey(netdev string) string { return "ethtool:" + netdev }

// resolveTable picks the target's statistics by its driver, asked once.
func (s *rnicScraper) resolveTable(tg *ethtoolTarget) {
	if tg.table != nil {
		return
	}
	if drv, err := s.ethtool.Driver(tg.name); err == nil {
		tg.driver = drv
	}
	tg.table = ethtoolTable(tg.driver)
	tg.keys = make([]string, len(tg.table))
	for i, st := range tg.table {
		tg.keys[i] = ethtoolKey(tg.name) + ":" + st.name
	}
}

func (s *rnicScraper) scrapeEthtoolTarget(tg *ethtoolTarget, run *scrapeRun) {
	key := ethtoolKey(tg.name)
	stats, err := s.ethtool.Stats(tg.name)
	if err != nil {
		err = fmt.Errorf("ethtool statistics of %s: %w", tg.name, err)
	}
	if !s.check(run, key, max(len(tg.keys), 1), err) {
		tg.off = s.unavailable[key]
		for _, k := range tg.keys {
			s.series.Hold(k)
		}
		return
	}
	s.resolveTable(tg)
	for i := range tg.table {
		st := &tg.table[i]
		raw, ok := stats[st.name]
		if !ok {
			continue
		}
		s.recordMonotonic(tg.keys[i], raw, tg.name, st.name, run.now, func(v int64) { st.record(s.mb, run.now, tg.name, v) })
	}
}
