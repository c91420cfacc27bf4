package cpuuncorereceiver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
)

// Each test here covers one correctness guard of resolve.go, on a fixture of the kernel version
// that has the bug and on one that has the fix; each names the upstream commit or perfmon entry.

// corrections returns the Info lines that mention sub: a kernel bug the receiver corrects is a
// fact about the host, not lost data.
func corrections(ts *testScraper, sub string) []string {
	assert.Empty(ts.t, logged(ts, zapcore.WarnLevel, sub), "a corrected kernel bug is no warning")
	return logged(ts, zapcore.InfoLevel, sub)
}

// scaleKey is the attributes of one cpuuncore.event.bytes_per_count point.
type scaleKey struct{ pmu, event, source string }

// scales returns cpuuncore.event.bytes_per_count (metrictest.Points) by its attributes.
func scales(md pmetric.Metrics) map[scaleKey]float64 {
	out := map[scaleKey]float64{}
	for _, dp := range metrictest.Points(md, "cpuuncore.event.bytes_per_count") {
		get := func(k string) string { v, _ := dp.Attributes().Get(k); return v.Str() }
		out[scaleKey{get("pmu"), get("event"), get("scale.source")}] = dp.DoubleValue()
	}
	return out
}

func withScales(c *Config) { c.Metrics.CpuuncoreEventBytesPerCount.Enabled = true }

// ICX before v5.17 carries the SKX cas_count umasks (0x03/0x0c); perfmon icelakex and the fixed
// kernel say 0x0f/0x30. PMU types in testdata/icx*: uncore_imc_N = 40+N.
func TestGuardICXCASUmasks(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		noted   bool
	}{{"icx_v5.15", true}, {"icx", false}} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestScraper(t, tc.fixture, func(c *Config) { c.PCIe.Enabled = false })
			assert.Equal(t, [][]uint64{{0x0f04, 0x3004}}, ts.fake.openAttrs(40, 0), "the fixed encodings are counted either way")
			notes := corrections(ts, "96fd2e89fba1")
			if tc.noted {
				require.Len(t, notes, 2, "once per alias, not once per PMU: %v", notes)
				assert.Contains(t, notes[0], `kernel_encoding=event=0x04,umask=0x03 `)
			} else {
				assert.Empty(t, notes)
			}
			ts.fake.add(0, 40, 0x0f04, 3)
			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)
			assert.Equal(t, int64(3*64), ioPoints(t, md)[io("cpu_memory", "read", "socket0/imc", "", 0)].value)
		})
	}
}

// ICX/SPR IIO free-running bw_in counts 32 bytes; kernels before the 2025 fix print a 4-byte
// scale (3.814697266e-6 MiB). The receiver counts 32 either way and says which it used.
// uncore_iio_free_running_N = 62+N on ICX, 92+N on SPR; uncore_iio_N = 56+N on ICX, 80+N on SPR.
func TestGuardIIOScale(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		typ     uint32 // uncore_iio_free_running_0
		box     uint32 // uncore_iio_0
		source  string
	}{{"icx_v5.15", 62, 56, "corrected"}, {"icx", 62, 56, "sysfs"}, {"spr_v6.1", 92, 80, "corrected"}, {"spr", 92, 80, "sysfs"}} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestScraper(t, tc.fixture, func(c *Config) {
				c.Memory.Enabled = false
				withScales(c)
			})
			// Only bw_in: SPR's early bw_out_port events (spr_v6.1) were removed from the kernel
			// as not counting a constant size, and are not used.
			assert.Equal(t, [][]uint64{{0x20ff, 0x21ff, 0x22ff, 0x23ff, 0x24ff, 0x25ff, 0x26ff, 0x27ff}}, ts.fake.openAttrs(tc.typ, 0))
			ts.fake.add(0, tc.typ+1, 0x20ff, 10)
			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)
			got := ioPoints(t, md)
			assert.Equal(t, int64(10*32), got[io("cpu_pcie", "receive", "socket0/iio1", "", 0)].value)
			// Transmit comes from the programmable events of uncore_iio_1, not from bw_out.
			assert.Equal(t, int64(0), got[io("cpu_pcie", "transmit", "socket0/iio1", "", 0)].value)
			assert.Equal(t, [][]uint64{{0x00070ff000000483, 0x00070ff0000001c0, 0x00070ff0000002c0}}, ts.fake.openAttrs(tc.box+1, 0), "mem read, mem write, peer write")
			pmu := scaleKey{"uncore_iio_free_running_1", "bw_in_port0", tc.source}
			assert.Equal(t, 32.0, scales(md)[pmu], "%v", scales(md))
			notes := corrections(ts, "Fix the scale of IIO free running counters")
			if tc.source == "corrected" {
				assert.Len(t, notes, 8, "one per port alias: %v", notes)
				assert.Contains(t, notes[0], "kernel_bytes_per_count=4 ")
			} else {
				assert.Empty(t, notes)
			}
		})
	}
}

