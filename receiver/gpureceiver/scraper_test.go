package gpureceiver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// testClock is a settable clock for the scraper.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

// patientCallTimeout replaces the scraper's call timeout (defaultCallTimeout, 5 s) in tests: a
// test checks what a poll returns, never how fast it returns, and on a loaded machine the fake
// library's answer (160 000 values through go-dcgm's callback in the value-cap scenario) can take
// longer than the production deadline. stuck_test.go tests the deadline itself with a poll that
// cannot return.
const patientCallTimeout = 10 * time.Minute

// newPatientScraper is newScraper with patientCallTimeout.
func newPatientScraper(cfg *Config, set receiver.Settings) *gpuScraper {
	s := newScraper(cfg, set)
	s.callTimeout = patientCallTimeout
	return s
}

// newTestScraper returns a scraper reading the fake through the real DCGM source logic.
func newTestScraper(t *testing.T, f *fakeDCGM, mutate func(*Config)) (*gpuScraper, *observer.ObservedLogs, *testClock) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = sysfsFixture(t)
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newPatientScraper(cfg, set)
	s.live = func(cfg *Config, logger *zap.Logger, want quantitySet, numa func(string) int64) (source, error) {
		return openDCGM(f, cfg, logger, want, numa)
	}
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	s.now = clock.now
	return s, logs, clock
}

// sysfsFixture lays out /sys/bus/pci/devices/<bdf>/numa_node for the fake's first GPUs, as the
// kernel does (Documentation/ABI/testing/sysfs-bus-pci: numa_node).
func sysfsFixture(t *testing.T) string {
	root := t.TempDir()
	for bdf, node := range map[string]string{"0000:1b:00.0": "0\n", "0000:3b:00.0": "1\n"} {
		dir := filepath.Join(root, "sys", "bus", "pci", "devices", bdf)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "numa_node"), []byte(node), 0o644))
	}
	return root
}

func scrapeOnce(t *testing.T, s *gpuScraper) pmetric.Metrics {
	t.Helper()
	m, err := s.scrape(context.Background())
	require.NoError(t, err)
	return m
}

// point is one data point flattened for assertions; the lookups are internal/metrictest's.
type point struct {
	attrs map[string]any
	i     int64
	f     float64
	start pcommon.Timestamp
}

func flatten(dp pmetric.NumberDataPoint) point {
	return point{attrs: dp.Attributes().AsRaw(), i: dp.IntValue(), f: dp.DoubleValue(), start: dp.StartTimestamp()}
}

func points(m pmetric.Metrics, name string) []point { return find(m, name) }

// find returns the points of name whose attributes include every key/value pair of kv.
func find(m pmetric.Metrics, name string, kv ...any) []point {
	want := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i].(string)] = kv[i+1]
	}
	var out []point
	for _, dp := range metrictest.Points(m, name) {
		if metrictest.Matches(dp, want) {
			out = append(out, flatten(dp))
		}
	}
	return out
}

func one(t *testing.T, m pmetric.Metrics, name string, kv ...any) point {
	t.Helper()
	ps := find(m, name, kv...)
	require.Len(t, ps, 1, "%s %v", name, kv)
	return ps[0]
}

const sec = int64(1_000_000) // µs

