//go:build linux

package rnicreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The fleet nodes (testdata/fleet/<name>) are written by testfs.WriteRDMANode from
// testfs.FleetRDMANodes, each laid out as its driver lays out sysfs (the sources are cited in
// internal/testfs/fleet.go). `go test -run TestFleetFixturesUpToDate -update` rewrites them.

func TestFleetFixturesUpToDate(t *testing.T) {
	for name, devs := range testfs.FleetRDMANodes() {
		dir := filepath.Join("testdata", "fleet", name)
		if *update {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, testfs.WriteRDMANode(dir, devs))
			continue
		}
		fresh := t.TempDir()
		require.NoError(t, testfs.WriteRDMANode(fresh, devs))
		require.Equal(t, snapshotTree(t, fresh), snapshotTree(t, dir), "testdata/fleet/%s is stale: run go test -run TestFleetFixturesUpToDate -update", name)
	}
}

func fleetRoot(name string) string { return filepath.Join("testdata", "fleet", name) }

// bnxtPMAFails fails every read under bnxt_re0's counters/ with EINVAL, as core sysfs.c
// show_pma_counter does when the driver's PMA query fails (prometheus/procfs PR #675).
func bnxtPMAFails(p string) error {
	if strings.Contains(p, "bnxt_re0/ports/1/counters/") {
		return unix.EINVAL
	}
	return nil
}

// TestBroadcomBytesFromHWCounters: bnxt_re0's PMA counters fail with EINVAL, so its bytes come
// from hw_counters (the RoCE-only counters of bnxt_re_stat_descs); bnxt_re1 has a readable
// 21-file PMA table next to the same hw_counters: PMA x4, once, never both. Values are the
// fixture's, counted since the first scrape (scrapeGrown).
func TestBroadcomBytesFromHWCounters(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("broadcom"))
	s, logs := newTestScraper(t, root, nil)
	s.reader.OnOpen = bnxtPMAFails
	_, err := s.scrape(context.Background())
	// EINVAL is the kernel saying the PMA query cannot be answered: a fact about the hardware,
	// said once at info level, not an error.
	require.NoError(t, err)
	said := logs.FilterMessage("Counters not provided by the hardware; not read").All()
	require.Len(t, said, 1)
	assert.Contains(t, said[0].ContextMap()["key"], "bnxt_re0/ports/1/counters")
	assert.Contains(t, said[0].ContextMap()["error"], "bnxt_re0/ports/1/counters/port_xmit_data")
	assert.Contains(t, said[0].ContextMap()["error"], "invalid argument")
	assert.Equal(t, zapcore.InfoLevel, said[0].Level)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err, "the PMA counters are not read again, even with the slow counters")

	assert.Equal(t, int64(6500000000000), value(t, md, "interconnect.io", rnicIO("bnxt_re0/1", "transmit")))
	assert.Equal(t, int64(7000000000000), value(t, md, "interconnect.io", rnicIO("bnxt_re0/1", "receive")))
	assert.Equal(t, int64(7000000000000/4096), value(t, md, "rnic.packets", map[string]any{"device": "bnxt_re0/1", "direction": "receive"}))

	assert.Equal(t, int64(3000000000*4), value(t, md, "interconnect.io", rnicIO("bnxt_re1/1", "transmit")))
	assert.Equal(t, int64(2500000000*4), value(t, md, "interconnect.io", rnicIO("bnxt_re1/1", "receive")))
	assert.Equal(t, 1, len(metrictest.Select(md, "interconnect.io", rnicIO("bnxt_re1/1", "transmit"))), "PMA only, not hw_counters too")

	_, err = s.scrape(context.Background())
	assert.NoError(t, err, "the PMA counters are not read again")
}

