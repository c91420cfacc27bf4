package cpuuncorereceiver

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
)

// SKX encodings (testdata/skx, from uncore_snbep.c): cas_count_read event=0x04,umask=0x03,
// cas_count_write umask=0x0c; bw_in_port0 event=0xff,umask=0x20; bw_out_port0 umask=0x24.
const (
	skxCASRead  = 0x0304
	skxCASWrite = 0x0c04
	bwIn0       = 0x20ff
	bwOut0      = 0x24ff
	// PMU types in testdata/skx: uncore_imc_N = 13+N, uncore_iio_free_running_N = 25+N.
	skxIMC0  = 13
	skxFree0 = 25
)

func TestScrapeKnownBytesSKX(t *testing.T) {
	// Transmit from the free-running bw_out (pcie.skx_bw_out; the default is the programmable
	// events, TestSKXTransmitFromProgrammableEvents).
	ts := newTestScraper(t, "skx", func(c *Config) { c.PCIe.SKXBandwidthOut = true })
	started := pcommon.NewTimestampFromTime(ts.clock)

	// The receiver opened one group per PMU and die, on the cpumask CPU, with the kernel's
	// encodings.
	assert.Equal(t, [][]uint64{{skxCASRead, skxCASWrite}}, ts.fake.openAttrs(skxIMC0, 0))
	assert.Equal(t, [][]uint64{{skxCASRead, skxCASWrite}}, ts.fake.openAttrs(skxIMC0+5, 28))
	assert.Equal(t, [][]uint64{{0x20ff, 0x21ff, 0x22ff, 0x23ff, 0x24ff, 0x25ff, 0x26ff, 0x27ff}}, ts.fake.openAttrs(skxFree0+1, 28))
	assert.Equal(t, 24, ts.fake.opened, "6 IMC + 6 IIO free-running PMUs on 2 dies")

	f := ts.fake
	f.add(0, skxIMC0, skxCASRead, 1000)
	f.add(0, skxIMC0, skxCASWrite, 500)
	f.add(0, skxIMC0+3, skxCASRead, 10)
	f.add(28, skxIMC0, skxCASRead, 7)
	f.add(0, skxFree0+1, bwIn0, 100)
	f.add(0, skxFree0+1, bwOut0, 50)
	f.add(28, skxFree0+2, bwIn0+0x300, 3) // bw_in_port3 of stack 2 on socket 1
	ts.tick(5 * time.Second)

	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Len(t, got, 2*2+2*6*2, "read/write per socket, receive/transmit per stack and socket")
	want := map[ioKey]int64{
		io("cpu_memory", "read", "socket0/imc", "", 0):    (1000 + 10) * 64,
		io("cpu_memory", "write", "socket0/imc", "", 0):   500 * 64,
		io("cpu_memory", "read", "socket1/imc", "", 1):    7 * 64,
		io("cpu_memory", "write", "socket1/imc", "", 1):   0,
		io("cpu_pcie", "receive", "socket0/iio1", "", 0):  100 * 4,
		io("cpu_pcie", "transmit", "socket0/iio1", "", 0): 50 * 4,
		io("cpu_pcie", "receive", "socket1/iio2", "", 1):  3 * 4,
		io("cpu_pcie", "transmit", "socket1/iio2", "", 1): 0,
		io("cpu_pcie", "receive", "socket0/iio5", "", 0):  0,
		io("cpu_pcie", "transmit", "socket1/iio0", "", 1): 0,
	}
	for k, v := range want {
		require.Contains(t, got, k)
		assert.Equal(t, v, got[k].value, k)
		assert.Equal(t, started, got[k].start, "series start when the counters were opened: %s", k)
	}

	// Cumulative: the next scrape adds to the totals.
	f.add(0, skxIMC0+5, skxCASWrite, 2)
	f.add(0, skxFree0+1, bwIn0, 1)
	ts.tick(5 * time.Second)
	md, err = ts.scrape(t.Context())
	require.NoError(t, err)
	got = ioPoints(t, md)
	assert.Equal(t, int64(502*64), got[io("cpu_memory", "write", "socket0/imc", "", 0)].value)
	assert.Equal(t, int64(101*4), got[io("cpu_pcie", "receive", "socket0/iio1", "", 0)].value)
	assert.Equal(t, started, got[io("cpu_pcie", "receive", "socket0/iio1", "", 0)].start)

	// Not multiplexed: running ratio 1 for every PMU.
	n := 0
	forEachMetric(md, "cpuuncore.counter.running_ratio", func(m pmetric.Metric) {
		for i := 0; i < m.Gauge().DataPoints().Len(); i++ {
			assert.Equal(t, 1.0, m.Gauge().DataPoints().At(i).DoubleValue())
			n++
		}
	})
	assert.Equal(t, 12, n, "one ratio per PMU")

	require.NoError(t, ts.shutdown(t.Context()))
	assert.Equal(t, ts.fake.opened, ts.fake.closed, "every group closed on shutdown")
}

