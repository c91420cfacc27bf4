package gpureceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// addHopperRates appends the PCIe rate samples DCGM 4.6 takes on a GPM GPU for the seconds
// (from, to]: 1009/1010 in bytes/s, the very first blank (a GPM value needs two GPM samples,
// DCGM test_prof.py 1328-1337).
func addHopperRates(f *fakeDCGM, gpu uint, base int64, from, to int64) {
	for k := from + 1; k <= to; k++ {
		tx, rx := f.hopper.txRate, f.hopper.rxRate
		if k == 1 {
			tx, rx = dcgmInt64Blank, dcgmInt64Blank
		}
		f.addSample(gpu, dcgmFieldPCIeTxRate, base+k*sec, tx)
		f.addSample(gpu, dcgmFieldPCIeRxRate, base+k*sec, rx)
	}
}

func sourceLines(logs *observer.ObservedLogs, device string) []observer.LoggedEntry {
	return logs.FilterMessage("GPU interconnect bytes: source per quantity").FilterField(zap.String("device", device)).All()
}

// TestHopperDCGM46WithoutGPMPCIeCounter (G1): DCGM 4.6 on an H100 whose driver's NVML has no GPM
// PCIe counter lists 1091/1092 anyway and serves them blank forever. The receiver must still
// report PCIe bytes, from the rates 1009/1010, and say once that the rate is the source.
func TestHopperDCGM46WithoutGPMPCIeCounter(t *testing.T) {
	f := newFakeDCGMHopper(1, false)
	base := int64(1_800_000_000) * sec
	s, logs, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))

	var tx, rx int64
	for scrape := int64(0); scrape < 4; scrape++ {
		addHopperRates(f, 0, base, scrape*10, scrape*10+10)
		clock.t = clock.t.Add(10 * time.Second)
		m := scrapeOnce(t, s)
		tx = one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit").i
		rx = one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "receive").i
	}
	// 40 one-second samples; the first (blank) only opens the series.
	assert.EqualValues(t, 39*f.hopper.txRate, tx)
	assert.EqualValues(t, 39*f.hopper.rxRate, rx)

	lines := sourceLines(logs, "gpu0")
	require.Len(t, lines, 1, "one line per GPU, once the source is decided")
	assert.Contains(t, lines[0].ContextMap()["gpu_pcie"], "rate DCGM fields 1009/1010")
	assert.Contains(t, lines[0].ContextMap()["gpu_nvlink"], "rate DCGM fields 1011/1012")
	// G10: DCGM 4.6 lists the C2C fields on every GPM GPU; an H100 without C2C link has none.
	assert.Contains(t, lines[0].ContextMap()["gpu_c2c"], "none")
	for _, w := range f.watches {
		assert.NotContains(t, w, dcgmFieldC2CTxRate, "no C2C watch on a GPU without C2C link")
	}
	assert.Zero(t, logs.FilterField(zap.String("key", "gpu0/profiling")).Len(), "nothing reported missing")
}

// TestHopperDCGM46CounterTakesOver (G1, G2): where the driver has the GPM PCIe counter, it is blank
// for the first two GPM samples; the rate carries the link until then, and the counter takes
// over in the same series (same start, bytes going on from the rate's total), after which the
// rate is no longer watched.
func TestHopperDCGM46CounterTakesOver(t *testing.T) {
	f := newFakeDCGMHopper(1, true)
	base := int64(1_800_000_000) * sec
	s, logs, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))

	var starts []int64
	var values []int64
	for scrape := int64(0); scrape < 5; scrape++ {
		addHopperRates(f, 0, base, scrape*10, scrape*10+10)
		clock.t = clock.t.Add(10 * time.Second)
		m := scrapeOnce(t, s)
		p := one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit")
		starts = append(starts, int64(p.start))
		values = append(values, p.i)
	}
	// Scrapes 1 and 2: the counter is blank, the rate counts (9 then 10 periods).
	assert.EqualValues(t, 9*f.hopper.txRate, values[0])
	assert.EqualValues(t, 19*f.hopper.txRate, values[1])
	// Scrape 3: the counter's first value is its baseline, taken as the rate's samples of this
	// scrape end; the series goes on from the rate's 29 periods, without the since-boot total.
	assert.EqualValues(t, 29*f.hopper.txRate, values[2], "no jump to the since-boot total")
	// Scrapes 4 and 5: the counter's growth, 10 s at the fake's rate each.
	assert.EqualValues(t, 39*f.hopper.txRate, values[3])
	assert.EqualValues(t, 49*f.hopper.txRate, values[4])
	for i := range starts {
		assert.Equal(t, starts[0], starts[i], "one series, one start: scrape %d", i+1)
	}
	assert.Equal(t, (base+sec)*1000, starts[0], "the series began with the first rate sample")
	for _, w := range f.watches {
		assert.NotContains(t, w, dcgmFieldPCIeTxRate, "the rate is no longer watched once the counter works")
	}
	lines := sourceLines(logs, "gpu0")
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0].ContextMap()["gpu_pcie"], "counter DCGM fields 1091/1092")

	// A blank counter for one scrape, with rate samples still about: no second series.
	f.hopper.pcieCounter = false
	addHopperRates(f, 0, base, 50, 60)
	clock.t = clock.t.Add(10 * time.Second)
	for _, p := range find(scrapeOnce(t, s), "interconnect.io", "component", "gpu_pcie", "direction", "transmit") {
		assert.Equal(t, starts[0], int64(p.start), "the link keeps one series")
	}
}