// TestBroadcomNamedCounters: bnxt_re's congestion and transport counters (bnxt_re_stat_descs)
// feed the named metrics, not only rnic.driver.counter.
func TestBroadcomNamedCounters(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("broadcom"))
	s, _ := newTestScraper(t, root, nil)
	s.reader.OnOpen = bnxtPMAFails
	_, _ = s.scrape(context.Background())
	md, _ := scrapeGrown(t, s, root)
	dev := "bnxt_re0/1"
	for name, want := range map[string]int64{"tx_cnp_pkts": 21, "rx_cnp_pkts": 34} {
		assert.Equal(t, want, value(t, md, "rnic.roce.cnp", map[string]any{"device": dev, "counter": name}), name)
	}
	assert.Equal(t, int64(55), value(t, md, "rnic.roce.ecn_marked", map[string]any{"device": dev}))
	for name, want := range map[string]int64{"to_retransmits": 17, "seq_err_naks_rcvd": 4, "rnr_naks_rcvd": 9, "dup_req": 2, "oos_drop_count": 5, "max_retry_exceeded": 0} {
		assert.Equal(t, want, value(t, md, "rnic.transport.events", map[string]any{"device": dev, "counter": name}), name)
	}
	assert.Equal(t, int64(3), value(t, md, "rnic.transport.errors", map[string]any{"device": dev, "counter": "rx_out_of_buffer"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.transport.errors", map[string]any{"device": dev, "counter": "missing_resp"}))
}

// TestBroadcomPMAErrorsWrap: the bnxt_re PMA support fills the 16- and 8-bit error fields by
// truncation ((u16)(x & 0xFFFF)), so they wrap: 65530 -> 4 is 10 errors, not a reset.
func TestBroadcomPMAErrorsWrap(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, fleetRoot("broadcom"), root)
	symErr := "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.1/infiniband/bnxt_re1/ports/1/counters/symbol_error"
	testfs.SetUint(t, root, symErr, 65530)
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.SlowInterval = 0 })
	md1, err := s.scrape(context.Background())
	require.NoError(t, err)
	testfs.SetUint(t, root, symErr, 4)
	md2, err := s.scrape(context.Background())
	require.NoError(t, err)
	sel := map[string]any{"device": "bnxt_re1/1", "counter": "symbol_error"}
	assert.Equal(t, int64(0), value(t, md1, "rnic.port.errors", sel), "the first reading is the baseline")
	assert.Equal(t, int64(10), value(t, md2, "rnic.port.errors", sel), "65530 -> 4 across the 16-bit wrap")
	p1, _ := metrictest.Find(md1, "rnic.port.errors", sel)
	p2, _ := metrictest.Find(md2, "rnic.port.errors", sel)
	assert.Equal(t, p1.StartTimestamp(), p2.StartTimestamp(), "a wrap continues the series")
}

// TestIntelIrdma: irdma's bytes and packets are the IPv4 + IPv6 counters of its protocol engine;
// congestion, ECN and retransmits feed the named metrics. The fixture is E810 (IRDMA_GEN_2) on a
// kernel before Linux 6.16, whose irdma_hw_stat_names (drivers/infiniband/hw/irdma/verbs.c)
// print retransmits as tcpRetransSegs (RHEL 9, Ubuntu 22.04/24.04).
func TestIntelIrdma(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("intel"))
	s, _ := newTestScraper(t, root, nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	for _, dev := range []string{"irdma0/1", "irdma1/1"} {
		assert.Equal(t, int64(800000000000+50000000000), value(t, md, "interconnect.io", rnicIO(dev, "transmit")), dev)
		assert.Equal(t, int64(900000000000+100000000000), value(t, md, "interconnect.io", rnicIO(dev, "receive")), dev)
		assert.Equal(t, int64(219726562+24414062), value(t, md, "rnic.packets", map[string]any{"device": dev, "direction": "receive"}))
		assert.Equal(t, int64(195312500+12207031), value(t, md, "rnic.packets", map[string]any{"device": dev, "direction": "transmit"}))
		for name, want := range map[string]int64{"cnpSent": 63, "cnpHandled": 41, "cnpIgnored": 2} {
			assert.Equal(t, want, value(t, md, "rnic.roce.cnp", map[string]any{"device": dev, "counter": name}))
		}
		assert.Equal(t, int64(77), value(t, md, "rnic.roce.ecn_marked", map[string]any{"device": dev}))
		assert.Equal(t, int64(11), value(t, md, "rnic.transport.events", map[string]any{"device": dev, "counter": "tcpRetransSegs"}))
	}
	assert.Equal(t, int64(5000), value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "ens801f0", "direction": "transmit"}))
}