// TestRatesIntegratedOverDCGMSamples: PCIe bytes are the sum of rate x sample period over every
// DCGM sample, across scrapes, not the last rate x the scrape interval.
func TestRatesIntegratedOverDCGMSamples(t *testing.T) {
	f := newFakeDCGM(2)
	base := int64(1_800_000_000) * sec
	// GPU 0: PCIe TX 1000, 2000, ..., 10000 B/s at 1 s samples. The first sample only opens the
	// series (its period is unknown): bytes = 2000+...+10000 = 54000.
	for k := int64(1); k <= 10; k++ {
		f.addSample(0, dcgmFieldPCIeTxRate, base+k*sec, 1000*k)
		f.addSample(0, dcgmFieldPCIeRxRate, base+k*sec, 500)
		f.addSample(1, dcgmFieldPCIeTxRate, base+k*sec, 7)
	}
	s, _, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)

	tx := one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit", "device", "gpu0")
	assert.EqualValues(t, 54000, tx.i)
	assert.Equal(t, pcommon.Timestamp((base+sec)*1000), tx.start, "series starts at the first DCGM sample")
	assert.Equal(t, "0000:1b:00.0", tx.attrs["pci.bus_id"], "bus id in the kernel's form")
	assert.EqualValues(t, 0, tx.attrs["numa.node"])
	assert.EqualValues(t, 9*500, one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "receive", "device", "gpu0").i)
	gpu1 := one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit", "device", "gpu1")
	assert.EqualValues(t, 63, gpu1.i)
	assert.Equal(t, "0000:3b:00.0", gpu1.attrs["pci.bus_id"])
	assert.EqualValues(t, 1, gpu1.attrs["numa.node"])

	// The next scrape adds only the new samples, with a gap of 5 s, which counts at 5 s periods.
	for k := int64(11); k <= 15; k++ {
		f.addSample(0, dcgmFieldPCIeTxRate, base+k*sec, 100)
	}
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.EqualValues(t, 54000+5*100, one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit", "device", "gpu0").i)
	assert.Empty(t, find(m, "interconnect.io", "direction", "receive", "device", "gpu0"), "no new RX sample: no point rather than a stale one")

	info := one(t, m, "gpu.info", "device", "gpu1")
	assert.Equal(t, "GPU-00000001-0000-0000-0000-000000000000", info.attrs["gpu.uuid"])
	assert.Equal(t, "NVIDIA H100 80GB HBM3", info.attrs["gpu.model"])
	assert.Equal(t, "dcgm", info.attrs["source"])
}

func TestIntegrator(t *testing.T) {
	var g integrator
	g.add(sample{ts: 10 * sec, valid: true, f: 1e9}, sec, 3*sec)
	assert.Zero(t, g.bytes.Total(), "the first sample only opens the series")
	g.add(sample{ts: 11 * sec, valid: true, f: 1.5}, sec, 3*sec)
	g.add(sample{ts: 12 * sec, valid: true, f: 1.5}, sec, 3*sec)
	assert.EqualValues(t, 3, g.bytes.Total(), "fractions carry over")
	g.add(sample{ts: 12 * sec, valid: true, f: 1e9}, sec, 3*sec)
	assert.EqualValues(t, 3, g.bytes.Total(), "a duplicate timestamp is ignored")
	g.add(sample{ts: 13 * sec}, sec, 3*sec)
	g.add(sample{ts: 14 * sec, valid: true, f: 10}, sec, 3*sec)
	assert.EqualValues(t, 13, g.bytes.Total(), "a blank sample's period is not charged to the next one")
	// G4: a late sample (nv-hostengine slow) averages the whole real gap, as a GPM value covers
	// the span back to its baseline (DCGM DcgmGpmManager.cpp 272-307): 86 s at 10 B/s.
	g.add(sample{ts: 100 * sec, valid: true, f: 10}, sec, 3*sec)
	assert.EqualValues(t, 13+860, g.bytes.Total(), "a late sample is charged its real interval")
	// After lost samples (reconnection, history expired) only the sample's own period counts.
	g.resync = true
	g.add(sample{ts: 200 * sec, valid: true, f: 10}, sec, 3*sec)
	assert.EqualValues(t, 13+860+10, g.bytes.Total(), "after a resync the gap is one nominal period")
	assert.False(t, g.resync, "only the first sample after the loss is clamped")
	g.add(sample{ts: 200*sec + 250_000, valid: true, f: 4e12}, sec, 3*sec)
	assert.EqualValues(t, 13+860+10+1e12, g.bytes.Total(), "sub-second periods and large rates")
}

