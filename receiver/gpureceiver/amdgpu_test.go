package gpureceiver

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// mi300xMetrics is an MI300X's table as smu_v13_0_6_ppt.c smu_v13_0_6_get_gpu_metrics fills it
// (smu_cmn_init_soft_gpu_metrics(gpu_metrics, 1, rev)): average_umc_activity in %, a Gen5 x16
// link (pcie_link_speed in 0.1 GT/s), pcie_replay_count_acc, and the per-link XGMI totals in KB
// (xgmi_read/write_data_acc[i] from the firmware's XgmiRead/WriteDataSizeAcc). The seven links
// of an eight-GPU MI300X platform carry traffic; the eighth is unused. The PCIe accumulators
// advance with kb as well: 10 accumulation cycles per unit of kb, and pcie_bandwidth_acc 24 more
// per cycle (an average of 24 GB/s, the reading amdgpu_pcie.go takes), so that two tables 500
// apart are 5000 cycles and 120000 GB/s-cycles apart.
func mi300xMetrics(rev uint8, kb uint64) testfs.GPUMetrics {
	m := testfs.GPUMetrics{FormatRevision: 1, ContentRevision: rev, AverageUMCActivity: 40,
		PCIeLinkWidth: 16, PCIeLinkSpeed: 320, PCIeBandwidthAcc: 240 * kb, PCIeReplayCountAcc: 7,
		AccumulationCounter: uint32(10 * kb)}
	for l := 0; l < 7; l++ {
		m.XGMIReadDataAcc[l] = kb * uint64(l+1)
		m.XGMIWriteDataAcc[l] = 2 * kb * uint64(l+1)
	}
	return m
}

// TestParseAMDMetrics: every table version the receiver knows, laid out member by member from
// kgd_pp_interface.h by internal/testfs (its own walk of the struct, not the parser's offsets).
// 1.8 is what smu_v13_0_6_get_gpu_metrics fills since "drm/amd/pm: Use gpu_metrics_v1_8 for
// smu_v13_0_6" (2025): its fixture follows struct gpu_metrics_v1_8 of kgd_pp_interface.h as the
// patch "drm/amd/pm: Add gpu_metrics_v1_8" defines it, whole, xcp_stats[] included.
//
// 1.9 is attribute-encoded (internal/testfs gpuMetricsAttrTable: the patch "drm/amdgpu/pm: Add
// definition for gpu_metrics v1.9", with attributes the receiver skips between those it reads).
func TestParseAMDMetrics(t *testing.T) {
	for _, rev := range []uint8{4, 5, 6, 7, 8, 9} {
		want := mi300xMetrics(rev, 1000)
		b := testfs.GPUMetricsTable(want)
		m, err := parseAMDMetrics(b)
		require.NoError(t, err, want.String())
		assert.EqualValues(t, 40, m.umcActivity, want.String())
		assert.EqualValues(t, 16, m.pcieWidth, want.String())
		assert.EqualValues(t, 320, m.pcieSpeed, want.String())
		assert.EqualValues(t, 7, m.pcieReplays, want.String())
		assert.EqualValues(t, 240000, m.pcieBandwidthAcc, want.String())
		assert.Equal(t, want.XGMIReadDataAcc, m.xgmiReadKB, want.String())
		assert.Equal(t, want.XGMIWriteDataAcc, m.xgmiWriteKB, want.String())
		if rev < 6 {
			assert.Equal(t, amdHasAll, m.has, "%s has no accumulation_counter", want)
			continue
		}
		assert.Equal(t, amdHasAll|amdHasAccumulations, m.has, want.String())
		assert.EqualValues(t, 10000, m.accumulations, want.String())
		assert.EqualValues(t, 32, m.accumulationBits, want.String())
	}
	// sizeof(struct gpu_metrics_v1_4), _v1_5 and _v1_8 as gcc lays them out on x86-64 and arm64
	// (v1_8: 344 bytes through num_partition and its padding, 8 x 440 of xcp_stats, the u32 and
	// the struct's padding to 8).
	assert.Len(t, testfs.GPUMetricsTable(mi300xMetrics(4, 0)), 288)
	assert.Len(t, testfs.GPUMetricsTable(mi300xMetrics(5, 0)), 360)
	b := testfs.GPUMetricsTable(mi300xMetrics(8, 0))
	assert.Len(t, b, 3872)
	assert.EqualValues(t, 3872, binary.LittleEndian.Uint16(b), "structure_size is sizeof(struct gpu_metrics_v1_8)")
}