// TestIntelIPUGen3: irdma GEN_3 (the IPU's ig3rdma) on Linux 6.16 and later: "RDMA/irdma: Add
// GEN3 HW statistics support" drops the tcp/iw prefixes (RetransSegs) in irdma_hw_stat_descs and
// adds names with spaces.
func TestIntelIPUGen3(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("ipu"))
	s, _ := newTestScraper(t, root, nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	dev := "irdma0/1"
	assert.Equal(t, int64(800000000000+50000000000), value(t, md, "interconnect.io", rnicIO(dev, "transmit")))
	for name, want := range map[string]int64{"RetransSegs": 11, "RTO": 6, "Nak Sequence Error": 8, "Rcvd Out of order packets": 12} {
		assert.Equal(t, want, value(t, md, "rnic.transport.events", map[string]any{"device": dev, "counter": name}), name)
	}
	assert.Equal(t, int64(1), value(t, md, "rnic.transport.errors", map[string]any{"device": dev, "counter": "CRC errors"}))
}

// TestBroadcomVFBytes: bnxt_re2 is a VF (its function links physfn, drivers/pci/iov.c
// pci_iov_sysfs_link). bnxt_re_ib_get_hw_stats (drivers/infiniband/hw/bnxt_re/hw_counters.c)
// never fills tx/rx_roce_only_bytes on a VF, so they read 0 while the traffic flows: the bytes
// come from tx/rx_bytes.
func TestBroadcomVFBytes(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("broadcom"))
	s, _ := newTestScraper(t, root, nil)
	s.reader.OnOpen = bnxtPMAFails
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	assert.Equal(t, int64(4000000000), value(t, md, "interconnect.io", rnicIO("bnxt_re2/1", "transmit")))
	assert.Equal(t, int64(3000000000), value(t, md, "interconnect.io", rnicIO("bnxt_re2/1", "receive")))
	assert.Equal(t, int64(3000000000/4096), value(t, md, "rnic.packets", map[string]any{"device": "bnxt_re2/1", "direction": "receive"}))
	// The PF beside it fills them: its RoCE-only counters are still used.
	assert.Equal(t, int64(6500000000000), value(t, md, "interconnect.io", rnicIO("bnxt_re0/1", "transmit")))
}

// TestBroadcomPFWithoutExtStats: a PF whose firmware lacks extended stats
// (_is_ext_stats_supported false in bnxt_re_ib_get_hw_stats) has the RoCE-only files at 0 while
// tx/rx_bytes count: the bytes come from tx/rx_bytes.
func TestBroadcomPFWithoutExtStats(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, fleetRoot("broadcom"), root)
	hw := "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/infiniband/bnxt_re0/ports/1/hw_counters/"
	for _, f := range []string{"tx_roce_only_bytes", "rx_roce_only_bytes", "tx_roce_only_pkts", "rx_roce_only_pkts"} {
		testfs.SetUint(t, root, hw+f, 0)
	}
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Include.Devices = []string{"bnxt_re0"} })
	s.reader.OnOpen = bnxtPMAFails
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	assert.Equal(t, int64(6980139270144), value(t, md, "interconnect.io", rnicIO("bnxt_re0/1", "transmit")))
	assert.Equal(t, int64(7521781137064), value(t, md, "interconnect.io", rnicIO("bnxt_re0/1", "receive")))
}