// GNR has two subchannels per channel; unpatched kernels name only subchannel 0
// (cas_count_read/write = event 0x05). Both are counted from perfmon's encodings.
// uncore_imc_N = 110+N in testdata/gnr*.
func TestGuardGNRSubchannels(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		source  string
	}{{"gnr_unpatched", "builtin"}, {"gnr", "sysfs"}} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestScraper(t, tc.fixture, func(c *Config) {
				c.PCIe.Enabled = false
				withScales(c)
			})
			assert.Equal(t, [][]uint64{{0xcf05, 0xcf06, 0xf005, 0xf006}}, ts.fake.openAttrs(110, 128))
			ts.fake.add(128, 110, 0xcf05, 100) // SCH0 reads
			ts.fake.add(128, 110, 0xcf06, 90)  // SCH1 reads
			ts.fake.add(128, 111, 0xf006, 7)   // SCH1 writes on another channel
			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)
			got := ioPoints(t, md)
			assert.Equal(t, int64((100+90)*64), got[io("cpu_memory", "read", "socket1/imc", "", 1)].value)
			assert.Equal(t, int64(7*64), got[io("cpu_memory", "write", "socket1/imc", "", 1)].value)
			assert.Equal(t, 64.0, scales(md)[scaleKey{"uncore_imc_0", "cas_count_read_sch1", tc.source}])
			if tc.source == "builtin" {
				assert.Len(t, corrections(ts, "6a8a48644c4b"), 4)
			} else {
				assert.Empty(t, corrections(ts, "6a8a48644c4b"))
			}
		})
	}
}

// SPR kernels before v6.4 have the IMC PMUs without cas_count aliases: the raw encodings
// (perfmon sapphirerapids UNC_M_CAS_COUNT.RD 0x05/0xcf, .WR 0x05/0xf0) work there.
func TestGuardSPRWithoutAliases(t *testing.T) {
	ts := newTestScraper(t, "spr_v6.1", func(c *Config) { c.PCIe.Enabled = false })
	assert.Equal(t, [][]uint64{{0xcf05, 0xf005}}, ts.fake.openAttrs(70, 56))
	assert.Len(t, corrections(ts, "743767d6f6b8"), 2)
	ts.fake.add(56, 77, 0xf005, 11)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(11*64), ioPoints(t, md)[io("cpu_memory", "write", "socket1/imc", "", 1)].value)
}

