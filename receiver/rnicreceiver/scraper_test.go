//go:build linux

package rnicreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// grow adds to every statistic of the fake its own value, as testfs.GrowCounters does to a tree.
func (f *fakeEthtool) grow() {
	for _, st := range f.stats {
		for k, v := range st {
			st[k] = 2 * v
		}
	}
}

// cumulativePoints returns the points of every sum of md (all of the receiver's sums are
// cumulative), by metric name and attributes.
func cumulativePoints(md pmetric.Metrics) map[string]pmetric.NumberDataPoint {
	out := map[string]pmetric.NumberDataPoint{}
	for name, dps := range metrictest.ByType(md, pmetric.MetricTypeSum) {
		for _, dp := range dps {
			out[fmt.Sprint(name, dp.Attributes().AsRaw())] = dp
		}
	}
	return out
}

// injectFaults makes the reads of mlx5_bad fail the way kernels fail them: EIO, EACCES (an LSM or
// a container's mount), and the two errnos with which the kernel says the hardware does not
// provide a counter: EINVAL (a PMA query that failed on a modern kernel) and EOPNOTSUPP.
var injectedFailures = []string{"mlx5_bad/ports/1/counters/port_rcv_data", "mlx5_bad/ports/1/counters/port_xmit_packets", "mlx5_bad/ports/1/counters/symbol_error"}

func injectFaults(s *rnicScraper) {
	s.reader.OnOpen = func(p string) error {
		switch {
		case strings.HasSuffix(p, "mlx5_bad/ports/1/counters/port_rcv_data"):
			return unix.EIO
		case strings.HasSuffix(p, "mlx5_bad/ports/1/counters/port_xmit_packets"):
			return unix.EACCES
		case strings.HasSuffix(p, "mlx5_bad/ports/1/rate"):
			return unix.EINVAL
		case strings.HasSuffix(p, "mlx5_bad/ports/1/counters/port_xmit_wait"):
			return unix.EOPNOTSUPP
		}
		return nil
	}
}

// TestScrapeSyntheticNode scrapes the synthetic node (internal/testfs/rdmanode.go) twice, its
// counters grown by their own values in between (scrapeGrown), and checks the second scrape's
// values against the fixture's inputs, then against the golden file (which shows every point).
func TestScrapeSyntheticNode(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, logs := newTestScraperWith(t, root, func(cfg *Config) {
		cfg.Metrics.RnicDriverCounter.Enabled = true
	}, func(s *rnicScraper) { s.clock = stepClock() })
	injectFaults(s)
	_, err := s.scrape(context.Background())

	// mlx5_bad's two injected failures and its garbage symbol_error, each naming its file; the
	// rest of the node is scraped. The counters the hardware does not provide (EINVAL, EOPNOTSUPP)
	// are no error: each is said once at info level and left out from then on.
	require.Error(t, err)
	require.True(t, scrapererror.IsPartialScrapeError(err))
	for _, f := range injectedFailures {
		assert.Contains(t, err.Error(), f)
	}
	assert.Contains(t, err.Error(), "permission denied")
	for _, f := range []string{"mlx5_bad/ports/1/rate", "mlx5_bad/ports/1/counters/port_xmit_wait"} {
		assert.NotContains(t, err.Error(), f)
		said := logs.FilterMessage("Counter not provided by the hardware; not read again").FilterFieldKey("key").All()
		assert.True(t, slices.ContainsFunc(said, func(e observer.LoggedEntry) bool {
			return strings.HasSuffix(e.ContextMap()["key"].(string), f) && e.Level == zapcore.InfoLevel
		}), "%s said at info level", f)
	}
	faults := s.reader.OnOpen
	var opened []string
	s.reader.OnOpen = func(p string) error { opened = append(opened, p); return faults(p) }
	defer func() {
		for _, f := range []string{"mlx5_bad/ports/1/rate", "mlx5_bad/ports/1/counters/port_xmit_wait"} {
			assert.False(t, slices.ContainsFunc(opened, func(p string) bool { return strings.HasSuffix(p, f) }), "%s not read again", f)
		}
	}()
	var perr scrapererror.PartialScrapeError
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, 6, perr.Failed, "each failed file costs its metric's point and its rnic.driver.counter point")
	md, err := scrapeGrown(t, s, root)
	// Every failure is returned on every scrape it happens, so scraperhelper counts its points.
	require.Error(t, err)
	for _, f := range injectedFailures {
		assert.Contains(t, err.Error(), f, "returned again")
	}
	assert.NotContains(t, err.Error(), "port_xmit_wait", "not read again")
	assert.Equal(t, 1, logs.FilterMessage("Read failed; its points are missing").FilterField(zap.String("key", filepath.Join(root, "sys/class/infiniband", injectedFailures[0]))).Len(),
		"logged when it starts, not on every scrape")

	// RoCE LAG port, telegraf's values: port_xmit_data counts 4-octet words.
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	assert.Equal(t, int64(34600185253*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "receive")))
	dp, _ := metrictest.Find(md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
	assert.Equal(t, "0000:3b:00.0", dp.Attributes().AsRaw()["pci.bus_id"])
	assert.Equal(t, int64(0), dp.Attributes().AsRaw()["numa.node"])
	// The bond carries the port's IP traffic (gid_attrs/ndevs/0 = bond0), not the function's netdev.
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}))
	absent(t, md, "interconnect.io", map[string]any{"device": "ens1f0np0"})
	assert.Equal(t, int64(19000), value(t, md, "rnic.driver.counter", map[string]any{"device": "mlx5_bond_0/1", "counter": "rx_write_requests", "counter.source": "hw_counters"}))
	assert.Equal(t, int64(0), value(t, md, "rnic.roce.cnp", map[string]any{"device": "mlx5_bond_0/1", "counter": "rp_cnp_ignored"}))
	assert.Equal(t, int64(82002535), value(t, md, "rnic.packets", map[string]any{"device": "mlx5_bond_0/1", "direction": "transmit"}))
	assert.Equal(t, int64(100e9/8), value(t, md, "rnic.port.rate", map[string]any{"device": "mlx5_bond_0/1"}))
	assert.Equal(t, int64(4), value(t, md, "rnic.port.width", map[string]any{"device": "mlx5_bond_0/1"}))
	assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "mlx5_bond_0/1"}))
	info, _ := metrictest.Find(md, "rnic.port.info", map[string]any{"device": "mlx5_bond_0/1"})
	assert.Equal(t, map[string]any{
		"device": "mlx5_bond_0/1", "link_layer": "Ethernet", "netdev": "bond0", "pci.bus_id": "0000:3b:00.0",
		"numa.node": int64(0), "hca_type": "MT4125", "fw_version": "22.39.1002", "node_guid": "b83f:d203:00a1:b2c4",
		"board_id": "MT_0000000359", "plane": false,
	}, info.Attributes().AsRaw())

	// Two ports of one function, netdevs told apart by dev_port; 32-bit basic table.
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit")))
	assert.Equal(t, "eth5", mustAttr(t, md, "rnic.port.info", "mlx4_1/2", "netdev"))
	assert.Equal(t, int64(300), value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "eth5", "direction": "transmit"}))
	// Port 2's port_xmit_data is stuck at 2^32-1: flagged, not reported as 17 GB of traffic.
	absent(t, md, "interconnect.io", rnicIO("mlx4_1/2", "transmit"))
	assert.Equal(t, int64(1), value(t, md, "rnic.counter.saturated", map[string]any{"device": "mlx4_1/2", "counter": "port_xmit_data"}))
	assert.Equal(t, int64(12000), value(t, md, "interconnect.io", rnicIO("mlx4_1/2", "receive")))

	// Twelve ports, all found; multi-plane state per port; IPoIB netdev; behind a PCIe switch.
	for _, n := range []string{"1", "2", "3", "6", "9", "12"} {
		_, ok := metrictest.Find(md, "rnic.port.state", map[string]any{"device": "mlx5_4/" + n})
		assert.True(t, ok, "port %s", n)
	}
	assert.Equal(t, int64(1), value(t, md, "rnic.port.state", map[string]any{"device": "mlx5_4/1"}))
	assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "mlx5_4/12"}))
	assert.Equal(t, int64(12000*4), value(t, md, "interconnect.io", rnicIO("mlx5_4/12", "transmit")))
	assert.Equal(t, "0000:83:00.0", mustAttr(t, md, "rnic.port.info", "mlx5_4/12", "pci.bus_id"))

	// Soft-RoCE: no counters/, no PCI parent; packets and transport events from hw_counters.
	assert.Equal(t, int64(1200), value(t, md, "rnic.packets", map[string]any{"device": "rxe0/1", "direction": "transmit"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.transport.events", map[string]any{"device": "rxe0/1", "counter": "rcvd_seq_err"}))
	absent(t, md, "interconnect.io", map[string]any{"component": "rnic", "device": "rxe0/1"})
	assert.Equal(t, "", mustAttr(t, md, "rnic.port.info", "rxe0/1", "pci.bus_id"))
	assert.Equal(t, int64(-1), mustAttr(t, md, "rnic.port.info", "rxe0/1", "numa.node"))
	assert.Equal(t, int64(9000), value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "eth0", "direction": "transmit"}))

	// Broadcom: plain byte counters in hw_counters, no 4-octet unit.
	assert.Equal(t, int64(7000), value(t, md, "interconnect.io", rnicIO("bnxt_re0/1", "transmit")))
	assert.Equal(t, int64(50), value(t, md, "rnic.packets", map[string]any{"device": "bnxt_re0/1", "direction": "receive"}))

	// The failing device keeps its healthy series.
	assert.Equal(t, int64(1600), value(t, md, "interconnect.io", rnicIO("mlx5_bad/1", "transmit")))
	absent(t, md, "interconnect.io", rnicIO("mlx5_bad/1", "receive"))
	absent(t, md, "rnic.port.rate", map[string]any{"device": "mlx5_bad/1"})
	absent(t, md, "rnic.port.xmit_wait", map[string]any{"device": "mlx5_bad/1"})
	assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "mlx5_bad/1"}))

	expected := filepath.Join("testdata", "expected_metrics", "synthetic.yaml")
	if *update {
		require.NoError(t, golden.WriteMetrics(t, expected, md, golden.SkipMetricTimestampNormalization()))
	}
	want, err := golden.ReadMetrics(expected)
	require.NoError(t, err)
	// Start timestamps are compared: the clock is injected (stepClock), so the gauges carry the
	// receiver's start and the counters their first reading's time.
	require.NoError(t, pmetrictest.CompareMetrics(want, md,
		pmetrictest.IgnoreMetricsOrder(), pmetrictest.IgnoreMetricDataPointsOrder()))
}

