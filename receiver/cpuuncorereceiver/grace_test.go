package cpuuncorereceiver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// PMU type numbers of testdata/gh200 (internal/genfixtures grace): nvidia_scf_pmu_0 = 20,
// nvidia_pcie_pmu_0 = 21, nvidia_nvlink_c2c1_pmu_0 = 22, nvidia_nvlink_c2c0_pmu_0 = 23,
// nvidia_cnvlink_pmu_0 = 24 (socket s: +5s). Encodings from nvidia_cspmu.c: scf_pmu_event_attrs
// cmem_rd_data 0x1a5, cmem_wr_total_bytes 0x1db; mcf_pmu_event_attrs rd_bytes_loc 0x0,
// rd_bytes_rem 0x1, wr_bytes_loc 0x2, wr_bytes_rem 0x3; pcie_pmu_format_attrs root_port
// config1:0-9.
const (
	graceSCF0, gracePCIe0, graceC2C10, graceC2C00, graceCNVL0 = 20, 21, 22, 23, 24
)

// N5: a GH200 (testdata/gh200, laid out as arm_cspmu.c and nvidia_cspmu.c lay out the PMUs)
// reports CPU memory from the SCF's CMEM events and the NVLink-C2C0 PMU's local events, and CPU
// PCIe from the PCIE PMU, with the bytes of each event as Documentation/admin-guide/perf/
// nvidia-pmu.rst and the event names give them. On main the receiver found nothing here.
func TestGraceHopperMemoryAndPCIe(t *testing.T) {
	ts := newTestScraper(t, "gh200", withScales)
	assert.Equal(t, "grace", ts.plat.name)
	assert.Equal(t, "arm64 implementer 0x41 part 0xd4f", ts.cpu.String())
	assert.Equal(t, [][]uint64{{0x1a5, 0x1db}}, ts.fake.openAttrs(graceSCF0, 0), "cmem_rd_data and cmem_wr_total_bytes on the cpumask CPU")
	assert.Equal(t, [][]uint64{{0x0, 0x2}}, ts.fake.openAttrs(graceC2C00, 0), "NVLink-C2C0 rd/wr_bytes_loc")
	assert.Equal(t, [][]uint64{{0x0, 0x1, 0x2, 0x3}}, ts.fake.openAttrs(gracePCIe0, 0), "PCIE rd/wr_bytes_loc/rem, every root port")
	assert.Empty(t, ts.fake.openAttrs(graceC2C10, 0), "C2C1: local CMEM and GMEM cannot be told apart")
	assert.Empty(t, ts.fake.openAttrs(graceCNVL0, 0), "CNVLink: local CMEM and GMEM cannot be told apart")

	ts.fake.add(0, graceSCF0, 0x1a5, 1000) // cmem_rd_data: 32 B a count (assumed, README)
	ts.fake.add(0, graceSCF0, 0x1db, 4096) // cmem_wr_total_bytes: bytes
	ts.fake.add(0, graceC2C00, 0x0, 700)   // the GPU's ATS reads of CMEM, bytes
	ts.fake.add(0, graceC2C00, 0x2, 300)   // and writes
	ts.fake.add(0, gracePCIe0, 0x0, 10)    // NIC reads of local memory: sent to the NIC
	ts.fake.add(0, gracePCIe0, 0x1, 20)    // and of the remote socket's
	ts.fake.add(0, gracePCIe0, 0x2, 30)    // NIC writes into local memory: received
	ts.fake.add(0, gracePCIe0, 0x3, 40)
	ts.fake.add(0, graceC2C10, 0x2, 1<<30) // not opened: must not appear anywhere
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Len(t, got, 4, "%v", got)
	assert.Equal(t, int64(1000*32+700), got[io("cpu_memory", "read", "socket0/cmem", "", 0)].value)
	assert.Equal(t, int64(4096+300), got[io("cpu_memory", "write", "socket0/cmem", "", 0)].value)
	assert.Equal(t, int64(10+20), got[io("cpu_pcie", "transmit", "socket0/pcie", "", 0)].value)
	assert.Equal(t, int64(30+40), got[io("cpu_pcie", "receive", "socket0/pcie", "", 0)].value)
	sc := scales(md)
	assert.Equal(t, 32.0, sc[scaleKey{"nvidia_scf_pmu_0", "cmem_rd_data", "builtin"}], "%v", sc)
	assert.Equal(t, 1.0, sc[scaleKey{"nvidia_scf_pmu_0", "cmem_wr_total_bytes", "builtin"}], "%v", sc)
	assert.Empty(t, logged(ts, zapcore.WarnLevel, ""), "nothing to warn about")
}