// TestPortGranularitySKX checks the stack -> root bus -> root port mapping on the SKX fixture:
// uncore_iio_1/die0 = 0000:17, part 0 = root port 0000:17:00.0 with an RDMA NIC behind it;
// uncore_iio_2/die0 = 0000:3a, part 2 = 0000:3a:02.0 with a GPU behind a PCIe switch;
// uncore_iio_2/die1 = 0000:ae, part 0 = 0000:ae:00.0 on NUMA node 1; uncore_iio_4 has no
// mapping (its die files are hidden for bus 0), so its ports have no pci.bus_id. The devices
// behind a port are its endpoints: the switch's ports (class 0x060400, pci-sysfs.c class_show)
// carry no bytes of their own and are not listed.
func TestPortGranularitySKX(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) { c.PCIe.Granularity = GranularityPort; c.PCIe.SKXBandwidthOut = true })
	ts.fake.add(0, skxFree0+2, 0x22ff, 9) // bw_in_port2 of stack 2, socket 0
	ts.fake.add(28, skxFree0+2, bwOut0, 5)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64(9*4), got[io("cpu_pcie", "receive", "socket0/iio2/port2", "0000:3a:02.0", 0)].value)
	assert.Equal(t, int64(5*4), got[io("cpu_pcie", "transmit", "socket1/iio2/port0", "0000:ae:00.0", 1)].value)
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio1/port0", "0000:17:00.0", 0))
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio4/port3", "", 0), "unmapped stack: no bus id")
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio1/port1", "", 0), "no root port 17:01.0 in the tree")
	assert.Len(t, got, 2*2+2*6*4*2)

	var devices []map[string]any
	for _, dp := range metrictest.Points(md, "cpuuncore.pcie.device") {
		devices = append(devices, dp.Attributes().AsRaw())
	}
	dev := func(device, rootPort, busID string, numa int64) map[string]any {
		return map[string]any{"device": device, "pci.root_port": rootPort, "pci.bus_id": busID, "numa.node": numa}
	}
	assert.ElementsMatch(t, []map[string]any{
		dev("socket0/iio1/port0", "0000:17:00.0", "0000:18:00.0", 0),
		dev("socket0/iio1/port0", "0000:17:00.0", "0000:18:00.1", 0),
		dev("socket0/iio2/port2", "0000:3a:02.0", "0000:3d:00.0", 0),
		dev("socket1/iio2/port0", "0000:ae:00.0", "0000:af:00.0", 1),
	}, devices)
}

// TestMultiplexedGroupIsScaled: when the kernel multiplexes a group (other users of the IMC
// counters), values are extrapolated by time_enabled/time_running and the ratio is reported.
func TestMultiplexedGroupIsScaled(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) { c.PCIe.Enabled = false })
	ts.fake.runningPercent = 50
	ts.fake.add(0, skxIMC0, skxCASRead, 1000)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(1000*64), ioPoints(t, md)[io("cpu_memory", "read", "socket0/imc", "", 0)].value)
	ratios := 0
	forEachMetric(md, "cpuuncore.counter.running_ratio", func(m pmetric.Metric) {
		for i := 0; i < m.Gauge().DataPoints().Len(); i++ {
			assert.InDelta(t, 0.5, m.Gauge().DataPoints().At(i).DoubleValue(), 1e-9)
			ratios++
		}
	})
	assert.Equal(t, 6, ratios)
}