// TestGaugesCarryReceiverStart: every gauge point (port state, physical state, rate, width, info,
// saturation, topology) carries the receiver's start time, whatever was recorded before it. The
// generated builder holds one start time for every point it records; before counter.Series the
// first port's rnic.port.state carried the builder's creation time and the others the start of
// the counter recorded before them.
func TestGaugesCarryReceiverStart(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, _ := newTestScraperWith(t, root, nil, func(s *rnicScraper) { s.clock = stepClock() })
	require.Equal(t, pcommon.NewTimestampFromTime(testEpoch), s.startTime)
	gauges := map[string]int{}
	for range 3 {
		md, _ := scrapeGrown(t, s, root)
		for name, dps := range metrictest.ByType(md, pmetric.MetricTypeGauge) {
			for _, dp := range dps {
				gauges[name]++
				assert.Equal(t, s.startTime, dp.StartTimestamp(), "%s %v", name, dp.Attributes().AsRaw())
				assert.Greater(t, dp.Timestamp(), s.startTime)
			}
		}
	}
	for _, name := range []string{"rnic.port.state", "rnic.port.physical_state", "rnic.port.rate", "rnic.port.width", "rnic.port.info", "rnic.counter.saturated"} {
		assert.Positive(t, gauges[name], name)
	}
}