// TestEFACounters: AWS EFA (drivers/infiniband/hw/efa/efa_verbs.c EFA_DEFINE_PORT_STATS): plain
// bytes from tx/rx_bytes, and the SRD retransmits, path events, drops and work request errors
// (efa_com_cmd.h efa_com_network_stats, efa_com_basic_stats, efa_com_rdma_*_stats) in the named
// metrics, and the bytes split by operation in rnic.operation.io; the device-level
// EFA_DEFINE_DEVICE_STATS are not a port's.
func TestEFACounters(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("efa"))
	s, logs := newTestScraper(t, root, nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	dev := "rdmap80s0/1" // the second device: every value twice the first's
	assert.Equal(t, int64(2*9000000000), value(t, md, "interconnect.io", rnicIO(dev, "transmit")))
	assert.Equal(t, int64(2*8000000000), value(t, md, "interconnect.io", rnicIO(dev, "receive")))
	assert.Equal(t, int64(2*900000), value(t, md, "rnic.packets", map[string]any{"device": dev, "direction": "receive"}))
	for name, want := range map[string]int64{"retrans_pkts": 32, "retrans_timeout_events": 4, "unresponsive_remote_events": 0, "impaired_remote_conn_events": 10} {
		assert.Equal(t, want, value(t, md, "rnic.transport.events", map[string]any{"device": dev, "counter": name}), name)
	}
	for name, want := range map[string]int64{"rx_drops": 6, "rdma_read_wr_err": 2, "rdma_write_wr_err": 0} {
		assert.Equal(t, want, value(t, md, "rnic.transport.errors", map[string]any{"device": dev, "counter": name}), name)
	}
	// The bytes by operation: this port's sends, RDMA writes and read responses out; the reverse in.
	for _, c := range []struct {
		op, dir string
		want    int64
	}{
		{"send", "transmit", 2 * 1000000000}, {"send", "receive", 2 * 900000000},
		{"rdma_write", "transmit", 2 * 4000000000}, {"rdma_write", "receive", 2 * 3600000000},
		{"rdma_read", "transmit", 2 * 3500000000}, {"rdma_read", "receive", 2 * 4000000000},
	} {
		assert.Equal(t, c.want, value(t, md, "rnic.operation.io", map[string]any{"device": dev, "operation": c.op, "direction": c.dir}), "%s %s", c.op, c.dir)
	}
	assert.Equal(t, "Unknown", mustAttr(t, md, "rnic.port.info", dev, "link_layer"))
	assert.Equal(t, 0, logs.FilterMessage("Read failed; its points are missing").Len())
}

// TestIrdmaSumAcrossScrapes: the IPv4 + IPv6 sum grows with either counter and starts a new
// series when one of them is reset (a driver reload), never a negative delta.
func TestIrdmaSumAcrossScrapes(t *testing.T) {
	root := t.TempDir()
	testfs.CopyTree(t, fleetRoot("intel"), root)
	hw := "sys/devices/pci0000:b0/0000:b0:02.0/0000:b1:00.0/infiniband/irdma0/ports/1/hw_counters/"
	s, _ := newTestScraper(t, root, func(cfg *Config) { cfg.Include.Devices = []string{"irdma0"} })
	md1, err := s.scrape(context.Background())
	require.NoError(t, err)
	testfs.SetUint(t, root, hw+"ip4OutOctets", 800000000000+500)
	testfs.SetUint(t, root, hw+"ip6OutOctets", 50000000000+1000)
	md2, err := s.scrape(context.Background())
	require.NoError(t, err)
	tx := rnicIO("irdma0/1", "transmit")
	assert.Equal(t, int64(500+1000), value(t, md2, "interconnect.io", tx), "IPv4 + IPv6 bytes since the baseline")
	p1, _ := metrictest.Find(md1, "interconnect.io", tx)
	p2, _ := metrictest.Find(md2, "interconnect.io", tx)
	assert.Equal(t, p1.StartTimestamp(), p2.StartTimestamp())

	testfs.SetUint(t, root, hw+"ip4OutOctets", 10)
	testfs.SetUint(t, root, hw+"ip6OutOctets", 20)
	md3, err := s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(30), value(t, md3, "interconnect.io", tx))
	p3, _ := metrictest.Find(md3, "interconnect.io", tx)
	assert.Equal(t, p2.Timestamp(), p3.StartTimestamp(), "a reset starts a new series")
}