// TestReadFailureCostsOnlyItsSeries: one PMU whose read fails loses its series, the others are
// reported, and the group is reopened by rediscovery. The failure is returned on every scrape it
// lasts, with the points it costs (scraperhelper counts them in
// otelcol_scraper_errored_metric_points), and logged once.
func TestReadFailureCostsOnlyItsSeries(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) {
		c.Memory.Granularity = GranularityController
		c.PCIe.Enabled = false
	})
	broken := true
	ts.fake.readErr = func(cpu int, attrs []perf.Attr) error {
		if broken && cpu == 28 && attrs[0].Type == skxIMC0+2 {
			return syscall.ENODEV
		}
		return nil
	}
	ts.fake.add(0, skxIMC0+2, skxCASRead, 4)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.Error(t, err)
	assert.True(t, scrapererror.IsPartialScrapeError(err))
	assert.Contains(t, err.Error(), "uncore_imc_2 on CPU 28")
	got := ioPoints(t, md)
	assert.NotContains(t, got, io("cpu_memory", "read", "socket1/imc2", "", 1))
	assert.Equal(t, int64(4*64), got[io("cpu_memory", "read", "socket0/imc2", "", 0)].value)
	assert.Len(t, got, 2*6*2-2)
	assert.Equal(t, 2, partialFailed(t, err), "read and write of socket1/imc2")

	// The group stays closed until rediscovery: the next scrape fails the same two points again
	// (on main it returned nil: only new failures were returned), and nothing more is logged.
	ts.tick(5 * time.Second)
	_, err = ts.scrape(t.Context())
	require.Error(t, err)
	assert.Equal(t, 2, partialFailed(t, err))
	assert.Contains(t, err.Error(), "uncore_imc_2 on CPU 28")
	assert.Len(t, logged(ts, zapcore.WarnLevel, "Cannot read uncore counters"), 1, "logged once")

	// A minute later discovery reopens the group; its series comes back and continues.
	broken = false
	ts.tick(time.Minute)
	_, err = ts.scrape(t.Context()) // still not open when read, then rediscovers
	require.Error(t, err)
	assert.Equal(t, 2, partialFailed(t, err))
	ts.fake.add(28, skxIMC0+2, skxCASRead, 3)
	ts.tick(5 * time.Second)
	md, err = ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(3*64), ioPoints(t, md)[io("cpu_memory", "read", "socket1/imc2", "", 1)].value)
}

// TestPermissionDeniedNamesTheFix: EACCES from perf_event_open (perf_event_paranoid 2, no
// CAP_PERFMON) is said once, with the fix, and the receiver keeps running with nothing open;
// every scrape returns the series it cannot read.
func TestPermissionDeniedNamesTheFix(t *testing.T) {
	fakeDenied := func(cfg *Config) {}
	ts := newTestScraper(t, "icx", fakeDenied)
	// Re-run discovery with a denying source: the first discovery already opened groups.
	require.NoError(t, ts.shutdown(t.Context()))
	ts.plan = &plan{}
	ts.fake.openErr = func(int, []perf.Attr) error { return syscall.EACCES }
	ts.discover(ts.clock)
	warns := messages(ts.logs, zapcore.WarnLevel)
	denied := 0
	for _, m := range warns {
		assert.NotContains(t, m, "Cannot open")
		if strings.Contains(m, "perf_event_open was denied") {
			denied++
			assert.Contains(t, m, "perf_event_paranoid")
			assert.Contains(t, m, "CAP_PERFMON")
			assert.Contains(t, m, "CAP_SYS_ADMIN")
			assert.Contains(t, m, "groups=48 ")
			assert.Contains(t, m, "first=uncore_imc_0 on CPU 0, uncore_imc_0 on CPU 40, uncore_imc_1 on CPU 0 and 45 more ")
		}
	}
	assert.Equal(t, 1, denied, "one line for all denied groups: %v", warns)

	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.Error(t, err, "every scrape says what it could not read")
	assert.Equal(t, len(ts.plan.aggs), partialFailed(t, err), "every series")
	assert.Contains(t, err.Error(), "48 counter groups not open")
	assert.Contains(t, err.Error(), "perf_event_paranoid")
	assert.Empty(t, ioPoints(t, md))
	ts.tick(time.Minute)
	_, err = ts.scrape(t.Context()) // retries discovery, still denied: no new log line
	assert.Error(t, err)
	again := 0
	for _, m := range messages(ts.logs, zapcore.WarnLevel) {
		if strings.Contains(m, "perf_event_open was denied") {
			again++
		}
	}
	assert.Equal(t, 1, again)
}