// TestCountersAcrossScrapes: growth, a reset (new start timestamp, no negative delta), saturation
// and its end, and a counter that fails the same way on every scrape being returned every time
// and logged once.
func TestCountersAcrossScrapes(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	s, logs := newTestScraper(t, root, nil)
	injectFaults(s)
	bond := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/counters/"
	mlx4 := "sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0/infiniband/mlx4_1/ports/"

	md1, err1 := s.scrape(context.Background())
	require.Error(t, err1)

	testfs.SetUint(t, root, bond+"port_xmit_data", 85378896588+1000) // +4000 bytes
	testfs.SetUint(t, root, mlx4+"1/counters/port_xmit_wait", 4294967295)
	testfs.SetUint(t, root, mlx4+"2/counters/port_xmit_data", 100) // cleared after saturating
	md2, err2 := s.scrape(context.Background())

	// The same faults again: returned again, not logged again.
	require.Error(t, err2)
	for _, f := range injectedFailures[:2] { // symbol_error is a slow counter, not read on this scrape
		assert.Contains(t, err2.Error(), f, "the same failures, every scrape")
	}
	assert.Equal(t, 1, logs.FilterMessage("Read failed; its points are missing").FilterFieldKey("key").
		FilterField(zap.String("key", filepath.Join(root, "sys/class/infiniband", injectedFailures[1]))).Len())

	assert.Equal(t, int64(1000*4), value(t, md2, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")), "1000 words since the baseline")
	tx1, _ := metrictest.Find(md1, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
	tx2, _ := metrictest.Find(md2, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
	assert.Equal(t, tx1.StartTimestamp(), tx2.StartTimestamp(), "growth keeps the series")

	testfs.SetUint(t, root, bond+"port_rcv_data", 5) // cleared (perfquery -R)
	md3, err3 := s.scrape(context.Background())
	require.Error(t, err3)
	assert.Contains(t, err3.Error(), injectedFailures[0], "still failing, still returned")
	rx1, _ := metrictest.Find(md1, "interconnect.io", rnicIO("mlx5_bond_0/1", "receive"))
	rx2, _ := metrictest.Find(md2, "interconnect.io", rnicIO("mlx5_bond_0/1", "receive"))
	rx3, _ := metrictest.Find(md3, "interconnect.io", rnicIO("mlx5_bond_0/1", "receive"))
	assert.Equal(t, int64(20), rx3.IntValue(), "after a reset the counter restarts: 5 words = 20 bytes, no negative delta")
	assert.Equal(t, rx2.Timestamp(), rx3.StartTimestamp(), "a reset starts a new series after the last good reading")
	assert.Greater(t, rx3.StartTimestamp(), rx1.StartTimestamp())

	absent(t, md2, "rnic.port.xmit_wait", map[string]any{"device": "mlx4_1/1"})
	assert.Equal(t, int64(1), value(t, md2, "rnic.counter.saturated", map[string]any{"device": "mlx4_1/1", "counter": "port_xmit_wait"}))
	assert.Equal(t, int64(400), value(t, md2, "interconnect.io", rnicIO("mlx4_1/2", "transmit")), "cleared counter reported again")
	assert.Equal(t, int64(0), value(t, md2, "rnic.counter.saturated", map[string]any{"device": "mlx4_1/2", "counter": "port_xmit_data"}),
		"the flag drops back to 0 when the counter leaves saturation")
}

// TestStartTimeRuleRNIC: the start-time rule of every cumulative series (metadata/start-time.md,
// internal/counter). The kernel's counters count since the driver loaded or the port was last
// cleared (core sysfs.c, perfquery -R), a moment the receiver cannot prove: the first reading of a
// series is its baseline, so the first point is 0 with start = the time of that reading; later
// points are the reading minus the baseline, with the same start; a decrease restarts the series
// at the previous reading's time with the raw value; a failed read costs its point, not the
// series; a port that vanishes and comes back is a new series.
func TestStartTimeRuleRNIC(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "synthetic"))
	s, _ := newTestScraper(t, root, func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0", "mlx4_1"}
		cfg.Metrics.RnicDriverCounter.Enabled = true
	})
	// The bond's member has ethtool statistics (bonding/slaves of the fixture's bond0).
	fake := &fakeEthtool{stats: map[string]map[string]uint64{"ens1f0np0": {"rx_prio3_pause": 120, "tx_bytes_phy": 1 << 40}, "eth4": {}, "eth5": {}},
		drivers: map[string]string{"ens1f0np0": "mlx5_core"}}
	s.ethtool = fake
	ctx := context.Background()
	bond := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/counters/"
	bondNetdev := "sys/devices/virtual/net/bond0/statistics/tx_bytes"
	tx := rnicIO("mlx5_bond_0/1", "transmit")
	rx := rnicIO("mlx5_bond_0/1", "receive")
	netdevTx := map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}
	pause := map[string]any{"device": "ens1f0np0", "direction": "receive", "priority": int64(3)}

	// 1. The first reading is the baseline: every cumulative point is 0, start = its reading's time.
	md1, err := s.scrape(ctx)
	require.NoError(t, err)
	first := cumulativePoints(md1)
	for _, name := range []string{"interconnect.io", "rnic.packets", "rnic.driver.counter", "rnic.port.errors", "rnic.transport.events", "rnic.pfc.pause_frames", "rnic.phy.io"} {
		assert.NotEmpty(t, metrictest.Points(md1, name), name)
	}
	for k, dp := range first {
		assert.Equal(t, int64(0), dp.IntValue(), "%s: the fixture's reading counts from before the start", k)
		assert.Equal(t, dp.Timestamp(), dp.StartTimestamp(), k)
	}
	t1, _ := metrictest.Find(md1, "interconnect.io", tx)

	// 2. Later points: the reading minus the baseline, same start.
	md2, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	fake.grow()
	md2b, err := s.scrape(ctx) // ethtool grown too, fast scrape
	require.NoError(t, err)
	second := cumulativePoints(md2)
	assert.Len(t, second, len(first), "every series read again")
	for k, dp := range second {
		assert.Equal(t, first[k].StartTimestamp(), dp.StartTimestamp(), k)
	}
	assert.Equal(t, int64(85378896588*4), value(t, md2, "interconnect.io", tx))
	assert.Equal(t, int64(4000), value(t, md2, "interconnect.io", netdevTx))
	assert.Equal(t, int64(19000), value(t, md2, "rnic.driver.counter", map[string]any{"device": "mlx5_bond_0/1", "counter": "rx_write_requests"}))
	assert.Equal(t, int64(120), value(t, md2b, "rnic.pfc.pause_frames", pause))
	p2, _ := metrictest.Find(md2b, "rnic.pfc.pause_frames", pause)
	assert.Equal(t, t1.Timestamp(), p2.StartTimestamp())
	r2, _ := metrictest.Find(md2b, "interconnect.io", rx)

	// 3. A decrease is a reset: start = the previous reading's time, value = the raw reading.
	testfs.SetUint(t, root, bond+"port_rcv_data", 5)
	md3, err := s.scrape(ctx)
	require.NoError(t, err)
	r3, _ := metrictest.Find(md3, "interconnect.io", rx)
	assert.Equal(t, int64(5*4), r3.IntValue())
	assert.Equal(t, r2.Timestamp(), r3.StartTimestamp())

	// 4. A failed read keeps baseline and start, even when the reads fail for a whole sweep period
	// (two scrapes with the slow counters due, cadence.go), after which the tracker forgets a series
	// that was not seen: the PMA counter, the netdev's statistics and ethtool fail.
	s.reader.OnOpen = func(p string) error {
		if strings.HasSuffix(p, "mlx5_bond_0/ports/1/counters/port_xmit_data") || strings.HasSuffix(p, "bond0/statistics/tx_bytes") {
			return unix.EIO
		}
		return nil
	}
	fake.err = unix.EIO
	for i := range 2 {
		s.slowAt = time.Time{}
		md4, err := s.scrape(ctx)
		if i == 0 {
			require.Error(t, err)
		}
		absent(t, md4, "interconnect.io", tx)
		absent(t, md4, "interconnect.io", netdevTx)
		absent(t, md4, "rnic.pfc.pause_frames", pause)
	}
	s.reader.OnOpen, fake.err = nil, nil
	testfs.SetUint(t, root, bond+"port_xmit_data", 2*85378896588+1000)
	testfs.SetUint(t, root, bondNetdev, 2*4000+300)
	fake.stats["ens1f0np0"]["rx_prio3_pause"] = 2*120 + 7
	md5, err := s.scrape(ctx)
	require.NoError(t, err)
	for _, c := range []struct {
		sel  map[string]any
		want int64
	}{{tx, (85378896588 + 1000) * 4}, {netdevTx, 4000 + 300}} {
		dp, ok := metrictest.Find(md5, "interconnect.io", c.sel)
		require.True(t, ok, "%v", c.sel)
		assert.Equal(t, c.want, dp.IntValue(), "%v: counted from the same baseline", c.sel)
		assert.Equal(t, t1.Timestamp(), dp.StartTimestamp(), "%v: same start", c.sel)
	}
	dp, _ := metrictest.Find(md5, "rnic.pfc.pause_frames", pause)
	assert.Equal(t, int64(120+7), dp.IntValue())
	assert.Equal(t, t1.Timestamp(), dp.StartTimestamp())

	// 5. A port that vanishes is forgotten once a whole sweep period (slow_interval, cadence.go)
	// has passed without it; when it comes back it is a new series (rule 1).
	mlx4 := rnicIO("mlx4_1/1", "transmit")
	before, ok := metrictest.Find(md5, "interconnect.io", mlx4)
	require.True(t, ok)
	assert.Equal(t, int64(1000*4), before.IntValue(), "mlx4_1/1 grew by its fixture's 1000 words")
	link := filepath.Join(root, "sys/class/infiniband/mlx4_1")
	target, err := os.Readlink(link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	for range 2 {
		s.slowAt = time.Time{}
		md6, err := s.scrape(ctx)
		require.NoError(t, err)
		absent(t, md6, "interconnect.io", mlx4)
	}
	require.Equal(t, 1, len(s.plan.ports), "mlx4_1 is gone")
	require.NoError(t, os.Symlink(target, link))
	s.slowAt = time.Time{}
	md7, err := s.scrape(ctx)
	require.NoError(t, err)
	back, ok := metrictest.Find(md7, "interconnect.io", mlx4)
	require.True(t, ok, "picked up again")
	assert.Equal(t, int64(0), back.IntValue(), "a new series: its first reading is its baseline")
	assert.Equal(t, back.Timestamp(), back.StartTimestamp())
}

// TestRealFixtures scrapes real sysfs dumps: the InfiniBand section of prometheus/procfs
// testdata/fixtures.ttar at v0.21.1 (commit 3c943fdba94a: mlx5_0, mlx4_0, hfi1_0) and of
// prometheus/node_exporter collector/fixtures/sys.ttar at a7dcc3a01545 (i40iw0 with every counter
// "N/A (no PMA)", mlx4_0 with counters_ext and a saturated port_xmit_wait).
func TestRealFixtures(t *testing.T) {
	t.Run("procfs", func(t *testing.T) {
		root := fixtureCopy(t, filepath.Join("testdata", "procfs"))
		s, _ := newTestScraper(t, root, nil)
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
		md, err := scrapeGrown(t, s, root)
		require.NoError(t, err)
		// mlx5_0 has the extended table (unicast_xmit_packets), so port_xmit_data is 64-bit.
		assert.Equal(t, int64(2880761508848*4), value(t, md, "interconnect.io", rnicIO("mlx5_0/1", "transmit")))
		assert.Equal(t, int64(25e9/8), value(t, md, "rnic.port.rate", map[string]any{"device": "mlx5_0/1"}))
		assert.Equal(t, int64(1), value(t, md, "rnic.port.width", map[string]any{"device": "mlx5_0/1"}))
		_, ok := metrictest.Find(md, "rnic.port.state", map[string]any{"device": "mlx4_0/2"})
		assert.True(t, ok, "both mlx4_0 ports")
		// OmniPath: no hca_type, a 17-file table whose data counter is above 2^32: 64-bit, not saturated.
		assert.Equal(t, int64(345091702026*4), value(t, md, "interconnect.io", rnicIO("hfi1_0/1", "receive")))
		// No device link in this dump: no PCI address, NUMA unknown.
		assert.Equal(t, "", mustAttr(t, md, "rnic.port.info", "mlx5_0/1", "pci.bus_id"))
	})
	t.Run("node_exporter", func(t *testing.T) {
		root := fixtureCopy(t, filepath.Join("testdata", "node_exporter"))
		s, logs := newTestScraper(t, root, nil)
		_, err := s.scrape(context.Background())
		// i40iw0: every counter is "N/A (no PMA)": the hardware does not provide them. Said once
		// at info level, naming the file; no error.
		require.NoError(t, err)
		said := logs.FilterMessage("Counters not provided by the hardware; not read").All()
		require.Len(t, said, 1)
		assert.Equal(t, zapcore.InfoLevel, said[0].Level)
		assert.Contains(t, said[0].ContextMap()["error"], "i40iw0/ports/1/counters/port_xmit_data")
		assert.Contains(t, said[0].ContextMap()["error"], "N/A (no PMA)")
		// Unreadable PMA data counters rule out the whole counters/ directory (one PMA query
		// behind them all): it is not read again.
		var opened []string
		s.reader.OnOpen = func(p string) error { opened = append(opened, p); return nil }
		_, err = s.scrape(context.Background())
		assert.NoError(t, err)
		for _, p := range opened {
			assert.NotContains(t, p, "i40iw0/ports/1/counters/")
		}
		assert.Equal(t, 1, logs.FilterMessage("Counters not provided by the hardware; not read").Len(), "said once")
		md, err := scrapeGrown(t, s, root)
		require.NoError(t, err)
		for _, p := range opened {
			assert.NotContains(t, p, "i40iw0/ports/1/counters/", "not on a slow scrape either")
		}
		// i40iw0 still has its port state and rate: "10 Gb/sec (4X)", SDR unnamed, 8 Gb/s of data.
		assert.Equal(t, int64(8e9/8), value(t, md, "rnic.port.rate", map[string]any{"device": "i40iw0/1"}))

		// mlx4_0: the counters_ext 64-bit copy is used for bytes, and port_xmit_wait is saturated.
		raw, rerr := os.ReadFile(filepath.Join("testdata", "node_exporter", "sys/class/infiniband/mlx4_0/ports/1/counters_ext/port_xmit_data_64"))
		require.NoError(t, rerr)
		var words int64
		for _, c := range strings.TrimSpace(string(raw)) {
			words = words*10 + int64(c-'0')
		}
		assert.Equal(t, words*4, value(t, md, "interconnect.io", rnicIO("mlx4_0/1", "transmit")))
		assert.Equal(t, int64(1), value(t, md, "rnic.counter.saturated", map[string]any{"device": "mlx4_0/1", "counter": "port_xmit_wait"}))
		absent(t, md, "rnic.port.xmit_wait", map[string]any{"device": "mlx4_0/1"})
	})
}

// TestNoHardware: no /sys/class/infiniband at all. One info log, no error, no metrics, and a
// device that appears later is picked up.
func TestNoHardware(t *testing.T) {
	root := t.TempDir()
	// A host without the RDMA stack: sysfs is there, class/infiniband is not.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "class", "net"), 0o755))
	s, logs := newTestScraper(t, root, nil)
	for range 3 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 0, md.DataPointCount())
	}
	assert.Equal(t, 1, logs.FilterMessage("No RDMA ports found; the receiver stays idle and picks devices up when they appear.").Len())
	assert.Equal(t, 1, logs.Len(), "a node without RDMA hardware stays quiet")

	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	md, _ := s.scrape(context.Background())
	assert.Equal(t, int64(0), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")), "the first reading is the baseline")
	md, _ = scrapeGrown(t, s, root)
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
}