// TestCountersPreferredAndReset: where DCGM 4.6 has the cumulative PCIe counters, they are used
// (not the rates) once they have produced a value, the first point obeys the start-time rule
// (metadata/start-time.md: 0 at the first reading), and a counter that goes back restarts the
// series with a new start time.
func TestCountersPreferredAndReset(t *testing.T) {
	f := newFakeDCGM(1)
	f.prof[0] = append(f.prof[0], dcgmFieldPCIeTxTotal, dcgmFieldPCIeRxTotal)
	f.setInt(0, dcgmFieldPCIeTxTotal, 1_000_000)
	f.setInt(0, dcgmFieldPCIeRxTotal, 2_000_000)
	s, _, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	for _, w := range f.watches {
		assert.NotContains(t, w, dcgmFieldPCIeTxRate, "the rate is not watched once the counter works")
	}
	p := one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit")
	assert.EqualValues(t, 0, p.i, "the since-boot total is the baseline, not bytes of this series")
	assert.Equal(t, pcommon.NewTimestampFromTime(clock.t), p.start, "the series starts at the first reading")
	firstStart := p.start

	clock.t = clock.t.Add(10 * time.Second)
	f.setInt(0, dcgmFieldPCIeTxTotal, 1_500_000)
	m = scrapeOnce(t, s)
	p = one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit")
	assert.EqualValues(t, 500_000, p.i)
	assert.Equal(t, firstStart, p.start)

	clock.t = clock.t.Add(10 * time.Second)
	f.setInt(0, dcgmFieldPCIeTxTotal, 300) // driver reload
	m = scrapeOnce(t, s)
	p = one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit")
	assert.EqualValues(t, 300, p.i)
	assert.Greater(t, p.start, firstStart, "a reset starts a new series")
	assert.EqualValues(t, 0, one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "receive").i)
}

// TestProfilingModuleMissing: without DCGM's profiling module only the profiling series are
// missing; the operator hears it once, with the reason, and the rest is collected.
func TestProfilingModuleMissing(t *testing.T) {
	f := newFakeDCGM(2)
	f.profErr = &dcgmError{op: "listing profiling metrics", code: dcgmStModuleNotLoaded, msg: "This request is serviced by a module of DCGM that is not currently loaded"}
	f.setInt(0, dcgmFieldGPUUtil, 42)
	f.setInt(0, dcgmFieldPCIeReplay, 3)
	f.setInt(0, dcgmFieldPCIeGen, 3)
	f.setInt(0, dcgmFieldPCIeMaxGen, 5)
	f.setInt(0, dcgmFieldPCIeWidth, 8)
	f.setInt(0, dcgmFieldPCIeMaxWidth, 16)
	f.setInt(0, dcgmFieldMemCopyUtil, 7)
	s, logs, clock := newTestScraper(t, f, func(c *Config) { c.RetryInterval = 5 * time.Second })
	require.NoError(t, s.start(context.Background(), nil))
	for _, w := range f.watches {
		for _, id := range w {
			assert.False(t, dcgmSpecByID[id].isProfiling(), "profiling field %d watched without the module", id)
		}
	}
	var m pmetric.Metrics
	for i := 0; i < 3; i++ { // scrapes and rediscoveries do not repeat the message
		clock.t = clock.t.Add(10 * time.Second)
		m = scrapeOnce(t, s)
	}
	assert.InDelta(t, 0.42, one(t, m, "gpu.utilization", "device", "gpu0").f, 1e-9)
	assert.InDelta(t, 0.07, one(t, m, "gpu.memory.copy_utilization", "device", "gpu0").f, 1e-9)
	assert.EqualValues(t, 0, one(t, m, "gpu.pcie.replays").i, "a constant since-boot count: nothing counted since the first reading")
	assert.EqualValues(t, 3, one(t, m, "gpu.pcie.link.generation").i)
	assert.EqualValues(t, 5, one(t, m, "gpu.pcie.link.max_generation").i)
	assert.EqualValues(t, 8, one(t, m, "gpu.pcie.link.width").i)
	assert.EqualValues(t, 16, one(t, m, "gpu.pcie.link.max_width").i)
	assert.Empty(t, points(m, "gpu.dram.active"))
	assert.Empty(t, points(m, "gpu.sm.active"))
	assert.Empty(t, points(m, "interconnect.io"))

	missing := logs.FilterMessage("GPU series not collected").FilterField(zap.String("key", "gpu0/profiling"))
	require.Equal(t, 1, missing.Len(), "said once")
	reason := missing.All()[0].ContextMap()["error"].(string)
	assert.Contains(t, reason, "dram_active")
	assert.Contains(t, reason, "pcie_tx_rate")
	assert.Contains(t, reason, "profiling module is not loaded")

	// The module comes back (hostengine restarted with it): the next rediscovery picks it up.
	f.profErr = nil
	f.addSample(0, dcgmFieldPCIeTxRate, 1*sec, 10)
	f.addSample(0, dcgmFieldPCIeTxRate, 2*sec, 10)
	f.setDouble(0, dcgmFieldDRAMActive, 0.5)
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.InDelta(t, 0.5, one(t, m, "gpu.dram.active", "device", "gpu0").f, 1e-9)
	assert.EqualValues(t, 10, one(t, m, "interconnect.io", "device", "gpu0", "direction", "transmit").i)
	// What is still missing is said again, once: C2C, which this GPU does not list.
	again := logs.FilterMessage("GPU series not collected").FilterField(zap.String("key", "gpu0/profiling")).All()
	require.Len(t, again, 2)
	assert.NotContains(t, again[1].ContextMap()["error"], "dram_active")
	assert.Contains(t, again[1].ContextMap()["error"], "c2c_tx_rate")
}