// TestSwitchdevCounters: mlx5 in switchdev mode keeps congestion, ICRC and the plain Q counters in
// the device-level hw_counters (reported under the device name); the representor ports' vport_
// names map to the same metrics.
func TestSwitchdevCounters(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("switchdev"))
	s, _ := newTestScraper(t, root, nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	assert.Equal(t, int64(500), value(t, md, "rnic.roce.cnp", map[string]any{"device": "mlx5_0", "counter": "np_cnp_sent"}))
	assert.Equal(t, int64(700), value(t, md, "rnic.roce.ecn_marked", map[string]any{"device": "mlx5_0"}))
	assert.Equal(t, int64(3), value(t, md, "rnic.transport.errors", map[string]any{"device": "mlx5_0", "counter": "rx_icrc_encapsulated"}))
	assert.Equal(t, int64(101), value(t, md, "rnic.transport.events", map[string]any{"device": "mlx5_0", "counter": "out_of_sequence"}))
	// Port 3 (the second VF representor): vport_out_of_sequence = 2 x its index (1).
	assert.Equal(t, int64(2), value(t, md, "rnic.transport.events", map[string]any{"device": "mlx5_0/3", "counter": "out_of_sequence"}))
	assert.Equal(t, int64(3e9*4), value(t, md, "interconnect.io", rnicIO("mlx5_0/3", "transmit")))

	// Each hw_counters directory, the device's and every representor port's, starts with the
	// read that renews the cache (rx_write_requests; vport_rx_write_requests on the ports).
	var order []string
	s.reader.OnOpen = func(p string) error {
		if strings.Contains(p, "hw_counters/") {
			order = append(order, strings.TrimPrefix(p, filepath.Join(root, "sys", "class", "infiniband")+"/"))
		}
		return nil
	}
	s.slowAt = s.slowAt.Add(-s.cfg.SlowInterval) // the ports' vport_ counters are all slow ones
	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	firstIn := map[string]string{}
	for _, p := range order {
		dir, name, _ := strings.Cut(p, "hw_counters/")
		if _, ok := firstIn[dir]; !ok {
			firstIn[dir] = name
		}
	}
	assert.Equal(t, map[string]string{"mlx5_0/": "rx_write_requests", "mlx5_0/ports/1/": "vport_rx_write_requests",
		"mlx5_0/ports/2/": "vport_rx_write_requests", "mlx5_0/ports/3/": "vport_rx_write_requests"}, firstIn)
}

// TestHWCacheRefreshFirst records the order of reads: on every scrape that reads a port's
// hw_counters, rx_write_requests comes first, because only its read makes mlx5 refresh the
// counter cache (core sysfs.c update_hw_stats; mlx5 counters.c mlx5_ib_get_hw_stats).
func TestHWCacheRefreshFirst(t *testing.T) {
	s, _ := newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) { cfg.Include.Devices = []string{"mlx5_bond_0"} })
	for i := range 3 {
		var hw []string
		s.reader.OnOpen = func(p string) error {
			if _, name, ok := strings.Cut(p, "/hw_counters/"); ok {
				hw = append(hw, name)
			}
			return nil
		}
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
		require.NotEmpty(t, hw, "scrape %d", i)
		assert.Equal(t, "rx_write_requests", hw[0], "scrape %d", i)
		assert.Equal(t, 1, strings.Count(strings.Join(hw, ","), "rx_write_requests"), "read once")
	}
}

// pointsWith returns the points of metric name whose attributes include want.

// TestMultiPlaneNotCountedTwice: smi1 shares mlx5_0's PCI function (an XDR multi-plane HCA,
// Mellanox/rdmamap PR #17); its per-plane counters are not added to the RDMA bytes, its ports
// keep their state and rate.
func TestMultiPlaneNotCountedTwice(t *testing.T) {
	root := fixtureCopy(t, fleetRoot("multiplane"))
	s, _ := newTestScraper(t, root, nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	assert.Equal(t, int64(1000000*4), value(t, md, "interconnect.io", rnicIO("mlx5_0/1", "transmit")))
	assert.Len(t, metrictest.Select(md, "interconnect.io", map[string]any{"component": "rnic", "pci.bus_id": "0000:0b:00.0", "direction": "transmit"}), 1,
		"one byte series per PCI function")
	absent(t, md, "rnic.packets", map[string]any{"device": "smi1/1"})
	for _, n := range []string{"1", "2", "3", "4"} {
		assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "smi1/" + n}))
	}
	assert.Equal(t, "0000:0b:00.0", mustAttr(t, md, "rnic.port.info", "smi1/1", "pci.bus_id"))
	assert.Equal(t, true, mustAttr(t, md, "rnic.port.info", "smi1/1", "plane"), "the plane device is labelled")
	assert.Equal(t, false, mustAttr(t, md, "rnic.port.info", "mlx5_0/1", "plane"))
}