// TestDeviceVanishes: a device removed between discovery and a scrape costs only its own series;
// the next scrape rediscovers.
func TestDeviceVanishes(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Include.Devices = []string{"mlx5_bond_0", "mlx4_1"} })
	_, err := s.scrape(context.Background())
	require.NoError(t, err)

	require.NoError(t, os.RemoveAll(filepath.Join(root, "sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0/infiniband/mlx4_1")))
	// The counters read on every scrape are kept open (sysfs.Reader.ReadBytesKept). On sysfs a
	// read of a file kept open after its device was removed fails with ENODEV (kernfs_fop_read_iter
	// cannot get an active reference on the removed node); a file on a disk stays readable after
	// its directory is removed, so the stand-in fails such reads the way kernfs does.
	s.reader.OnOpen = func(p string) error {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return unix.ENODEV
		}
		return nil
	}
	md, err := s.scrape(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sys/class/infiniband/mlx4_1/ports/1/counters/port_xmit_data: no such device")
	assert.True(t, s.rediscovery.Due(time.Now()), "a device gone (ENODEV) makes the next scrape rediscover")
	_, ok := metrictest.Find(md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
	assert.True(t, ok, "the other device is still scraped")

	require.NoError(t, os.Remove(filepath.Join(root, "sys/class/infiniband/mlx4_1")))
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	absent(t, md, "rnic.port.state", map[string]any{"device": "mlx4_1/1"})
	assert.Len(t, s.plan.ports, 1)
}

// TestOnlyEnabledFilesRead checks what a scrape opens: with only interconnect.io enabled, the
// two data counters of each port and the netdev byte counters, nothing else.
func TestOnlyEnabledFilesRead(t *testing.T) {
	s, _ := newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0"}
		onlyMetrics(cfg, "InterconnectIo")
	})
	_, err := s.scrape(context.Background()) // discovery
	require.NoError(t, err)
	var opened []string
	s.reader.OnOpen = func(p string) error {
		rel, _ := filepath.Rel(filepath.Join("testdata", "synthetic", "sys"), p)
		opened = append(opened, rel)
		return nil
	}
	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"class/infiniband/mlx5_bond_0/ports/1/counters/port_rcv_data",
		"class/infiniband/mlx5_bond_0/ports/1/counters/port_xmit_data",
		"class/net/bond0/statistics/tx_bytes",
		"class/net/bond0/statistics/rx_bytes",
	}, opened)
}