// TestProfilingWatchRefused: when the profiling watch itself fails (counters held by Nsight), the
// non-profiling fields are still watched.
func TestProfilingWatchRefused(t *testing.T) {
	f := newFakeDCGM(1)
	f.watchErr = func(fields []uint16) error {
		for _, id := range fields {
			if dcgmSpecByID[id].isProfiling() {
				return &dcgmError{op: "watching fields", code: dcgmStInUse, msg: "in use"}
			}
		}
		return nil
	}
	f.setInt(0, dcgmFieldGPUUtil, 10)
	f.addSample(0, dcgmFieldXID, 2*sec, 79)
	s, logs, _ := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	assert.Len(t, points(m, "gpu.utilization"), 1)
	assert.EqualValues(t, 1, one(t, m, "gpu.xid.errors", "xid", int64(79)).i)
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "iclens-history")).Len())
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "iclens-latest")).Len())
}

// TestBlankAndGarbageCostOneSeries: blanks, NOT_SUPPORTED and nonsense lose their own series only.
func TestBlankAndGarbageCostOneSeries(t *testing.T) {
	f := newFakeDCGM(1)
	f.setDouble(0, dcgmFieldDRAMActive, dcgmFP64Blank) // no data yet
	f.setDouble(0, dcgmFieldSMActive, dcgmFP64Blank+2) // not supported
	f.setInt(0, dcgmFieldPCIeReplay, dcgmInt64NotPermissioned)
	f.setInt(0, dcgmFieldPCIeGen, -4)                                                // garbage
	f.latest[0][dcgmFieldPCIeWidth] = dcgmValue{fieldType: dcgmTypeString, s: "x16"} // wrong type
	f.latest[0][dcgmFieldGPUUtil] = dcgmValue{fieldType: dcgmTypeInt64, i: 50, status: dcgmStNotSupported}
	f.setDouble(0, dcgmFieldGREngineActive, 0.25)
	f.setInt(0, dcgmFieldPCIeMaxWidth, 16)
	// Rates: the first profiling sample is blank, then real values.
	f.history = append(f.history, dcgmValue{gpu: 0, field: dcgmFieldPCIeTxRate, fieldType: dcgmTypeInt64, ts: 1 * sec, i: dcgmInt64Blank})
	f.addSample(0, dcgmFieldPCIeTxRate, 2*sec, 100)
	f.addSample(0, dcgmFieldPCIeTxRate, 3*sec, 100)
	s, logs, _ := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m, err := s.scrape(context.Background())
	// Not permitted, garbage and the wrong type are failures, returned with their points; a blank
	// and NOT_SUPPORTED are not.
	var partial scrapererror.PartialScrapeError
	require.ErrorAs(t, err, &partial)
	assert.Equal(t, 3, partial.Failed)
	for _, q := range []string{"gpu0/pcie_replays", "gpu0/pcie_link_gen", "gpu0/pcie_link_width"} {
		assert.ErrorContains(t, err, q)
	}

	assert.Empty(t, points(m, "gpu.dram.active"))
	assert.Empty(t, points(m, "gpu.sm.active"))
	assert.Empty(t, points(m, "gpu.pcie.replays"))
	assert.Empty(t, points(m, "gpu.pcie.link.generation"))
	assert.Empty(t, points(m, "gpu.pcie.link.width"))
	assert.Empty(t, points(m, "gpu.utilization"))
	assert.InDelta(t, 0.25, one(t, m, "gpu.graphics_engine.active").f, 1e-9)
	assert.EqualValues(t, 16, one(t, m, "gpu.pcie.link.max_width").i)
	assert.EqualValues(t, 200, one(t, m, "interconnect.io", "direction", "transmit", "component", "gpu_pcie").i,
		"the blank first sample opens the series; the next two each average their own second")

	for _, series := range []string{"gpu0/sm_active", "gpu0/pcie_replays", "gpu0/pcie_link_gen", "gpu0/pcie_link_width", "gpu0/gpu_util"} {
		assert.Equal(t, 1, logs.FilterField(zap.String("key", series)).Len(), series)
	}
	for _, series := range []string{"gpu0/sm_active", "gpu0/gpu_util"} {
		assert.Equal(t, 1, logs.FilterMessage(msgNotProvided).FilterField(zap.String("key", series)).Len(), "%s: NOT_SUPPORTED is said once, at info", series)
	}
	assert.Zero(t, logs.FilterField(zap.String("key", "gpu0/dram_active")).Len(), "a plain blank is not worth a message")
	_, err = s.scrape(context.Background())
	require.ErrorAs(t, err, &partial, "returned on every scrape it happens")
	assert.Equal(t, 3, partial.Failed)
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "gpu0/pcie_link_gen")).Len(), "not repeated")
	for _, w := range f.watches {
		assert.NotContains(t, w, dcgmFieldSMActive, "a NOT_SUPPORTED field leaves the plan")
	}
}