// TestCompatNamespaceWarns: ports with state and rate but no counter directories (compat
// devices in a pod's own network namespace, core device.c add_one_compat_dev) warn once, with
// the cause and the fix, instead of succeeding silently.
func TestCompatNamespaceWarns(t *testing.T) {
	s, logs := newTestScraper(t, fleetRoot("netns"), nil)
	for range 3 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		assert.Equal(t, int64(4), value(t, md, "rnic.port.state", map[string]any{"device": "mlx5_0/1"}))
	}
	warned := logs.FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warned, 1, "warned once")
	assert.Contains(t, warned[0].Message, "network namespace")
	assert.Contains(t, warned[0].Message, "hostNetwork")

	s, logs = newTestScraper(t, filepath.Join("testdata", "synthetic"), nil)
	_, _ = s.scrape(context.Background())
	assert.Zero(t, logs.FilterMessageSnippet("network namespace").Len(), "a node with counters does not warn")
}

// TestPortWithoutAttributes: core sysfs.c creates link_layer, state, phys_state and rate for
// every port (port_default_attrs); a port without some of them (a partial dump, procfs issue
// #387's drivers) is reported with what it has, and what it lacks is said once, naming the port.
// Its PCI function has no numa_node either (a kernel without CONFIG_NUMA, drivers/pci/pci-sysfs.c):
// NUMA node -1, silently.
func TestPortWithoutAttributes(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(root, []testfs.RDMADevice{{
		Name: "mlx5_0", PCIPath: "pci0000:3a/0000:3a:00.0/0000:3b:00.0", NUMA: "", Driver: "mlx5_core",
		Ports: []testfs.RDMAPort{{Num: 1, PhysState: "5: LinkUp", Counters: testfs.ExtendedCounters(100, 200, 1, 2)}},
	}}))
	s, logs := newTestScraper(t, root, nil)
	for range 3 {
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
	}
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	assert.Equal(t, int64(400), value(t, md, "interconnect.io", rnicIO("mlx5_0/1", "transmit")))
	said := logs.FilterMessage("Port attribute files missing; the port is reported without them").All()
	require.Len(t, said, 1, "said once")
	assert.Equal(t, "mlx5_0/1", said[0].ContextMap()["port"])
	assert.Equal(t, []any{"link_layer", "state", "rate"}, said[0].ContextMap()["missing"])
	assert.Equal(t, int64(-1), mustAttr(t, md, "rnic.port.info", "mlx5_0/1", "numa.node"))
	assert.Equal(t, 0, logs.FilterLevelExact(zapcore.WarnLevel).Len()+logs.FilterLevelExact(zapcore.ErrorLevel).Len(), "no warning")
}

// TestSoftIWARPNoNamespaceWarning: siw has no counters by design (siw_main.c siw_device_ops has
// neither process_mad nor alloc_hw_port_stats); on kernels where siw_device_create parents the
// device to the netdev's PCI function, a node whose only RDMA device is siw looked like a pod's
// compat devices. No "network namespace" warning for it; the real compat devices still warn.
func TestSoftIWARPNoNamespaceWarning(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(root, []testfs.RDMADevice{{
		Name: "siw_ens1f0", PCIPath: "pci0000:16/0000:16:02.0/0000:17:00.0", NUMA: "0", Driver: "ice", Modules: []string{"siw"},
		Attrs: map[string]string{"node_type": "4: RNIC", "node_guid": "b49a:95ff:fec8:7e10"},
		Ports: []testfs.RDMAPort{{Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "25 Gb/sec (1X EDR)"}},
	}}))
	s, logs := newTestScraper(t, root, nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	assert.Zero(t, logs.FilterMessageSnippet("network namespace").Len())

	s, logs = newTestScraper(t, fixtureCopy(t, fleetRoot("netns")), nil)
	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, logs.FilterMessageSnippet("network namespace").Len())
}