// TestDeviceListCadence: with ports present the device list is read with the slow counters, so a
// device that appears is picked up within slow_interval; one that vanishes is noticed at once.
func TestDeviceListCadence(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	link := filepath.Join(root, "sys/class/infiniband/mlx4_1")
	target, err := os.Readlink(link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Include.Devices = []string{"mlx5_bond_0", "mlx4_1"} })
	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Len(t, s.plan.ports, 1)

	require.NoError(t, os.Symlink(target, link))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	absent(t, md, "rnic.port.state", map[string]any{"device": "mlx4_1/1"})

	s.slowAt = s.slowAt.Add(-s.cfg.SlowInterval)
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "mlx4_1/1"}), "picked up with the slow counters")
	_, ok := metrictest.Find(md, "rnic.port.info", map[string]any{"device": "mlx4_1/1"})
	assert.True(t, ok, "a new port's facts come with its first scrape")
}

// TestDefaultScrapeFiles counts the files a default scrape opens per port, the number the
// benchmark reports. In full (the first scrape, then every slow_interval, or always with
// slow_interval 0): state, phys_state, rate, 17 counters (unicast/multicast feed no metric), the 25
// of telegraf's 28 hw_counters that feed a metric, rx_write_requests (read first only to refresh
// mlx5's counter cache, mlx5CacheRefresh) and 2 netdev files per netdev. In between, the
// error and transport counters are skipped: state, phys_state, rate, the 4 data and packet
// counters, port_xmit_wait, rx_write_requests, 3 CNP and 1 ECN counter, and the 2 netdev files.
//
// The files read on every scrape stay open between scrapes, so after the first scrape only the
// slow counters are opened (each time they are read) and the fast ones are read with one pread each.
func TestDefaultScrapeFiles(t *testing.T) {
	const full, fast = 3 + 17 + 1 + 25 + 2, 3 + 5 + 1 + 4 + 2
	type cost struct{ reads, opens int64 }
	count := func(s *rnicScraper) cost {
		r0, o0 := s.reader.Reads(), s.reader.Opened()
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
		return cost{s.reader.Reads() - r0, s.reader.Opened() - o0}
	}
	s, _ := newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) { cfg.Include.Devices = []string{"mlx5_bond_0"} })
	count(s) // discovery: the static files once, then everything
	assert.Equal(t, cost{fast, 0}, count(s))
	assert.Equal(t, cost{fast, 0}, count(s))
	s.slowAt = s.slowAt.Add(-s.cfg.SlowInterval)
	assert.Equal(t, cost{full, full - fast}, count(s), "slow_interval elapsed: the slow counters are opened")
	assert.Equal(t, cost{fast, 0}, count(s))
	assert.Equal(t, fast, s.keptFiles())

	s, _ = newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) {
		cfg.Include.Devices = []string{"mlx5_bond_0"}
		cfg.SlowInterval = 0
	})
	count(s)
	assert.Equal(t, cost{full, 0}, count(s), "slow_interval 0: everything on every scrape, all kept open")
	require.NoError(t, s.shutdown(context.Background()))
	assert.Equal(t, 0, s.keptFiles(), "shutdown closes the kept files")
}