// SKX IIO free-running counters are 36 bits (skx_iio_freerunning BW width 36): 256 GiB at 4 B
// a count, about 17 s at PCIe 3.0 x16 line rate. With a longer collection_interval the receiver
// reads them in between (fold.go), so no wrap is lost; a read that still comes too late is
// returned as a scrape error (logged once), and the series stays a lower bound: no reset, no
// invented traffic.
func TestGuardSKXWrap(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) {
		c.Memory.Enabled = false
		c.CollectionInterval = 30 * time.Second
	})
	assert.Equal(t, 8724*time.Millisecond, ts.foldEvery().Round(time.Millisecond), "half of 2^36 x 4 B / 15.75 GB/s")
	require.NotNil(t, ts.foldStop, "background reader running")
	var said []string
	for _, m := range messages(ts.logs, zapcore.InfoLevel) {
		if strings.Contains(m, "reading them in between") && strings.Contains(m, "every=9s") {
			said = append(said, m)
		}
	}
	require.Len(t, said, 1)

	ts.fake.add(0, skxFree0+1, bwIn0, 1000)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	first := ioPoints(t, md)[io("cpu_pcie", "receive", "socket0/iio1", "", 0)]
	assert.Equal(t, int64(4000), first.value)

	// Folded in between: a 30 s scrape interval is fine.
	reads := ts.fake.reads
	for i := 0; i < 3; i++ {
		ts.tick(8 * time.Second)
		ts.mu.Lock()
		ts.fold(ts.clock)
		ts.mu.Unlock()
	}
	assert.Equal(t, reads+3*12, ts.fake.reads, "only the 12 wrapping groups are read in between")
	ts.fake.add(0, skxFree0+1, bwIn0, 10)
	ts.tick(6 * time.Second)
	md, err = ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(4040), ioPoints(t, md)[io("cpu_pcie", "receive", "socket0/iio1", "", 0)].value)

	// Not folded (the reader could not run): the late read is reported once.
	ts.fake.add(0, skxFree0+1, bwIn0, 10)
	ts.tick(30 * time.Second)
	md, err = ts.scrape(t.Context())
	require.Error(t, err)
	assert.True(t, scrapererror.IsPartialScrapeError(err))
	assert.Contains(t, err.Error(), "12 IIO free-running groups")
	assert.Contains(t, err.Error(), "36-bit")
	p := ioPoints(t, md)[io("cpu_pcie", "receive", "socket0/iio1", "", 0)]
	assert.Equal(t, int64(4080), p.value, "what the kernel counted is still reported")
	assert.Equal(t, first.start, p.start, "never a reset")
	assert.Zero(t, partialFailed(t, err), "no point is lost: the series is a lower bound")
	ts.tick(30 * time.Second)
	_, err = ts.scrape(t.Context())
	assert.ErrorContains(t, err, errWrapRisk.Error(), "returned on every scrape it happens")
	assert.Len(t, logged(ts, zapcore.WarnLevel, "read less often than they wrap"), 1, "logged once")

	require.NoError(t, ts.shutdown(t.Context()))
	assert.Nil(t, ts.foldStop, "background reader stopped on shutdown")

	fast := newTestScraper(t, "skx", func(c *Config) { c.CollectionInterval = 5 * time.Second })
	assert.Nil(t, fast.foldStop)
	// ICX counters are 48 bits: no window to respect.
	icx := newTestScraper(t, "icx", func(c *Config) { c.CollectionInterval = 5 * time.Minute })
	assert.Nil(t, icx.foldStop)
}

// AMD UMC counters saturate at 48 bits on kernels without 2492e5aba2be: the group is reopened
// before 2^47 counts, and the series continues across the reopen. amd_umc_N = 20+N in
// testdata/zen4; umc_cas_cmd.rd = event 0x0a rdwrmask 1 (0x10a), .wr = 0x20a.
func TestGuardUMCSaturation(t *testing.T) {
	ts := newTestScraper(t, "zen4", nil)
	assert.Equal(t, [][]uint64{{0x10a, 0x20a}}, ts.fake.openAttrs(20, 0))
	assert.Equal(t, [][]uint64{{0x10a, 0x20a}}, ts.fake.openAttrs(20+12, 96))
	assert.Equal(t, 24, ts.fake.opened, "24 UMC, no PCIe source on AMD")

	ts.fake.add(0, 20, 0x10a, 1<<47)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	first := ioPoints(t, md)[io("cpu_memory", "read", "socket0/umc", "", 0)]
	assert.Equal(t, int64(1<<47)*64, first.value)
	assert.Equal(t, 25, ts.fake.opened, "the group reached 2^47 counts and was reopened")
	assert.Equal(t, 1, ts.fake.closed)

	ts.fake.add(0, 20, 0x10a, 5)
	ts.tick(5 * time.Second)
	md, err = ts.scrape(t.Context())
	require.NoError(t, err)
	p := ioPoints(t, md)[io("cpu_memory", "read", "socket0/umc", "", 0)]
	assert.Equal(t, (int64(1<<47)+5)*64, p.value, "counts after the reopen add to the series")
	assert.Equal(t, first.start, p.start, "no reset")
	assert.Equal(t, 25, ts.fake.opened)
}