// TestParseAMDMetricsRefusesUnknownVersions: a version the receiver does not know (a 1.99, an
// APU's 2.x, a 3.0, the older 1.3) and a table shorter than its version are refused, naming them.
func TestParseAMDMetricsRefusesUnknownVersions(t *testing.T) {
	for _, v := range [][2]uint8{{1, 99}, {2, 1}, {3, 0}, {1, 3}} {
		_, err := parseAMDMetrics(testfs.GPUMetricsTable(testfs.GPUMetrics{FormatRevision: v[0], ContentRevision: v[1]}))
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("table version %d.%d is not one the receiver knows (it reads 1.4 to 1.9", v[0], v[1]))
	}
	b := testfs.GPUMetricsTable(mi300xMetrics(5, 1))
	_, err := parseAMDMetrics(b[:200])
	assert.ErrorContains(t, err, "version 1.5 table of 200 bytes (header says 360), needs at least 360")
	_, err = parseAMDMetrics(b[:3])
	assert.ErrorContains(t, err, "shorter than its 4-byte header")
}

// TestParseAMDMetricsV1_9Damaged: an attribute-encoded table that is shorter than its header
// says, whose attr_count runs past its end, whose value runs past it, or with a type that enum
// amdgpu_metrics_attr_type does not define is refused, naming what is wrong; one without the XGMI
// attributes (a GPU without XGMI) is read, and says it has no XGMI bytes rather than 0.
func TestParseAMDMetricsV1_9Damaged(t *testing.T) {
	good := testfs.GPUMetricsTable(mi300xMetrics(9, 1000))
	damaged := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, c := range map[string]struct {
		table []byte
		want  string
	}{
		"short":          {good[:len(good)-3], fmt.Sprintf("version 1.9 table of %d bytes, its header says %d", len(good)-3, len(good))},
		"count":          {damaged(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 100); return b }), "inside attribute 14 of 100"},
		"negative":       {damaged(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 0xffffffff); return b }), "attr_count -1"},
		"type":           {damaged(func(b []byte) []byte { b[8+2] |= 0xf0; return b }), "attribute 0 (id 0) has type 15"},
		"value too long": {damaged(func(b []byte) []byte { b[8] = 0xff; b[9] |= 0x03; return b }), "attribute 0 (id 0, 1023 x 2 bytes) runs past"},
	} {
		_, err := parseAMDMetrics(c.table)
		assert.ErrorContains(t, err, c.want, name)
	}
	noXGMI := mi300xMetrics(9, 1000)
	noXGMI.LeaveOutXGMI = true
	m, err := parseAMDMetrics(testfs.GPUMetricsTable(noXGMI))
	require.NoError(t, err)
	assert.Equal(t, (amdHasAll|amdHasAccumulations)&^(amdHasXGMIRead|amdHasXGMIWrite), m.has)
	assert.EqualValues(t, 40, m.umcActivity)
}

// amdNode writes two MI300X GPUs as amdgpu lays them out (testfs.AMDGPU), the second with table
// version rev1, and returns the root.
func amdNode(t *testing.T, kb uint64, rev1 uint8) string {
	root := t.TempDir()
	var tree testfs.Tree
	tree.AMDGPU(testfs.AMDGPU{Card: 0, Address: "0000:05:00.0", RootBus: "pci0000:00", NUMANode: 0,
		UniqueID: "5a1c4b2e0f3d9e71", ProductName: "AMD Instinct MI300X", Metrics: testfs.GPUMetricsTable(mi300xMetrics(7, kb))})
	tree.AMDGPU(testfs.AMDGPU{Card: 1, Address: "0000:15:00.0", RootBus: "pci0000:10", NUMANode: 1,
		Metrics: testfs.GPUMetricsTable(mi300xMetrics(rev1, kb))})
	require.NoError(t, tree.Write(root))
	return root
}