// TestSlowCounters: between two reads a slow counter's file is not read and it has no point; its
// series survives the scrapes in between (same start timestamp when it is read again, growth
// reported, no reset).
func TestSlowCounters(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("testdata", "synthetic"), root)
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Include.Devices = []string{"mlx5_bond_0"} })
	ooo := map[string]any{"device": "mlx5_bond_0/1", "counter": "out_of_sequence"}
	symErr := map[string]any{"device": "mlx5_bond_0/1", "counter": "symbol_error"}
	port := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/"

	md1, err := s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(0), value(t, md1, "rnic.transport.events", ooo))
	assert.Equal(t, int64(0), value(t, md1, "rnic.port.errors", symErr))
	first, _ := metrictest.Find(md1, "rnic.transport.events", ooo)

	testfs.SetUint(t, root, port+"hw_counters/out_of_sequence", 7)
	testfs.SetUint(t, root, port+"counters/port_xmit_data", 85378896588+10)
	var opened []string
	s.reader.OnOpen = func(p string) error { opened = append(opened, p); return nil }
	md2, err := s.scrape(context.Background())
	require.NoError(t, err)
	absent(t, md2, "rnic.transport.events", ooo)
	absent(t, md2, "rnic.port.errors", symErr)
	for _, p := range opened {
		assert.NotContains(t, p, "hw_counters/out_of_sequence", "a slow counter is not read between its reads")
	}
	assert.Equal(t, int64(10*4), value(t, md2, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")), "traffic is read on every scrape")
	assert.Equal(t, int64(4), value(t, md2, "rnic.port.state", map[string]any{"device": "mlx5_bond_0/1"}))
	info := map[string]any{"device": "mlx5_bond_0/1"}
	_, ok := metrictest.Find(md1, "rnic.port.info", info)
	assert.True(t, ok, "the static facts are recorded with the slow counters")
	absent(t, md2, "rnic.port.info", info)

	s.slowAt = s.slowAt.Add(-s.cfg.SlowInterval)
	md3, err := s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(7), value(t, md3, "rnic.transport.events", ooo))
	_, ok = metrictest.Find(md3, "rnic.port.info", info)
	assert.True(t, ok)
	third, _ := metrictest.Find(md3, "rnic.transport.events", ooo)
	assert.Equal(t, first.StartTimestamp(), third.StartTimestamp(), "the series outlived the scrape in between")
}

// onlyMetrics disables every metric but the named fields of metadata.MetricsConfig.
func onlyMetrics(cfg *Config, fields ...string) {
	v := reflect.ValueOf(&cfg.Metrics).Elem()
	for i := 0; i < v.NumField(); i++ {
		v.Field(i).FieldByName("Enabled").SetBool(slices.Contains(fields, v.Type().Field(i).Name))
	}
}

// fakeEthtool stands in for the SIOCETHTOOL ioctl. A netdev without stats fails as a bond does:
// the bonding driver has no get_sset_count, so ETHTOOL_GSTRINGS fails with EOPNOTSUPP
// (drivers/net/bonding/bond_main.c bond_ethtool_ops; net/ethtool/ioctl.c).
type fakeEthtool struct {
	stats   map[string]map[string]uint64
	drivers map[string]string
	err     error
	calls   int
}

func (f *fakeEthtool) Stats(netdev string) (map[string]uint64, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	st, ok := f.stats[netdev]
	if !ok {
		return nil, unix.EOPNOTSUPP
	}
	return st, nil
}

func (f *fakeEthtool) Driver(netdev string) (string, error) {
	if d, ok := f.drivers[netdev]; ok {
		return d, nil
	}
	return "", unix.ENODEV
}

func (f *fakeEthtool) Close() {}