// TestValueCapMovesTheCursor (G3): go-dcgm fails a whole GetValuesSince over 131072 values
// (pkg/dcgm/field_values.go maxCallbackValues). 8 GPUs x 6 rate fields x 30 s of history at the
// allowed 10 ms sample interval is 144000: the keep age is capped so that one poll fits, and a
// poll that still exceeds the cap moves the cursor instead of stalling it forever.
func TestValueCapMovesTheCursor(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.DCGM.SampleInterval = 10 * time.Millisecond
	keep := historyKeep(cfg, 8, 7)
	assert.LessOrEqual(t, int(keep/cfg.DCGM.SampleInterval)*8*7, goDCGMValueCap, "a full history fits in one poll")
	assert.Equal(t, 30*time.Second, historyKeep(cfg, 1, 1), "small configurations keep 30 s")

	f := newFakeDCGM(1)
	f.valueCap = 50
	now := int64(1_800_000_000) * sec
	for k := int64(0); k < 100; k++ { // a backlog larger than the cap
		f.addSample(0, dcgmFieldPCIeTxRate, now-10*sec+k*100_000, 1000)
	}
	s, logs, clock := newTestScraper(t, f, nil)
	clock.t = time.UnixMicro(now)
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "history")).Len(), "said once")

	// New samples after the skip are read again.
	for k := int64(1); k <= 10; k++ {
		f.addSample(0, dcgmFieldPCIeTxRate, now+k*sec, 1000)
	}
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 9*1000, one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit").i,
		"the cursor moved past the backlog")
	clock.t = clock.t.Add(10 * time.Second)
	scrapeOnce(t, s)
	assert.Equal(t, 1, logs.FilterMessage("GPU series collected again").FilterField(zap.String("key", "history")).Len())
}

// TestConnectionLossClampsTheGap (G4): after nv-hostengine went away and came back, the samples
// in between are lost: the first sample after the reconnection is charged one nominal period,
// while a late sample on a live connection is charged its whole real interval.
func TestConnectionLossClampsTheGap(t *testing.T) {
	f := newFakeDCGM(1)
	f.addSample(0, dcgmFieldPCIeTxRate, 1*sec, 100)
	f.addSample(0, dcgmFieldPCIeTxRate, 2*sec, 100)
	f.addSample(0, dcgmFieldPCIeTxRate, 6*sec, 100) // late: covers 4 s
	s, _, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 500, one(t, m, "interconnect.io", "direction", "transmit").i, "1 s + the late sample's 4 s")

	f.historyErr = &dcgmError{op: "reading samples", code: dcgmStConnectionNotValid, msg: "dcgmGetValuesSince_v2 failed with error code -21"}
	clock.t = clock.t.Add(10 * time.Second)
	_, err := s.scrape(context.Background())
	require.Error(t, err, "a lost library is a scrape error")
	require.Nil(t, s.src)
	f.historyErr = nil
	f.addSample(0, dcgmFieldPCIeTxRate, 60*sec, 100) // the first after the hostengine restarted
	f.addSample(0, dcgmFieldPCIeTxRate, 61*sec, 100)
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.EqualValues(t, 500+100+100, one(t, m, "interconnect.io", "direction", "transmit").i,
		"the gap over the reconnection is one nominal period, not 54 s")
}