// AMD Zen 2/3 have no UMC PMU: the Data Fabric counts DRAM "requests with data (64B)" per
// channel, reads and writes together (perf amdzen3/data-fabric.json dram_channel_data_controller_N,
// EventCode 0x07+0x40*N, UMask 0x38), reported as cpuuncore.memory.io, never as read or write.
// 8 events share 4 DF counters: each is its own group, multiplexed by the kernel and extrapolated.
func TestZen3DataFabricCombined(t *testing.T) {
	ts := newTestScraper(t, "zen3", nil)
	assert.Equal(t, "zen2/3", ts.plat.name)
	groups := ts.fake.openAttrs(11, 64)
	require.Len(t, groups, 8, "one event per group")
	assert.Equal(t, []uint64{0x3807}, groups[0], "amdzen3/data-fabric.json dram_channel_data_controller_0: EventCode 0x07, UMask 0x38")
	assert.Equal(t, []uint64{0x0000000100003807}, groups[4], "controller4: event 0x107, high bits at config:32-35")

	ts.fake.runningPercent = 50
	ts.fake.add(64, 11, 0x3807, 100)
	ts.fake.add(64, 11, 0x0000000100003807, 300)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Empty(t, ioPoints(t, md), "no read/write split to report")
	combined := map[string]int64{}
	forEachMetric(md, "cpuuncore.memory.io", func(m pmetric.Metric) {
		require.True(t, m.Sum().IsMonotonic())
		for i := 0; i < m.Sum().DataPoints().Len(); i++ {
			dp := m.Sum().DataPoints().At(i)
			d, _ := dp.Attributes().Get("device")
			combined[d.Str()] = dp.IntValue()
		}
	})
	assert.Equal(t, map[string]int64{"socket0/df": 0, "socket1/df": 400 * 64}, combined)
}

// AMD Zen 4 on a kernel before 6.7 has no amd_umc PMU: the PerfMonV2 Data Fabric splits reads
// from writes per channel (perf amdzen4/data-fabric.json local_processor_read/write_data_beats_csN,
// EventCode 0x1f+0x40*N, UMask 0x7fe / 0x7ff, 64 B a beat): reported as cpu_memory read and write.
func TestZen4DataFabricBeforeUMC(t *testing.T) {
	ts := newTestScraper(t, "zen4_v6.1", nil)
	assert.Equal(t, "zen4", ts.plat.name)
	groups := ts.fake.openAttrs(11, 96)
	require.Len(t, groups, 48, "one event per group: 12 channels x local/remote x read/write")
	assert.Equal(t, []uint64{0x000000000700fe1f}, groups[0], "amdzen4/data-fabric.json local_processor_read_data_beats_cs0: EventCode 0x1f, UMask 0x7fe")
	assert.Equal(t, []uint64{0x000000000700ff1f}, groups[1], "cs0 write")
	assert.Equal(t, []uint64{0x000000010700fe1f}, groups[16], "cs4 read: event 0x11f, bit 8 of the event at config:32")

	ts.fake.runningPercent = 25 // 24 events on the DF counters: multiplexed (counts divisible by 4: the fake truncates)
	ts.fake.add(96, 11, 0x000000000700fe1f, 100)
	ts.fake.add(96, 11, 0x000000010700fe1f, 48)
	ts.fake.add(96, 11, 0x000000000700ff1f, 12)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64((100+48)*64), got[io("cpu_memory", "read", "socket1/df", "", 1)].value, "extrapolated by time_enabled/time_running")
	assert.Equal(t, int64(12*64), got[io("cpu_memory", "write", "socket1/df", "", 1)].value)
	assert.Equal(t, int64(0), got[io("cpu_memory", "read", "socket0/df", "", 0)].value)
}