// TestGPULost: a GPU that falls off the bus loses its own series; when DCGM drops it, its state
// goes, and the other GPU carries on untouched.
func TestGPULost(t *testing.T) {
	f := newFakeDCGM(2)
	for g := uint(0); g < 2; g++ {
		f.setInt(g, dcgmFieldGPUUtil, 30)
		f.addSample(g, dcgmFieldPCIeTxRate, 1*sec, 10)
		f.addSample(g, dcgmFieldPCIeTxRate, 2*sec, 10)
	}
	s, logs, clock := newTestScraper(t, f, func(c *Config) { c.RetryInterval = 15 * time.Second })
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	assert.Len(t, points(m, "gpu.utilization"), 2)

	// GPU 1 is lost: DCGM answers its fields with DCGM_ST_GPU_IS_LOST.
	f.latest[1][dcgmFieldGPUUtil] = dcgmValue{fieldType: dcgmTypeInt64, status: dcgmStGPUIsLost, i: dcgmInt64Blank}
	f.history = append(f.history, dcgmValue{gpu: 1, field: dcgmFieldPCIeTxRate, fieldType: dcgmTypeInt64, ts: 3 * sec, status: dcgmStGPUIsLost})
	f.addSample(0, dcgmFieldPCIeTxRate, 3*sec, 10)
	clock.t = clock.t.Add(10 * time.Second)
	m, err := s.scrape(context.Background())
	var partial scrapererror.PartialScrapeError
	require.ErrorAs(t, err, &partial, "a lost GPU costs its own points")
	assert.Equal(t, 2, partial.Failed)
	assert.Len(t, find(m, "gpu.utilization", "device", "gpu0"), 1)
	assert.Empty(t, find(m, "gpu.utilization", "device", "gpu1"))
	assert.EqualValues(t, 20, one(t, m, "interconnect.io", "device", "gpu0").i)
	assert.Empty(t, find(m, "interconnect.io", "device", "gpu1"))
	lost := logs.FilterField(zap.String("key", "gpu1")).All()
	require.Len(t, lost, 1, "one message for the GPU, not one per field")
	assert.Contains(t, lost[0].ContextMap()["error"], "DCGM_ST_GPU_IS_LOST")

	// DCGM no longer lists it: the rediscovery drops it and its state.
	f.gpus = []uint{0}
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.Len(t, points(m, "gpu.info"), 1)
	for k := range s.integ {
		assert.NotEqual(t, "GPU-00000001-0000-0000-0000-000000000000", k.gpu)
	}
}