// TestProfilingGroupConflictCostsOnlyItsGroup (G7): before Hopper, metric groups with one major id
// and different minor ids cannot be watched together (DCGM API documentation of
// dcgmProfGetSupportedMetricGroups; DCGM_ST_PROFILING_MULTI_PASS, dcgm_structs.h). Here SM_ACTIVE
// (group A.0) and DRAM_ACTIVE (A.1) conflict: only DRAM_ACTIVE is lost, PCIe (group C.0) stays.
func TestProfilingGroupConflictCostsOnlyItsGroup(t *testing.T) {
	f := newFakeDCGM(1)
	f.groups = map[uint16]uint32{
		dcgmFieldGREngineActive: 1 << 16, dcgmFieldSMActive: 1 << 16, dcgmFieldDRAMActive: 1<<16 | 1,
		dcgmFieldPCIeTxRate: 3 << 16, dcgmFieldPCIeRxRate: 3 << 16, dcgmFieldNVLinkTxRate: 3 << 16, dcgmFieldNVLinkRxRate: 3 << 16,
	}
	f.watchErr = func(fields []uint16) error {
		minors := map[uint32]bool{}
		for _, id := range fields {
			if g, ok := f.groups[id]; ok && g>>16 == 1 {
				minors[g] = true
			}
		}
		if len(minors) > 1 {
			return &dcgmError{op: "watching fields", code: dcgmStProfilingMultiPass, msg: "multi pass"}
		}
		return nil
	}
	f.addSample(0, dcgmFieldPCIeTxRate, 1*sec, 100)
	f.addSample(0, dcgmFieldPCIeTxRate, 2*sec, 100)
	f.setDouble(0, dcgmFieldSMActive, 0.5)
	f.setDouble(0, dcgmFieldDRAMActive, 0.25)
	s, logs, _ := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 100, one(t, m, "interconnect.io", "component", "gpu_pcie", "direction", "transmit").i, "PCIe survives the conflict")
	assert.InDelta(t, 0.5, one(t, m, "gpu.sm.active").f, 1e-9)
	assert.Empty(t, points(m, "gpu.dram.active"))
	msgs := logs.FilterMessage("GPU series not collected").FilterField(zap.String("key", "iclens-latest")).All()
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0].ContextMap()["error"], "dram_active missing")
	assert.NotContains(t, msgs[0].ContextMap()["error"], "sm_active")
}

// TestMIGInstanceXIDs (G8): under MIG, DCGM records an XID raised inside a GPU or compute
// instance on that instance's entity only (DcgmCacheManager.cpp, nvmlEventTypeXidCriticalError:
// RecordXidForComputeInstance / RecordXidForGpuInstance unless both instance ids are blank), so
// the instances (dcgmGetGpuInstanceHierarchy) are watched for XIDs too and counted for their GPU;
// an XID of the GPU itself at the same moment is a separate event.
func TestMIGInstanceXIDs(t *testing.T) {
	f := newFakeDCGM(2)
	f.mig = []dcgmEntity{
		{group: dcgmFEGPUI, id: 0, gpu: 1}, {group: dcgmFEGPUCI, id: 0, gpu: 1}, {group: dcgmFEGPUCI, id: 1, gpu: 1},
	}
	f.addSample(1, dcgmFieldXID, 2*sec, 13) // the GPU itself
	f.history = append(f.history,
		dcgmValue{gpu: 0, entity: dcgmFEGPUCI, field: dcgmFieldXID, fieldType: dcgmTypeInt64, ts: 2 * sec, i: 13}, // same moment, CI 0
		dcgmValue{gpu: 1, entity: dcgmFEGPUCI, field: dcgmFieldXID, fieldType: dcgmTypeInt64, ts: 3 * sec, i: 43},
		dcgmValue{gpu: 0, entity: dcgmFEGPUI, field: dcgmFieldXID, fieldType: dcgmTypeInt64, ts: 4 * sec, i: 43},
		dcgmValue{gpu: 9, entity: dcgmFEGPUCI, field: dcgmFieldXID, fieldType: dcgmTypeInt64, ts: 5 * sec, i: 43}, // unknown instance
	)
	s, _, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	assert.EqualValues(t, 2, one(t, m, "gpu.xid.errors", "device", "gpu1", "xid", int64(13)).i, "the GPU's and the instance's")
	assert.EqualValues(t, 2, one(t, m, "gpu.xid.errors", "device", "gpu1", "xid", int64(43)).i)
	assert.Empty(t, find(m, "gpu.xid.errors", "device", "gpu0"))
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.EqualValues(t, 2, one(t, m, "gpu.xid.errors", "device", "gpu1", "xid", int64(43)).i, "not counted twice")

	// No MIG (the hierarchy call fails on GPUs without MIG support): no MIG watch.
	g := newFakeDCGM(1)
	g.migErr = &dcgmError{op: "listing MIG instances", code: dcgmStNotSupported, msg: "not supported"}
	s2, logs, _ := newTestScraper(t, g, nil)
	require.NoError(t, s2.start(context.Background(), nil))
	scrapeOnce(t, s2)
	assert.Empty(t, g.migWatches)
	assert.Zero(t, logs.FilterField(zap.String("key", "iclens-mig-xid")).Len())
}
