package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
)

// integrator turns a rate in bytes/s, sampled by the source, into a cumulative byte count.
//
// DCGM's profiling rates (DCGM_FI_PROF_PCIE_TX_BYTES and the like) are averages over the period
// that ends at the sample's timestamp, so value x (ts_i - ts_{i-1}) is exactly the bytes moved in
// that period: summing over every sample (GetValuesSince) counts every byte, whatever the sample
// interval, where one instantaneous rate times the scrape interval would not. This is the method of
// the GCP ops collector's dcgmreceiver (util.go metricStats.Update).
type integrator struct {
	// start is the timestamp of the first sample: the series counts from there.
	start pcommon.Timestamp
	// lastTS is the previous sample's timestamp in µs, 0 before the first sample.
	lastTS int64
	// bytes counted, the fraction of a byte carried to the next sample
	bytes counter.Accumulator
	// updated: a valid sample was integrated since the flag was last cleared.
	updated bool
	// resync: samples were lost before the next one (reconnection, DCGM history expired or
	// skipped): a long gap up to it is charged as one nominal period.
	resync bool
}

// add integrates one sample. A sample no newer than the previous one is a duplicate and ignored. An
// invalid sample (blank, unsupported) adds nothing but moves the baseline: the period it closes is
// unknown and must not be charged to the next valid sample. A late sample covers the whole real
// gap: a GPM value is computed between the newest GPM sample and a baseline at least one update
// interval older (DCGM DcgmGpmManager.cpp 272-307), and a profiling average covers the span since
// the previous sample, so the real interval is charged. Only after samples were lost (resync: a
// reconnection, DCGM's history expired or skipped) is a gap longer than maxGapUs charged as one
// nominal period, the span the sample's own average is known to cover.
func (g *integrator) add(s sample, nominalUs, maxGapUs int64) {
	if g.lastTS == 0 {
		g.lastTS = s.ts
		g.start = pcommon.Timestamp(s.ts * 1000)
		g.resync = false
		return
	}
	if s.ts <= g.lastTS {
		return
	}
	dt := s.ts - g.lastTS
	g.lastTS = s.ts
	resync := g.resync
	g.resync = false
	if !s.valid {
		return
	}
	if resync && dt > maxGapUs {
		dt = nominalUs
	}
	g.bytes.Add(s.f * float64(dt) / 1e6)
	g.updated = true
}