// Per root port the PCIE PMU's events carry the port's bit in root_port (config1:0-9, read from
// format/root_port: ten ports), one group per port; ports have no pci.bus_id, because which PCI
// root port a bit selects is in neither sysfs nor the kernel.
func TestGracePCIePerRootPort(t *testing.T) {
	ts := newTestScraper(t, "gh200", func(c *Config) { c.PCIe.Granularity = GranularityPort })
	var groups [][]uint64
	for _, g := range ts.fake.groups {
		if g.attrs[0].Type != gracePCIe0 {
			continue
		}
		var c1 []uint64
		for _, a := range g.attrs {
			c1 = append(c1, a.Config1)
		}
		groups = append(groups, c1)
	}
	require.Len(t, groups, 10, "one group per root_port bit")
	for i, g := range groups {
		assert.Equal(t, []uint64{1 << i, 1 << i, 1 << i, 1 << i}, g, "port %d", i)
	}
	ts.fake.counts[fakeKey{0, perf.Attr{Type: gracePCIe0, Config: 0x2, Config1: 1 << 3}}] += 1 << 20
	ts.fake.counts[fakeKey{0, perf.Attr{Type: gracePCIe0, Config: 0x0, Config1: 1 << 9}}] += 512
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64(1<<20), got[io("cpu_pcie", "receive", "socket0/pcie/port3", "", 0)].value)
	assert.Equal(t, int64(512), got[io("cpu_pcie", "transmit", "socket0/pcie/port9", "", 0)].value)
	assert.Equal(t, int64(0), got[io("cpu_pcie", "receive", "socket0/pcie/port0", "", 0)].value)
}

// GB200 compute tray: two Grace sockets, each PMU opened on its own socket's cpumask CPU and its
// series placed on that socket and NUMA node (not by the number in the PMU's name).
func TestGraceTwoSockets(t *testing.T) {
	ts := newTestScraper(t, "gb200", nil)
	assert.Equal(t, [][]uint64{{0x1a5, 0x1db}}, ts.fake.openAttrs(graceSCF0+5, 72))
	ts.fake.add(72, graceSCF0+5, 0x1db, 64)
	ts.fake.add(72, gracePCIe0+5, 0x2, 8)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64(64), got[io("cpu_memory", "write", "socket1/cmem", "", 1)].value)
	assert.Equal(t, int64(0), got[io("cpu_memory", "write", "socket0/cmem", "", 0)].value)
	assert.Equal(t, int64(8), got[io("cpu_pcie", "receive", "socket1/pcie", "", 1)].value)
}

// A PMU whose identifier is not the product its name promises (another implementer, or a product
// of another generation under the same name) is refused with an error naming the file, and costs
// only that PMU's series.
func TestGraceWrongProductRefused(t *testing.T) {
	root := copyFixture(t, "gh200")
	id := filepath.Join(root, "sys", "bus", "event_source", "devices", "nvidia_scf_pmu_0", "identifier")
	require.NoError(t, os.WriteFile(id, []byte("2cf0043b\n"), 0o644)) // implementer 0x43b (Arm's JEP106)
	ts := newTestScraper(t, "gh200", func(c *Config) { c.RootPath = root })
	assert.Empty(t, ts.fake.openAttrs(graceSCF0, 0))
	assert.NotEmpty(t, ts.fake.openAttrs(graceC2C00, 0), "the other memory PMU is still read")
	warns := logged(ts, zapcore.WarnLevel, "identifier")
	require.Len(t, warns, 1, "%v", warns)
	assert.Contains(t, warns[0], "nvidia_scf_pmu_0/identifier: implementer 0x43b product 0x2cf, want NVIDIA (0x36b) product 0x2cf")
}