// TestEthtoolPFC uses mlx5 ethtool -S names (mlx5/counters.rst) on a RoCE LAG laid out as the
// kernel does (testfs.LAGRDMANode): the bond has no ethtool statistics, so the counters come from
// its physical members, each its own series: per-priority pause, durations, global pause
// duration (en_stats.c "global" pause descs), the pause-storm watchdog and the physical port
// totals.
func TestEthtoolPFC(t *testing.T) {
	fake := &fakeEthtool{
		stats: map[string]map[string]uint64{
			"ens1f0np0": {
				"rx_prio3_pause": 120, "tx_prio3_pause": 7, "rx_prio3_pause_duration": 4500, "rx_prio3_pause_transition": 60,
				"rx_pause_ctrl_phy": 0, "tx_pause_storm_warning_events": 2, "tx_pause_storm_error_events": 1,
				"rx_bytes_phy": 1 << 40, "tx_bytes_phy": 1 << 41, "rx_discards_phy": 3, "rx_vport_unicast_bytes": 99,
				"rx_global_pause_duration": 900, "tx_global_pause_duration": 800,
			},
			"ens1f1np1": {"rx_prio3_pause": 30, "tx_prio3_pause": 5},
		},
		drivers: map[string]string{"ens1f0np0": "mlx5_core", "ens1f1np1": "mlx5_core", "bond0": "bonding"},
	}
	root := fixtureCopy(t, fleetRoot("lag"))
	s, logs := newTestScraper(t, root, func(cfg *Config) {
		cfg.Ethtool.Enabled = true
		cfg.Metrics.RnicPauseDuration.Enabled = true
	})
	s.ethtool = fake
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, fake.calls, "one ethtool read per physical member, none of the bond")
	fake.grow()
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	assert.Equal(t, int64(120), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens1f0np0", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(30), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens1f1np1", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(7), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens1f0np0", "direction": "transmit", "priority": int64(3)}))
	assert.Equal(t, int64(4500), value(t, md, "rnic.pfc.pause_duration", map[string]any{"device": "ens1f0np0", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(900), value(t, md, "rnic.pause.duration", map[string]any{"device": "ens1f0np0", "direction": "receive"}))
	absent(t, md, "rnic.pfc.pause_frames", map[string]any{"priority": int64(0)})
	absent(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "bond0"})
	assert.Equal(t, int64(1), value(t, md, "rnic.pause.storm_events", map[string]any{"device": "ens1f0np0", "severity": "error"}))
	assert.Equal(t, int64(1<<41), value(t, md, "rnic.phy.io", map[string]any{"device": "ens1f0np0", "direction": "transmit"}))
	assert.Equal(t, int64(3), value(t, md, "rnic.phy.discards", map[string]any{"device": "ens1f0np0", "direction": "receive"}))
	// The bond's own byte counters still give component=netdev.
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}))

	// A netdev outside the collector's network namespace: an error on every scrape (its points
	// are missing), logged once.
	fake.err = unix.ENODEV
	for range 2 {
		_, err = s.scrape(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "ens1f0np0")
	}
	assert.Equal(t, 1, logs.FilterMessage("Read failed; its points are missing").FilterField(zap.String("key", "ethtool:ens1f0np0")).Len())
}

// TestEthtoolNotProvided: a netdev whose driver has no statistics answers ETHTOOL_GSTRINGS with
// EOPNOTSUPP (net/ethtool/ioctl.c ethtool_get_sset_info without get_sset_count): a fact about the
// hardware, said once at info level and not asked again, never a scrape error.
// scrapeBroadcomEthtool scrapes the broadcom fleet node (bnxt_re0's PMA reads failing with EINVAL)
// with the given ethtool statistics, grown once: what it returns is the statistics as counted
// since the first scrape.
func scrapeBroadcomEthtool(t *testing.T, fake *fakeEthtool) pmetric.Metrics {
	t.Helper()
	root := fixtureCopy(t, fleetRoot("broadcom"))
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Ethtool.Enabled = true })
	s.reader.OnOpen = bnxtPMAFails
	s.ethtool = fake
	_, _ = s.scrape(context.Background())
	fake.grow()
	md, _ := scrapeGrown(t, s, root)
	return md
}

// TestEthtoolBnge: Broadcom's next-generation driver (drivers/net/ethernet/broadcom/bnge,
// bnge_ethtool.c) prefixes its port statistics "rxp_"/"txp_" (BNGE_RX/TX_PORT_STATS_ENTRY) and
// names PFC durations and transitions as bnxt_en does (BNGE_RX/TX_STATS_EXT_PFC_ENTRY).
func TestEthtoolBnge(t *testing.T) {
	fake := &fakeEthtool{
		stats: map[string]map[string]uint64{"ens2f0np0": {
			"rxp_pfc_ena_frames_pri3": 11, "txp_pfc_ena_frames_pri3": 12, "rx_pfc_ena_frames_pri3": 999,
			"pfc_pri3_tx_duration_us": 300, "pfc_pri3_tx_transitions": 3,
		}},
		drivers: map[string]string{"ens2f0np0": "bng_en", "ens2f1np1": "bng_en"},
	}
	md := scrapeBroadcomEthtool(t, fake)
	assert.Equal(t, int64(11), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens2f0np0", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(12), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens2f0np0", "direction": "transmit", "priority": int64(3)}))
	assert.Equal(t, int64(300), value(t, md, "rnic.pfc.pause_duration", map[string]any{"device": "ens2f0np0", "direction": "transmit", "priority": int64(3)}))
	assert.Equal(t, int64(3), value(t, md, "rnic.pfc.pause_transitions", map[string]any{"device": "ens2f0np0", "direction": "transmit", "priority": int64(3)}))
	assert.Len(t, metrictest.Select(md, "rnic.pfc.pause_frames", map[string]any{"device": "ens2f0np0"}), 2, "bnxt_en's names are not bng_en's")
}

func TestEthtoolNotProvided(t *testing.T) {
	fake := &fakeEthtool{
		stats:   map[string]map[string]uint64{"ens1f0np0": {"rx_prio3_pause": 120}},
		drivers: map[string]string{"ens1f0np0": "mlx5_core"},
	}
	s, logs := newTestScraper(t, fleetRoot("lag"), func(cfg *Config) { cfg.Ethtool.Enabled = true })
	s.ethtool = fake
	for range 3 {
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, 2+1+1, fake.calls, "ens1f1np1 asked once, ens1f0np0 on every scrape")
	said := logs.FilterMessage("Counter not provided by the hardware; not read again").FilterField(zap.String("key", "ethtool:ens1f1np1"))
	require.Equal(t, 1, said.Len())
	assert.Equal(t, zapcore.InfoLevel, said.All()[0].Level)
}