// TestNoLibrary: no DCGM and no NVML. The receiver starts, says why once at info level, emits
// nothing, and retries on retry_interval, not at every scrape.
func TestNoLibrary(t *testing.T) {
	f := newFakeDCGM(1)
	f.connectErr = errors.New("libdcgm.so.4 not found")
	s, logs, clock := newTestScraper(t, f, func(c *Config) { c.RetryInterval = time.Minute })
	require.NoError(t, s.start(context.Background(), nil))
	for i := 0; i < 30; i++ {
		clock.t = clock.t.Add(10 * time.Second)
		m := scrapeOnce(t, s)
		assert.Zero(t, m.MetricCount())
	}
	assert.Equal(t, 1+5, f.connects, "one try at start, then one a minute")
	msgs := logs.FilterMessage("No GPU metrics: no GPU library could be used; trying again later")
	require.Equal(t, 1, msgs.Len())
	assert.Equal(t, zap.InfoLevel, msgs.All()[0].Level)
	assert.Contains(t, msgs.All()[0].ContextMap()["reason"], "libdcgm.so.4 not found")
	assert.Zero(t, logs.FilterLevelExact(zap.WarnLevel).Len()+logs.FilterLevelExact(zap.ErrorLevel).Len())

	// The hostengine appears: the next retry picks it up.
	f.connectErr = nil
	f.setInt(0, dcgmFieldGPUUtil, 1)
	clock.t = clock.t.Add(time.Minute)
	m := scrapeOnce(t, s)
	assert.Len(t, points(m, "gpu.utilization"), 1)
	require.NoError(t, s.shutdown(context.Background()))
	assert.False(t, f.connected, "shutdown disconnects")
}

// TestConnectionLost: nv-hostengine goes away mid-run: the source is closed and reopened.
func TestConnectionLost(t *testing.T) {
	f := newFakeDCGM(1)
	f.setInt(0, dcgmFieldGPUUtil, 1)
	s, _, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	f.historyErr = &dcgmError{op: "reading samples", code: dcgmStConnectionNotValid, msg: "dcgmGetValuesSince_v2 failed with error code -21"}
	clock.t = clock.t.Add(10 * time.Second)
	m, err := s.scrape(context.Background())
	assert.ErrorContains(t, err, "DCGM_ST_CONNECTION_NOT_VALID", "a lost library is a scrape error")
	assert.False(t, scrapererror.IsPartialScrapeError(err), "the whole scrape is lost")
	assert.Zero(t, m.MetricCount())
	assert.Nil(t, s.src)
	f.historyErr = nil
	clock.t = clock.t.Add(10 * time.Second)
	assert.Len(t, points(scrapeOnce(t, s), "gpu.utilization"), 1)
	assert.Equal(t, 2, f.connects)
}

// TestXIDCounted: every XID sample is one event, counted per XID number.
func TestXIDCounted(t *testing.T) {
	f := newFakeDCGM(1)
	f.addSample(0, dcgmFieldXID, 1*sec, 79)
	f.addSample(0, dcgmFieldXID, 2*sec, 13)
	f.addSample(0, dcgmFieldXID, 3*sec, 79)
	s, _, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 2, one(t, m, "gpu.xid.errors", "xid", int64(79)).i)
	assert.EqualValues(t, 1, one(t, m, "gpu.xid.errors", "xid", int64(13)).i)
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.EqualValues(t, 2, one(t, m, "gpu.xid.errors", "xid", int64(79)).i, "cumulative, and no double count")
}

// TestOnlyEnabledMetricsRead: disabling metrics removes their fields from the watches.
func TestOnlyEnabledMetricsRead(t *testing.T) {
	f := newFakeDCGM(1)
	s, _, _ := newTestScraper(t, f, func(c *Config) {
		c.Metrics.InterconnectIo.Enabled = false
		c.Metrics.GpuXidErrors.Enabled = false
		c.Metrics.GpuSmActive.Enabled = false
	})
	require.NoError(t, s.start(context.Background(), nil))
	var watched []uint16
	for _, w := range f.watches {
		watched = append(watched, w...)
	}
	assert.NotContains(t, watched, dcgmFieldPCIeTxRate)
	assert.NotContains(t, watched, dcgmFieldXID)
	assert.NotContains(t, watched, dcgmFieldSMActive)
	assert.Contains(t, watched, dcgmFieldDRAMActive)
	assert.Equal(t, 0, f.sinceCalls)
	scrapeOnce(t, s)
	assert.Equal(t, 0, f.sinceCalls, "no history watch, no GetValuesSince")
}