// ICX has no bw_out free-running counters: transmit (device reads of host memory + CPU MMIO
// writes, perfmon UNC_IIO_DATA_REQ_OF_CPU.MEM_READ / DATA_REQ_BY_CPU.MEM_WRITE, 4 bytes a count)
// comes from the programmable uncore_iio_N events (types 56+N in testdata/icx). Per port the
// eight groups of a box are multiplexed by the kernel: counts are extrapolated and the ratio is
// exposed.
func TestProgrammableTransmitICX(t *testing.T) {
	const (
		ibReadAll   = 0x00070ff000000483 // event=0x83,umask=0x04,ch_mask=0xff,fc_mask=0x7
		obWriteAll  = 0x00070ff0000001c0 // event=0xc0,umask=0x01,ch_mask=0xff,fc_mask=0x7
		ibReadPart0 = 0x0007001000000483 // ch_mask=0x1: part 0 (perfmon icelakex PortMask 0x01, perf's ch_mask)
		obWritePt0  = 0x00070010000001c0
		// event=0xc0,umask=0x02: perfmon icelakex_uncore_experimental.json
		// UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE.PARTn (TestPeerWritesICXSPREMR)
		peerWriteAll = 0x00070ff0000002c0
		peerWritePt0 = 0x00070010000002c0
		icxIIO0      = 56
	)
	ts := newTestScraper(t, "icx", func(c *Config) { c.Memory.Enabled = false })
	assert.Equal(t, [][]uint64{{ibReadAll, obWriteAll, peerWriteAll}}, ts.fake.openAttrs(icxIIO0, 40))
	ts.fake.add(40, icxIIO0+1, ibReadAll, 1000)
	ts.fake.add(40, icxIIO0+1, obWriteAll, 24)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64((1000+24)*4), ioPoints(t, md)[io("cpu_pcie", "transmit", "socket1/iio1", "", 1)].value)

	port := newTestScraper(t, "icx", func(c *Config) {
		c.Memory.Enabled = false
		c.PCIe.Granularity = GranularityPort
	})
	groups := port.fake.openAttrs(icxIIO0, 0)
	require.Len(t, groups, 8, "one group per part: 0x83 may only use counters 0-1, 0xc0 counters 2-3")
	assert.Equal(t, []uint64{ibReadPart0, obWritePt0, peerWritePt0}, groups[0])
	assert.Equal(t, []uint64{0x0007080000000483, 0x00070800000001c0, 0x00070800000002c0}, groups[7], "part 7: ch_mask=0x80")

	port.fake.runningPercent = 25
	port.fake.add(0, icxIIO0, ibReadPart0, 400)
	port.fake.add(0, icxIIO0+6, 0x20ff, 40) // bw_in_port0 of stack 0
	port.tick(5 * time.Second)
	md, err = port.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	// Stack 0 of die 0 is on root bus 0000:16 (uncore_iio_0/die0); part 0 = root port 16:02.0.
	assert.Equal(t, int64(400*4), got[io("cpu_pcie", "transmit", "socket0/iio0/port0", "0000:16:02.0", 0)].value, "extrapolated from a quarter of the time")
	assert.Equal(t, int64(40*32), got[io("cpu_pcie", "receive", "socket0/iio0/port0", "0000:16:02.0", 0)].value)
	ratios := metrictest.Points(md, "cpuuncore.counter.running_ratio")
	require.NotEmpty(t, ratios)
	for _, dp := range ratios {
		assert.InDelta(t, 0.25, dp.DoubleValue(), 1e-9)
	}
}