func newAMDScraper(t *testing.T, root string, configure ...func(*Config)) (*gpuScraper, *observer.ObservedLogs, *testClock) {
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = root
	for _, f := range configure {
		f(cfg)
	}
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newPatientScraper(cfg, set)
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	s.now = clock.now
	return s, logs, clock
}

// TestAMDGPUSource (N11): an MI300X node without ROCm and without any NVIDIA library. The
// receiver finds both GPUs under /sys/class/drm (auto: DCGM and NVML are absent), keys them by
// PCI address like the NVIDIA GPUs, and serves XGMI bytes (all links, KB x 1024; write as
// transmit, read as receive), memory activity, PCIe link width, generation and replays.
func TestAMDGPUSource(t *testing.T) {
	root := amdNode(t, 1000, 5)
	s, _, clock := newAMDScraper(t, root)
	require.NoError(t, s.start(context.Background(), nil))
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	m := scrapeOnce(t, s)
	require.NotNil(t, s.src, "the amdgpu source opened")
	assert.Equal(t, "amdgpu", s.src.kind())
	info := one(t, m, "gpu.info", "device", "gpu0")
	assert.Equal(t, "0000:05:00.0", info.attrs["pci.bus_id"])
	assert.Equal(t, "5a1c4b2e0f3d9e71", info.attrs["gpu.uuid"])
	assert.Equal(t, "AMD Instinct MI300X", info.attrs["gpu.model"])
	assert.Equal(t, "amdgpu", info.attrs["source"])
	assert.EqualValues(t, 1, one(t, m, "gpu.info", "device", "gpu1").attrs["numa.node"])
	assert.EqualValues(t, 0, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_xgmi", "direction", "transmit").i,
		"a since-boot counter starts at 0 (metadata/start-time.md)")
	assert.InDelta(t, 0.40, one(t, m, "gpu.dram.active", "device", "gpu1").f, 1e-9)
	assert.EqualValues(t, 16, one(t, m, "gpu.pcie.link.width", "device", "gpu0").i)
	assert.EqualValues(t, 5, one(t, m, "gpu.pcie.link.generation", "device", "gpu0").i, "32 GT/s")
	assert.EqualValues(t, 0, one(t, m, "gpu.pcie.replays", "device", "gpu0").i)
	assert.Empty(t, find(m, "interconnect.io", "component", "gpu_pcie"), "the first table is the baseline of the PCIe rate")

	// 10 s later every link moved 500 KB more per link index: links 1..7 read 500*(1+...+7) KB.
	var tree testfs.Tree
	tree.Bytes("sys/devices/pci0000:00/0000:05:00.0/gpu_metrics", testfs.GPUMetricsTable(mi300xMetrics(7, 1500)))
	require.NoError(t, tree.Write(root))
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	const linkSum = 1 + 2 + 3 + 4 + 5 + 6 + 7
	assert.EqualValues(t, 500*linkSum*1024, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_xgmi", "direction", "receive").i)
	assert.EqualValues(t, 2*500*linkSum*1024, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_xgmi", "direction", "transmit").i)
	assert.EqualValues(t, int64(24e9*10), one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "both").i,
		"24 GB/s average over the 10 s")
	assert.Len(t, find(m, "interconnect.io", "device", "gpu0"), 3, "XGMI, two directions, and PCIe as one")
	assert.Empty(t, find(m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie"), "a 1.5 table has no accumulation_counter")
}

// TestAMDGPUXGMIPerLink (#25): with the opt-in gpu.xgmi.link.io, each of the table's eight XGMI
// links is a series per direction (xgmi_write_data_acc[link] transmit, xgmi_read_data_acc[link]
// receive, KB x 1024): on the MI300X fixture links 0-6 move 500 KB x (link+1) in 10 s and link 7,
// unused on an eight-GPU platform, stays at 0; the links sum to interconnect.io gpu_xgmi; without
// the option there is no per-link series.
func TestAMDGPUXGMIPerLink(t *testing.T) {
	root := amdNode(t, 1000, 8)
	s, _, clock := newAMDScraper(t, root, func(c *Config) { c.Metrics.GpuXgmiLinkIo.Enabled = true })
	require.NoError(t, s.start(context.Background(), nil))
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	m := scrapeOnce(t, s)
	assert.Len(t, find(m, "gpu.xgmi.link.io", "device", "gpu0"), 2*8, "8 links, two directions")
	var tree testfs.Tree
	tree.Bytes("sys/devices/pci0000:00/0000:05:00.0/gpu_metrics", testfs.GPUMetricsTable(mi300xMetrics(7, 1500)))
	require.NoError(t, tree.Write(root))
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	var sumRx, sumTx int64
	for l := int64(0); l < 8; l++ {
		want := int64(0)
		if l < 7 {
			want = 500 * (l + 1) * 1024
		}
		rx := one(t, m, "gpu.xgmi.link.io", "device", "gpu0", "link", l, "direction", "receive").i
		tx := one(t, m, "gpu.xgmi.link.io", "device", "gpu0", "link", l, "direction", "transmit").i
		assert.Equal(t, want, rx, "link %d receive", l)
		assert.Equal(t, 2*want, tx, "link %d transmit", l)
		sumRx, sumTx = sumRx+rx, sumTx+tx
	}
	assert.Equal(t, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_xgmi", "direction", "receive").i, sumRx)
	assert.Equal(t, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_xgmi", "direction", "transmit").i, sumTx)
	assert.Equal(t, "0000:05:00.0", one(t, m, "gpu.xgmi.link.io", "device", "gpu0", "link", int64(3), "direction", "receive").attrs["pci.bus_id"])

	off, _, _ := newAMDScraper(t, root)
	require.NoError(t, off.start(context.Background(), nil))
	defer func() { require.NoError(t, off.shutdown(context.Background())) }()
	assert.Empty(t, find(scrapeOnce(t, off), "gpu.xgmi.link.io"), "opt-in")
}

// TestAMDGPUTableV1_8: an MI300X on a kernel whose smu_v13_0_6_get_gpu_metrics fills
// gpu_metrics_v1_8 (since "drm/amd/pm: Use gpu_metrics_v1_8 for smu_v13_0_6", 2025) is served like
// the older tables: XGMI bytes and the link gauges, without an error.
func TestAMDGPUTableV1_8(t *testing.T) {
	root := amdNode(t, 1000, 8)
	s, _, clock := newAMDScraper(t, root)
	require.NoError(t, s.start(context.Background(), nil))
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	scrapeOnce(t, s)
	var tree testfs.Tree
	tree.Bytes("sys/devices/pci0000:10/0000:15:00.0/gpu_metrics", testfs.GPUMetricsTable(mi300xMetrics(8, 1500)))
	require.NoError(t, tree.Write(root))
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)
	const linkSum = 1 + 2 + 3 + 4 + 5 + 6 + 7
	assert.EqualValues(t, 500*linkSum*1024, one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_xgmi", "direction", "receive").i)
	assert.EqualValues(t, 2*500*linkSum*1024, one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_xgmi", "direction", "transmit").i)
	assert.InDelta(t, 0.40, one(t, m, "gpu.dram.active", "device", "gpu1").f, 1e-9)
	assert.EqualValues(t, 5, one(t, m, "gpu.pcie.link.generation", "device", "gpu1").i)
	assert.EqualValues(t, int64(24e9*10), one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie", "direction", "both").i)
}

// TestAMDGPUTableV1_9: an MI300X on a kernel whose driver fills the attribute-encoded
// gpu_metrics_v1_9 is served like the fixed tables: XGMI bytes, memory activity and the link
// gauges; a GPU whose table lists no XGMI attribute gets no gpu_xgmi series (not 0 bytes) and the
// rest.
func TestAMDGPUTableV1_9(t *testing.T) {
	root := amdNode(t, 1000, 9)
	s, _, clock := newAMDScraper(t, root)
	require.NoError(t, s.start(context.Background(), nil))
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	scrapeOnce(t, s)
	var tree testfs.Tree
	tree.Bytes("sys/devices/pci0000:10/0000:15:00.0/gpu_metrics", testfs.GPUMetricsTable(mi300xMetrics(9, 1500)))
	noXGMI := mi300xMetrics(9, 1500)
	noXGMI.LeaveOutXGMI = true
	tree.Bytes("sys/devices/pci0000:00/0000:05:00.0/gpu_metrics", testfs.GPUMetricsTable(noXGMI))
	require.NoError(t, tree.Write(root))
	clock.t = clock.t.Add(10 * time.Second)
	m, err := s.scrape(context.Background())
	require.NoError(t, err)
	const linkSum = 1 + 2 + 3 + 4 + 5 + 6 + 7
	assert.EqualValues(t, 500*linkSum*1024, one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_xgmi", "direction", "receive").i)
	assert.EqualValues(t, 2*500*linkSum*1024, one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_xgmi", "direction", "transmit").i)
	assert.InDelta(t, 0.40, one(t, m, "gpu.dram.active", "device", "gpu1").f, 1e-9)
	assert.EqualValues(t, 5, one(t, m, "gpu.pcie.link.generation", "device", "gpu1").i)
	assert.EqualValues(t, 16, one(t, m, "gpu.pcie.link.width", "device", "gpu1").i)
	assert.EqualValues(t, int64(24e9*10), one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie", "direction", "both").i)
	assert.Empty(t, find(m, "interconnect.io", "device", "gpu0", "component", "gpu_xgmi"), "no XGMI attribute: no gpu_xgmi series")
	assert.Len(t, find(m, "interconnect.io", "device", "gpu0"), 1, "its PCIe only")
	assert.InDelta(t, 0.40, one(t, m, "gpu.dram.active", "device", "gpu0").f, 1e-9)
}

// TestAMDGPUUnknownTableVersion: a GPU whose table is a version the receiver does not know costs
// that GPU's series, with one line naming the file and the version; the other GPU is served.
func TestAMDGPUUnknownTableVersion(t *testing.T) {
	root := amdNode(t, 1000, 99)
	s, logs, clock := newAMDScraper(t, root)
	require.NoError(t, s.start(context.Background(), nil))
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	for i := 0; i < 3; i++ {
		m, err := s.scrape(context.Background())
		require.True(t, scrapererror.IsPartialScrapeError(err), "%v", err)
		assert.ErrorContains(t, err, filepath.Join("card1", "device", "gpu_metrics"))
		assert.ErrorContains(t, err, "table version 1.99 is not one the receiver knows")
		assert.Len(t, find(m, "interconnect.io", "device", "gpu0"), 2)
		assert.Empty(t, find(m, "interconnect.io", "device", "gpu1"))
		clock.t = clock.t.Add(10 * time.Second)
	}
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "gpu1/gpu_metrics")).Len(), "said once")
}

// FuzzParseAMDMetrics: whatever bytes a gpu_metrics file holds (a table of any version, torn,
// overwritten), the parser returns a table or an error and never panics or reads past them.
// Seeds: every version's table as internal/testfs lays it out.
func FuzzParseAMDMetrics(f *testing.F) {
	for _, rev := range []uint8{4, 5, 6, 7, 8, 9} {
		f.Add(testfs.GPUMetricsTable(mi300xMetrics(rev, 1000)))
	}
	f.Add([]byte{0, 0, 1, 9, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseAMDMetrics(b)
		if err == nil && m.has == 0 && m.contentRev != amdMetricsAttrRevision {
			t.Fatalf("a fixed-layout table parsed with no field: %+v", m)
		}
	})
}