// An arm64 host without the NVIDIA PMUs (another Neoverse V2 SoC) is identified and says once
// that it has nothing, without a warning.
func TestArm64WithoutNVIDIAPMUs(t *testing.T) {
	root := copyFixture(t, "gh200")
	devices := filepath.Join(root, "sys", "bus", "event_source", "devices")
	names, err := os.ReadDir(devices)
	require.NoError(t, err)
	for _, n := range names {
		if n.Name() != "armv8_pmuv3_0" {
			require.NoError(t, os.Remove(filepath.Join(devices, n.Name())))
		}
	}
	ts := newTestScraper(t, "gh200", func(c *Config) { c.RootPath = root })
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, md.DataPointCount())
	assert.Empty(t, logged(ts, zapcore.WarnLevel, ""))
	none := logged(ts, zapcore.InfoLevel, "Nothing to report")
	require.Len(t, none, 1)
	assert.Contains(t, none[0], "nvidia_scf_pmu")
}

// A Grace node records what its discovery reads (the arm_cspmu PMUs below their platform devices,
// cpu0's MIDR, not the PMUs' power/ and subsystem/ links) and replays to the same series and
// values. On main the recording kept no midr_el1 and the replay found no PMU it knew.
func TestGraceRecordThenReplay(t *testing.T) {
	root := copyFixture(t, "gh200")
	pmuDir := filepath.Join(root, "sys", "devices", "platform", "arm-cs-arch-pmu.0", "nvidia_scf_pmu_0")
	require.NoError(t, os.MkdirAll(filepath.Join(pmuDir, "power"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pmuDir, "power", "runtime_status"), []byte("unsupported\n"), 0o644))
	require.NoError(t, os.Symlink("../../../../bus/event_source", filepath.Join(pmuDir, "subsystem")))
	file := filepath.Join(t.TempDir(), "gh200-cpuuncore.jsonl")
	live := newTestScraper(t, "gh200", func(c *Config) { c.RootPath = root; c.Recording.Write = file })
	live.fake.add(0, graceSCF0, 0x1a5, 100)
	live.fake.add(0, gracePCIe0, 0x2, 7)
	live.tick(5 * time.Second)
	md, err := live.scrape(t.Context())
	require.NoError(t, err)
	want := ioPoints(t, md)
	require.NoError(t, live.shutdown(t.Context()))

	rec, err := recording.Open(file)
	require.NoError(t, err)
	paths := map[string]bool{}
	for _, e := range rec.Records[0].Tree {
		paths[e.Path] = true
	}
	assert.True(t, paths["sys/devices/platform/arm-cs-arch-pmu.0/nvidia_scf_pmu_0/identifier"])
	assert.True(t, paths["sys/devices/platform/arm-cs-arch-pmu.0/nvidia_scf_pmu_0/events/cmem_rd_data"])
	assert.True(t, paths["sys/devices/system/cpu/cpu0/regs/identification/midr_el1"])
	assert.False(t, paths["sys/devices/platform/arm-cs-arch-pmu.0/nvidia_scf_pmu_0/power/runtime_status"])
	assert.False(t, paths["sys/devices/platform/arm-cs-arch-pmu.0/nvidia_scf_pmu_0/subsystem"])

	rcfg := createDefaultConfig().(*Config)
	rcfg.Recording.Replay = file
	s := newScraper(rcfg, receivertest.NewNopSettings(metadata.Type), liveOpener)
	require.NoError(t, s.start(t.Context(), nil))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	md, err = s.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	require.Len(t, got, len(want))
	for k, p := range want {
		assert.Equal(t, p.value, got[k].value, "%v", k)
	}
	assert.Equal(t, int64(100*32), got[io("cpu_memory", "read", "socket0/cmem", "", 0)].value)
}