// TestEthtoolPerDriverNames: PFC and pause counters under the names bnxt_en, bng_en, ice and
// i40e give them, chosen by the driver name GDRVINFO reports.
func TestEthtoolPerDriverNames(t *testing.T) {
	fake := &fakeEthtool{
		stats: map[string]map[string]uint64{
			"ens2f0np0": {"rx_pfc_ena_frames_pri3": 11, "tx_pfc_ena_frames_pri3": 12, "rx_pause_frames": 13, "tx_pause_frames": 14,
				"pfc_pri3_rx_duration_us": 700, "pfc_pri3_rx_transitions": 7, "pfc_pri3_tx_transitions": 5},
			"ens2f1np1": {"rx_pfc_ena_frames_pri5": 21, "rx_prio5_pause": 999},
		},
		drivers: map[string]string{"ens2f0np0": "bnxt_en", "ens2f1np1": "bnxt_en"},
	}
	md := scrapeBroadcomEthtool(t, fake)
	assert.Equal(t, int64(11), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens2f0np0", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(12), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens2f0np0", "direction": "transmit", "priority": int64(3)}))
	assert.Equal(t, int64(13), value(t, md, "rnic.pause.frames", map[string]any{"device": "ens2f0np0", "direction": "receive"}))
	assert.Equal(t, int64(21), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens2f1np1", "priority": int64(5)}))
	assert.Len(t, metrictest.Select(md, "rnic.pfc.pause_frames", map[string]any{"device": "ens2f1np1"}), 1, "an mlx5 name on a bnxt_en netdev is not read")

	// bnxt_en's extended port statistics (bnxt_ethtool.c BNXT_RX/TX_STATS_EXT_PFC_ENTRY).
	assert.Equal(t, int64(700), value(t, md, "rnic.pfc.pause_duration", map[string]any{"device": "ens2f0np0", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(7), value(t, md, "rnic.pfc.pause_transitions", map[string]any{"device": "ens2f0np0", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(5), value(t, md, "rnic.pfc.pause_transitions", map[string]any{"device": "ens2f0np0", "direction": "transmit", "priority": int64(3)}))

	fake = &fakeEthtool{
		stats: map[string]map[string]uint64{
			"ens801f0": {"rx_priority_3_xoff.nic": 31, "tx_priority_3_xoff.nic": 32, "link_xoff_rx.nic": 33, "link_xoff_tx.nic": 34},
			"ens802f0": {"port.rx_priority_4_xoff_rx": 41, "port.link_xoff_tx": 44},
		},
		drivers: map[string]string{"ens801f0": "ice", "ens802f0": "i40e"},
	}
	root := fixtureCopy(t, fleetRoot("intel"))
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Ethtool.Enabled = true })
	s.ethtool = fake
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	fake.grow()
	md, err = scrapeGrown(t, s, root)
	require.NoError(t, err)
	assert.Equal(t, int64(31), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens801f0", "direction": "receive", "priority": int64(3)}))
	assert.Equal(t, int64(32), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens801f0", "direction": "transmit", "priority": int64(3)}))
	assert.Equal(t, int64(33), value(t, md, "rnic.pause.frames", map[string]any{"device": "ens801f0", "direction": "receive"}))
	assert.Equal(t, int64(41), value(t, md, "rnic.pfc.pause_frames", map[string]any{"device": "ens802f0", "direction": "receive", "priority": int64(4)}))
	assert.Equal(t, int64(44), value(t, md, "rnic.pause.frames", map[string]any{"device": "ens802f0", "direction": "transmit"}))
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		bps   int64
		lanes int64
	}{
		{"100 Gb/sec (4X EDR)", 12_500_000_000, 4},
		// 8b/10b: 2.5 Gb/s signalling is 2 Gb/s of data.
		{"2.5 Gb/sec (1X SDR)", 250_000_000, 1},
		{"40 Gb/sec (4X QDR)", 4_000_000_000, 4},
		{"20 Gb/sec (4X DDR)", 2_000_000_000, 4},
		{"56 Gb/sec (4X FDR)", 7_000_000_000, 4},
		{"40 Gb/sec (4X FDR10)", 5_000_000_000, 4},
		{"400 Gb/sec (4X NDR)", 50_000_000_000, 4},
		{"0 GB/sec", 0, 0},
	} {
		bps, lanes, err := parseRate("rate", "InfiniBand", []byte(tc.in))
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.bps, bps, tc.in)
		assert.Equal(t, tc.lanes, lanes, tc.in)
	}
	_, _, err := parseRate("/sys/x/rate", "InfiniBand", []byte("fast"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/sys/x/rate")
}

// TestParseRateSpeedName: the 8b/10b correction follows the link, not the speed name alone. Old
// kernels' rate_show (drivers/infiniband/core/sysfs.c) prints no name for SDR ("10 Gb/sec (4X)",
// node_exporter's collector/fixtures/sys.ttar i40iw0): SDR, 8 Gb/s of data. On an Ethernet link
// layer rate_show prints ib_get_eth_speed()'s mapping of the netdev speed (drivers/infiniband/
// core/verbs.c: SPEED_20000 -> IB_WIDTH_4X, IB_SPEED_DDR): a 20GbE port carries 20 Gb/s.
func TestParseRateSpeedName(t *testing.T) {
	for _, tc := range []struct {
		linkLayer, in string
		bps           int64
	}{
		{"InfiniBand", "10 Gb/sec (4X)", 1_000_000_000},
		{"InfiniBand", "2.5 Gb/sec (1X)", 250_000_000},
		{"", "10 Gb/sec (4X)", 1_000_000_000},
		{"Ethernet", "20 Gb/sec (4X DDR)", 2_500_000_000},
		{"Ethernet", "2.5 Gb/sec (1X SDR)", 312_500_000},
		{"Ethernet", "40 Gb/sec (4X QDR)", 5_000_000_000},
		{"Ethernet", "100 Gb/sec (4X EDR)", 12_500_000_000},
	} {
		bps, _, err := parseRate("rate", tc.linkLayer, []byte(tc.in))
		require.NoError(t, err)
		assert.Equal(t, tc.bps, bps, "%s on %q", tc.in, tc.linkLayer)
	}
}

func TestParseStateID(t *testing.T) {
	v, err := parseStateID("state", []byte("4: ACTIVE"))
	require.NoError(t, err)
	assert.Equal(t, int64(4), v)
	v, err = parseStateID("phys_state", []byte("5: LinkUp"))
	require.NoError(t, err)
	assert.Equal(t, int64(5), v)
	_, err = parseStateID("/sys/x/state", []byte("ACTIVE"))
	assert.ErrorContains(t, err, "/sys/x/state")
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "0 GB/sec", "", "x Gb/sec", "-1 Gb/sec (4X)"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		bps, lanes, err := parseRate("rate", "InfiniBand", b)
		if err == nil && (bps < 0 || lanes < 0) {
			t.Fatalf("parseRate(%q) = %d, %d", b, bps, lanes)
		}
	})
}