func TestConvertDCGM(t *testing.T) {
	rate := dcgmSpecByID[dcgmFieldPCIeTxRate]
	_, err := convertDCGM(dcgmValue{fieldType: dcgmTypeInt64, i: dcgmInt64Blank + 1}, rate)
	assert.ErrorIs(t, err, errBlank, "NOT_FOUND is a blank")
	_, err = convertDCGM(dcgmValue{fieldType: dcgmTypeInt64, i: dcgmInt64NotSupported}, rate)
	assert.ErrorIs(t, err, errNotSupported)
	_, err = convertDCGM(dcgmValue{fieldType: dcgmTypeDouble, f: dcgmFP64Blank + 2}, rate)
	assert.ErrorIs(t, err, errNotSupported)
	smp, err := convertDCGM(dcgmValue{fieldType: dcgmTypeDouble, f: 12.5, ts: 7}, rate)
	require.NoError(t, err, "a rate may come as a double")
	assert.True(t, smp.valid)
	assert.Equal(t, 12.5, smp.f)
	assert.EqualValues(t, 7, smp.ts)
	smp, err = convertDCGM(dcgmValue{fieldType: dcgmTypeInt64, i: 42}, dcgmSpecByID[dcgmFieldGPUUtil])
	require.NoError(t, err)
	assert.InDelta(t, 0.42, smp.f, 1e-12, "an integer percentage becomes a ratio")
	_, err = convertDCGM(dcgmValue{fieldType: dcgmTypeDouble, f: -1}, rate)
	assert.Error(t, err)
	assert.NotErrorIs(t, err, errBlank)
	ctr, err := convertDCGM(dcgmValue{fieldType: dcgmTypeInt64, i: 1 << 60}, dcgmSpecByID[dcgmFieldPCIeTxTotal])
	require.NoError(t, err)
	assert.EqualValues(t, uint64(1)<<60, ctr.u, "counters keep 64-bit precision")
	gen, err := convertDCGM(dcgmValue{fieldType: dcgmTypeDouble, f: 5}, dcgmSpecByID[dcgmFieldPCIeGen])
	require.NoError(t, err)
	assert.EqualValues(t, 5, gen.u, "an integer quantity sent as a double")
}

func newObserved() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.DebugLevel)
	return zap.New(core), logs
}

// TestWatchFailureRetried: a watch that fails at rediscovery (a GPU came and DCGM refused the new
// group) leaves no half-set-up source behind; the next rediscovery sets it up again.
func TestWatchFailureRetried(t *testing.T) {
	f := newFakeDCGM(1)
	f.setInt(0, dcgmFieldGPUUtil, 5)
	s, logs, clock := newTestScraper(t, f, func(c *Config) { c.RetryInterval = 20 * time.Second })
	require.NoError(t, s.start(context.Background(), nil))
	assert.Len(t, points(scrapeOnce(t, s), "gpu.utilization"), 1)

	f.gpus = []uint{0, 1}
	f.latest[1] = map[uint16]dcgmValue{}
	f.setInt(1, dcgmFieldGPUUtil, 6)
	f.watchErr = func([]uint16) error {
		return &dcgmError{op: "watching fields", code: -3, msg: "Generic unspecified error"}
	}
	clock.t = clock.t.Add(30 * time.Second)
	m, err := s.scrape(context.Background())
	assert.ErrorContains(t, err, "rediscovery: watching fields", "what could not be set up is an error of the scrape")
	assert.Zero(t, m.MetricCount())
	assert.Equal(t, 1, logs.FilterMessage("GPU rediscovery failed; trying again after retry_interval").Len())

	f.watchErr = nil
	clock.t = clock.t.Add(30 * time.Second)
	assert.Len(t, points(scrapeOnce(t, s), "gpu.utilization"), 2)
}

// TestDeviceSelection: excluded GPUs are never watched nor reported.
func TestDeviceSelection(t *testing.T) {
	f := newFakeDCGM(4)
	for g := uint(0); g < 4; g++ {
		f.setInt(g, dcgmFieldGPUUtil, 1)
	}
	s, _, _ := newTestScraper(t, f, func(c *Config) {
		c.Exclude = devicefilter.Match{Devices: []string{"GPU-00000002-*", "gpu3"}, MatchType: devicefilter.Glob}
	})
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	var devices []any
	for _, p := range points(m, "gpu.utilization") {
		devices = append(devices, p.attrs["device"])
	}
	assert.ElementsMatch(t, []any{"gpu0", "gpu1"}, devices)

	f2 := newFakeDCGM(2)
	s2, logs, _ := newTestScraper(t, f2, func(c *Config) {
		c.Include = devicefilter.Match{Devices: []string{"gpu7"}, MatchType: devicefilter.Strict}
	})
	require.NoError(t, s2.start(context.Background(), nil))
	assert.Nil(t, s2.src)
	assert.False(t, f2.connected, "nothing left connected when no GPU is selected")
	assert.Contains(t, logs.All()[0].ContextMap()["reason"], "no GPU left")
}

// TestGaugesCarryTheReceiverStart: every gauge point (gpu.info, utilization, link state) carries
// the moment the receiver started, whatever series was recorded before it in the builder: a
// counter's or an integrated link's start must not leak into the next GPU's gauges.
func TestGaugesCarryTheReceiverStart(t *testing.T) {
	f := newFakeDCGM(2)
	for g := uint(0); g < 2; g++ {
		f.setInt(g, dcgmFieldGPUUtil, 30)
		f.setInt(g, dcgmFieldPCIeGen, 4)
		f.setInt(g, dcgmFieldPCIeReplay, 7)
		f.addSample(g, dcgmFieldPCIeTxRate, 1*sec, 10)
		f.addSample(g, dcgmFieldPCIeTxRate, 2*sec, 10)
	}
	f.addSample(0, dcgmFieldXID, 2*sec, 79)
	s, _, clock := newTestScraper(t, f, nil)
	started := pcommon.NewTimestampFromTime(clock.t)
	require.NoError(t, s.start(context.Background(), nil))
	for i := 0; i < 2; i++ {
		clock.t = clock.t.Add(10 * time.Second)
		m := scrapeOnce(t, s)
		for _, name := range []string{"gpu.info", "gpu.utilization", "gpu.pcie.link.generation"} {
			ps := points(m, name)
			require.Len(t, ps, 2, name)
			for _, p := range ps {
				assert.Equal(t, started, p.start, "scrape %d: %s of %v", i, name, p.attrs["device"])
			}
		}
		if i == 0 {
			assert.Equal(t, pcommon.Timestamp(1*sec*1000), one(t, m, "interconnect.io", "device", "gpu1").start,
				"the integrated link keeps its own start")
		}
	}
}

// TestEveryGPUSeriesCarriesItsBusID: pci.bus_id (the kernel's form) is the key other components
// join GPU series on (rnic topology, the diagnosis connector, the view); device is this
// receiver's own name. Every point of every GPU metric carries it.
func TestEveryGPUSeriesCarriesItsBusID(t *testing.T) {
	f := newFakeDCGM(2)
	for g := uint(0); g < 2; g++ {
		for _, id := range []uint16{dcgmFieldGPUUtil, dcgmFieldMemCopyUtil, dcgmFieldPCIeReplay, dcgmFieldPCIeGen, dcgmFieldPCIeMaxGen, dcgmFieldPCIeWidth, dcgmFieldPCIeMaxWidth} {
			f.setInt(g, id, 4)
		}
		for _, id := range []uint16{dcgmFieldDRAMActive, dcgmFieldSMActive, dcgmFieldGREngineActive} {
			f.setDouble(g, id, 0.5)
		}
		f.addSample(g, dcgmFieldPCIeTxRate, 1*sec, 10)
		f.addSample(g, dcgmFieldPCIeTxRate, 2*sec, 10)
		f.addSample(g, dcgmFieldXID, 2*sec, 79)
	}
	s, _, _ := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	want := map[string]string{"gpu0": "0000:1b:00.0", "gpu1": "0000:3b:00.0"}
	names := map[string]bool{}
	ms := m.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		names[ms.At(i).Name()] = true
		for _, p := range points(m, ms.At(i).Name()) {
			assert.Equal(t, want[p.attrs["device"].(string)], p.attrs["pci.bus_id"], "%s %v", ms.At(i).Name(), p.attrs)
		}
	}
	assert.Len(t, names, 13, "every metric of the receiver was looked at")
}
