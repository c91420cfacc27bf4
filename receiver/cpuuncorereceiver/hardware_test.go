package cpuuncorereceiver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
)

// U1: Sierra Forest (0xaf), Grand Ridge (0xb6) and Clearwater Forest (0xdd) use the Granite Rapids
// uncore tables in the kernel (uncore.c intel_uncore_match: INTEL_ATOM_CRESTMONT_X,
// INTEL_ATOM_CRESTMONT, INTEL_ATOM_DARKMONT_X -> gnr_uncore_init), so they have both command
// schedulers (6a8a48644c4b, Fixes: cb4a6ccf3583 "Support Sierra Forest and Grand Ridge") and the
// IIO free-running scale correction. testdata/srf*: uncore_imc_N = 110+N, free-running 140+N.
func TestSierraForestUsesGraniteRapidsTables(t *testing.T) {
	for _, m := range []int{0xaf, 0xb6, 0xdd} {
		p := platformFor(cpuID{vendor: "GenuineIntel", family: 6, model: m})
		assert.Equal(t, gnr.memory, p.memory, "model %#x", m)
		assert.Equal(t, 32.0, p.iio.bytesPerCount, "model %#x", m)
		assert.True(t, p.iio.programmableTransmit, "model %#x", m)
	}
	for _, tc := range []struct {
		fixture, source string
	}{{"srf", "sysfs"}, {"srf_unpatched", "builtin"}} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestScraper(t, tc.fixture, withScales)
			assert.Equal(t, 8, ts.plan.memoryPMUs, "8 IMC PMUs, a box on each socket")
			assert.Equal(t, [][]uint64{{0xcf05, 0xcf06, 0xf005, 0xf006}}, ts.fake.openAttrs(110, 144), "both schedulers")
			ts.fake.add(144, 110, 0xcf05, 100) // SCH0 reads
			ts.fake.add(144, 110, 0xcf06, 90)  // SCH1 reads
			ts.fake.add(0, 141, 0x20ff, 10)    // bw_in_port0 of stack 1
			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)
			got := ioPoints(t, md)
			assert.Equal(t, int64((100+90)*64), got[io("cpu_memory", "read", "socket1/imc", "", 1)].value, "all reads, not SCH0's half")
			assert.Equal(t, int64(10*32), got[io("cpu_pcie", "receive", "socket0/iio1", "", 0)].value, "32 B a count whatever scale the kernel prints")
			assert.Equal(t, 64.0, scales(md)[scaleKey{"uncore_imc_0", "cas_count_read_sch1", tc.source}])
		})
	}
}

// U3: Granite Rapids on a kernel before v6.8 (no GNR entry in intel_uncore_match) gets the
// generic discovery PMUs uncore_type_<type>_<box> (uncore.c uncore_get_pmu_name), generic format,
// no aliases, no free-running counters. The IMC (type 6) is counted with perfmon's raw encodings
// of both schedulers. The IIO (type 1) cannot be: a generic PMU keeps only config bits 0-31
// (uncore_discovery.h GENERIC_PMON_RAW_EVENT_MASK), and the IIO data events need the port mask in
// bits 36-47; the receiver says so once. testdata/gnr_v6.6: uncore_type_6_N = 110+N.
func TestGenericPMUNames(t *testing.T) {
	ts := newTestScraper(t, "gnr_v6.6", withScales)
	assert.Equal(t, "gnr", ts.plat.name)
	assert.Equal(t, 12, ts.plan.memoryPMUs)
	assert.Equal(t, 0, ts.plan.pciePMUs)
	assert.Equal(t, [][]uint64{{0xcf05, 0xcf06, 0xf005, 0xf006}}, ts.fake.openAttrs(110, 0))
	assert.Empty(t, ts.fake.openAttrs(150, 0), "other generic types are not touched")
	assert.Len(t, corrections(ts, "GENERIC_PMON_RAW_EVENT_MASK"), 1, "the missing CPU PCIe is explained once")
	ts.fake.add(0, 111, 0xf006, 5)
	ts.fake.add(128, 110, 0xcf05, 3)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64(5*64), got[io("cpu_memory", "write", "socket0/imc", "", 0)].value)
	assert.Equal(t, int64(3*64), got[io("cpu_memory", "read", "socket1/imc", "", 1)].value)
	assert.Equal(t, 64.0, scales(md)[scaleKey{"uncore_type_6_0", "cas_count_read_sch1", "builtin"}], "%v", scales(md))
}

// GNR on Linux 6.8 to 6.14 (testdata/gnr_v6.8): bw_in at the old 4-byte scale plus bw_out, which
// the kernel later removed as not counting a constant size (506f981ab40f). bw_in is counted at
// 32 B, bw_out is not used, transmit comes from the programmable events.
func TestGraniteRapidsV68FreeRunning(t *testing.T) {
	ts := newTestScraper(t, "gnr_v6.8", func(c *Config) {
		c.Memory.Enabled = false
		withScales(c)
	})
	assert.Equal(t, [][]uint64{{0x20ff, 0x21ff, 0x22ff, 0x23ff, 0x24ff, 0x25ff, 0x26ff, 0x27ff}}, ts.fake.openAttrs(140, 0))
	ts.fake.add(0, 141, 0x20ff, 10)
	ts.fake.add(0, 141, 0x30ff, 99) // bw_out_port0: not counted
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64(10*32), got[io("cpu_pcie", "receive", "socket0/iio1", "", 0)].value)
	assert.Equal(t, int64(0), got[io("cpu_pcie", "transmit", "socket0/iio1", "", 0)].value)
	assert.Len(t, corrections(ts, "Fix the scale of IIO free running counters"), 8)
}

// U2: on a 2-socket Zen 4 with a kernel before 6.7 (no amd_umc; testdata/zen4_v6.1, amd_df type
// 11) this socket's DRAM is also read and written by the other socket: perf amdzen4/data-fabric.json
// remote_processor_read_data_beats_csN (EventCode 0x1f+0x40N, UMask 0xbfe) and
// remote_processor_write_data_beats_csN (UMask 0xbff), "Read data beats (64 bytes) for remote
// processor at Coherent Station (CS) N"; recommended.json lists dram_read_data_for_remote_processor
// beside the local one. Local and remote beats of a CS add up to its DRAM traffic.
func TestZen4DataFabricRemoteProcessor(t *testing.T) {
	ts := newTestScraper(t, "zen4_v6.1", nil)
	groups := ts.fake.openAttrs(11, 0)
	require.Len(t, groups, 48, "12 coherent stations x local/remote x read/write")
	assert.Contains(t, groups, []uint64{0x000000000b00fe1f}, "cs0 remote read: umask 0xbfe, bits 8-11 of it at config:24-27")
	assert.Contains(t, groups, []uint64{0x000000000b00ff1f}, "cs0 remote write")
	ts.fake.add(0, 11, 0x000000000700fe1f, 100) // local reads at CS0
	ts.fake.add(0, 11, 0x000000000b00fe1f, 40)  // the other socket's reads at CS0
	ts.fake.add(0, 11, 0x000000000b00ff1f, 9)   // the other socket's writes at CS0
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Equal(t, int64((100+40)*64), got[io("cpu_memory", "read", "socket0/df", "", 0)].value)
	assert.Equal(t, int64(9*64), got[io("cpu_memory", "write", "socket0/df", "", 0)].value)
}

// G2, the start-time rule (metadata/start-time.md): a point's value is what was counted since its
// start time. Perf counters count from 0 when the receiver opens them, so the series start then
// at 0; resctrl's mbm_total_bytes counts since the mount, so its first point is 0 at the first
// reading (TestResctrlFallback follows the series on).
func TestStartTimeRuleCPUUncore(t *testing.T) {
	ts := newTestScraper(t, "skx", nil)
	opened := pcommon.NewTimestampFromTime(ts.clock)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	require.NotEmpty(t, got)
	for k, p := range got {
		assert.Equal(t, int64(0), p.value, k)
		assert.Equal(t, opened, p.start, k)
	}

	rs := newTestScraper(t, "resctrl", nil)
	rs.tick(5 * time.Second)
	md, err = rs.scrape(t.Context())
	require.NoError(t, err)
	n := 0
	for _, dp := range metrictest.Points(md, "cpuuncore.memory.io") {
		assert.Equal(t, int64(0), dp.IntValue(), "mbm_total_bytes holds 1000 since the mount: not bytes of this series")
		assert.Equal(t, pcommon.NewTimestampFromTime(rs.clock), dp.StartTimestamp())
		n++
	}
	assert.Equal(t, 2, n)
}

// U4: peer-to-peer writes into a device (GPU<->NIC across root ports, GPUDirect through the root
// complex) are in the sender's receive (bw_in) but were in no transmit series. perfmon graniterapids
// lists UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE.ALL_PARTS (0xC0/0x02, PortMask 0xFF, FCMask 7,
// counters 2-3): counted into transmit at stack granularity on GNR (testdata/gnr: uncore_iio_N =
// 130+N). ICX, SPR and EMR count the same event per part (their *_uncore_experimental.json
// PEER_WRITE.PARTn): TestPeerWritesICXSPREMR.
func TestGraniteRapidsPeerWrites(t *testing.T) {
	ts := newTestScraper(t, "gnr", func(c *Config) { c.Memory.Enabled = false })
	const (
		memRead   = 0x00070ff000000483
		memWrite  = 0x00070ff0000001c0
		peerWrite = 0x00070ff0000002c0
	)
	assert.Equal(t, [][]uint64{{memRead, memWrite, peerWrite}}, ts.fake.openAttrs(131, 0))
	ts.fake.add(0, 131, memRead, 10)
	ts.fake.add(0, 131, peerWrite, 5)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64((10+5)*4), ioPoints(t, md)[io("cpu_pcie", "transmit", "socket0/iio1", "", 0)].value)
}

// N3 / U4: peer-to-peer writes into a stack's devices (another root port's device writing into
// this one's BAR: GPUDirect RDMA across root ports) are in transmit on ICX, SPR and EMR, per part
// (perfmon icelakex, sapphirerapids, emeraldrapids *_uncore_experimental.json
// UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE.PARTn: 0xC0/0x02, PortMask 1<<n, FCMask 0x07, counters
// 2-3) and at stack granularity (the parts' mask together), and on Sierra / Clearwater Forest at
// stack granularity (sierraforest_uncore.json, clearwaterforest_uncore.json: ALL_PARTS
// 0xC0/0x02/0x0FF). Not on Grand Ridge (no file lists it) nor SKX, whose MEM_WRITE already counts
// writes "by another IIO unit". On main ICX/SPR/EMR/SRF/CWF had no peer event at all.
func TestPeerWritesICXSPREMR(t *testing.T) {
	const (
		memRead   = 0x00070ff000000483
		memWrite  = 0x00070ff0000001c0
		peerWrite = 0x00070ff0000002c0
	)
	for _, tc := range []struct {
		fixture string
		box     uint32 // uncore_iio_1
	}{{"icx", 57}, {"spr", 81}, {"srf", 131}} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestScraper(t, tc.fixture, func(c *Config) { c.Memory.Enabled = false })
			require.Equal(t, [][]uint64{{memRead, memWrite, peerWrite}}, ts.fake.openAttrs(tc.box, 0))
			ts.fake.add(0, tc.box, memWrite, 3)
			ts.fake.add(0, tc.box, peerWrite, 1<<20) // a NIC on another stack writing into a GPU here
			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)
			assert.Equal(t, int64((3+1<<20)*4), ioPoints(t, md)[io("cpu_pcie", "transmit", "socket0/iio1", "", 0)].value)
		})
	}
	emr := platformFor(cpuID{vendor: "GenuineIntel", family: 6, model: 0xcf})
	assert.True(t, emr.iio.peerWrite && emr.iio.peerWritePerPart, "EMR as SPR")
	cwf := platformFor(cpuID{vendor: "GenuineIntel", family: 6, model: 0xdd})
	assert.True(t, cwf.iio.peerWrite && !cwf.iio.peerWritePerPart, "CWF: ALL_PARTS only")
	grr := platformFor(cpuID{vendor: "GenuineIntel", family: 6, model: 0xb6})
	assert.False(t, grr.iio.peerWrite, "Grand Ridge: no perfmon file lists it")
	assert.False(t, skx.iio.peerWrite, "SKX: MEM_WRITE already counts another IIO unit's writes")

	// Per port on ICX: part n's peer writes in part n's transmit.
	port := newTestScraper(t, "icx", func(c *Config) { c.Memory.Enabled = false; c.PCIe.Granularity = GranularityPort })
	groups := port.fake.openAttrs(57, 0)
	require.Len(t, groups, 8)
	assert.Equal(t, []uint64{0x0007004000000483, 0x00070040000001c0, 0x00070040000002c0}, groups[2], "part 2: ch_mask=0x4")
	port.fake.add(0, 57, 0x00070040000002c0, 250)
	port.tick(5 * time.Second)
	md, err := port.scrape(t.Context())
	require.NoError(t, err)
	// testdata/icx: stack 1 of die 0 is bus 0000:30; part 2 is root port 30:04.0 (the GPU's).
	assert.Equal(t, int64(250*4), ioPoints(t, md)[io("cpu_pcie", "transmit", "socket0/iio1/port2", "0000:30:04.0", 0)].value)
}

// U7: on ICX the IIO PMU 5 is the DMI stack (icx_sad_pmon_mapping), whose part 0 is the PCH at
// device 0x00 and part 3 the CBDMA at device 0x01 (intel/pcm pcm-iio-topology.cpp, Whitley); only
// the PCIe stacks have root ports in slots 2..5. testdata/icx: uncore_iio_5/die0 = 0000:00.
func TestICXDMIStackParts(t *testing.T) {
	ts := newTestScraper(t, "icx", func(c *Config) { c.PCIe.Granularity = GranularityPort; c.Memory.Enabled = false })
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio5/port0", "0000:00:00.0", 0), "PCH traffic on the DMI stack")
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio5/port3", "0000:00:01.0", 0), "CBDMA")
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio5/port1", "", 0), "no root port for part 1 on the DMI stack")
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio0/port0", "0000:16:02.0", 0), "PCIe stacks unchanged")
}

// U6: uncore_iio_N/dieX is the logical die id (uncore_snbep.c pmu_set_mapping: die0 ..
// uncore_max_dies()-1), the cpumask lists only dies with an online CPU. A die whose CPUs are all
// offline leaves more dieX files than cpumask entries: the index would name another die's bus,
// so the mapping is refused (said once) rather than attributing ports to the wrong root port.
func TestIIOMappingRefusedWhenDiesDisagree(t *testing.T) {
	root := copyFixture(t, "skx")
	// Socket 1's CPUs went offline: cpumask "0", die0 and die1 files remain.
	for i := 0; i < 6; i++ {
		for _, pmu := range []string{"uncore_iio_%d", "uncore_iio_free_running_%d", "uncore_imc_%d"} {
			require.NoError(t, os.WriteFile(filepath.Join(root, "sys/devices", fmt.Sprintf(pmu, i), "cpumask"), []byte("0\n"), 0o644))
		}
	}
	ts := newTestScraper(t, "skx", func(c *Config) { c.RootPath = root; c.PCIe.Granularity = GranularityPort; c.Memory.Enabled = false })
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio1/port0", "", 0), "no bus id rather than a wrong one")
	said := corrections(ts, "IIO stack mapping has more die files")
	require.Len(t, said, 1, "said once for all stacks")
	assert.Contains(t, said[0], "dies=1 ")
	assert.Contains(t, said[0], "mapping_files=2 ")
}

// U5: SKX transmit. The kernel's free-running bw_out (4 B a count, skx_uncore_iio_freerunning_events)
// has no perfmon FREERUN entry to confirm its increment, and the same counters were removed on SPR
// as not counting a constant size (506f981ab40f). Intel PCM measures SKX outbound traffic with the
// programmable events (src/opCode-6-85.txt: 0x83/0x04, 0xc0/0x01), so the receiver does too, with
// the SKX format (ch_mask config:36-43 = the four parts 0x0f, fc_mask config:44-46;
// skx_uncore_iio_formats_attr); bw_out stays available as pcie.skx_bw_out. testdata/skx:
// uncore_iio_N = 19+N, free-running 25+N.
func TestSKXTransmitFromProgrammableEvents(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) { c.Memory.Enabled = false })
	const (
		memRead  = 0x7<<44 | 0x0f<<36 | 0x04<<8 | 0x83
		memWrite = 0x7<<44 | 0x0f<<36 | 0x01<<8 | 0xc0
	)
	assert.Equal(t, [][]uint64{{memRead, memWrite}}, ts.fake.openAttrs(20, 0))
	assert.Equal(t, [][]uint64{{0x20ff, 0x21ff, 0x22ff, 0x23ff}}, ts.fake.openAttrs(26, 0), "bw_in only")
	ts.fake.add(0, 20, memRead, 10)
	ts.fake.add(0, 20, memWrite, 2)
	ts.fake.add(0, 26, 0x24ff, 999) // bw_out_port0: not used by default
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64((10+2)*4), ioPoints(t, md)[io("cpu_pcie", "transmit", "socket0/iio1", "", 0)].value)
}

// U8: under sub-NUMA clustering the IMCs of one socket belong to different NUMA nodes, and sysfs
// does not say which IMC serves which node: the socket's memory series carry no numa.node rather
// than the collecting CPU's (testdata/spr_snc2: two nodes per socket). PCIe series keep theirs.
func TestSubNUMAClusteringMemoryHasNoNode(t *testing.T) {
	ts := newTestScraper(t, "spr_snc2", nil)
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Contains(t, got, io("cpu_memory", "read", "socket0/imc", "", -1))
	assert.Contains(t, got, io("cpu_memory", "write", "socket1/imc", "", -1))
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket1/iio0", "", 2), "the IIO stack keeps its CPU's node")

	plain := newTestScraper(t, "spr", nil)
	plain.tick(5 * time.Second)
	md, err = plain.scrape(t.Context())
	require.NoError(t, err)
	assert.Contains(t, ioPoints(t, md), io("cpu_memory", "read", "socket1/imc", "", 1), "without SNC the socket's node")
}

// N4 / U9: Xeon Max counts its HBM traffic from the HBM controllers' PMUs (uncore_hbm_N since
// f8a86a9bb5f7, v6.11; uncore_type_14_N before it), perfmon sapphirerapids_uncore_experimental.json
// UNC_MCHBM_CAS_COUNT.RD 0x05/0xCF and .WR 0x05/0xF0, 64 B a CAS (assumed: no perfmon metric gives
// the size), as socketN/hbm beside the DDR socketN/imc. testdata/spr_hbm*: HBM PMU N = 120+N. On
// main no HBM PMU was read.
func TestXeonMaxHBM(t *testing.T) {
	for _, fixture := range []string{"spr_hbm", "spr_hbm_v6.6"} {
		t.Run(fixture, func(t *testing.T) {
			ts := newTestScraper(t, fixture, func(c *Config) { c.PCIe.Enabled = false; withScales(c) })
			assert.Equal(t, [][]uint64{{0xcf05, 0xf005}}, ts.fake.openAttrs(123, 56))
			ts.fake.add(56, 123, 0xcf05, 1000)
			ts.fake.add(0, 120, 0xf005, 10)
			ts.fake.add(0, 70, 0xcf05, 7) // DDR: uncore_imc_0 cas_count_read
			ts.tick(5 * time.Second)
			md, err := ts.scrape(t.Context())
			require.NoError(t, err)
			got := ioPoints(t, md)
			assert.Equal(t, int64(1000*64), got[io("cpu_memory", "read", "socket1/hbm", "", 1)].value)
			assert.Equal(t, int64(10*64), got[io("cpu_memory", "write", "socket0/hbm", "", 0)].value)
			assert.Equal(t, int64(7*64), got[io("cpu_memory", "read", "socket0/imc", "", 0)].value, "DDR stays its own series")
			pmu := "uncore_hbm_3"
			if fixture == "spr_hbm_v6.6" {
				pmu = "uncore_type_14_3"
			}
			assert.Equal(t, 64.0, scales(md)[scaleKey{pmu, "UNC_MCHBM_CAS_COUNT.RD", "builtin"}], "%v", scales(md))
		})
	}
}

// U6, checked against the PCI tree: the receiver reads uncore_iio_N/dieX for the die whose CPU is
// the X-th in the PMU's cpumask, while the kernel numbers the files by logical die id
// (pmu_set_mapping). Where the two orders differ, the file names a root bus whose devices'
// numa_node belongs to the other socket (node/nodeN/cpulist). testdata/skx with uncore_iio_1's
// die0/die1 swapped (socket 0's bus 0000:17, whose NIC is on node 0, now in die1, read for
// socket 1): the receiver does not give socket 1's ports socket 0's root ports, and says why
// once. Socket 0's die0 (now 0000:85, no devices in the fixture) cannot be checked and is used.
// On main socket1/iio1/port0 was reported as root port 0000:17:00.0.
func TestIIOMappingCheckedAgainstPCINodes(t *testing.T) {
	root := copyFixture(t, "skx")
	dir := filepath.Join(root, "sys", "devices", "uncore_iio_1")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "die0"), []byte("0000:85\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "die1"), []byte("0000:17\n"), 0o644))
	// Documentation/ABI/stable/sysfs-devices-node: node/nodeN/cpulist, "%*pbl\n".
	for n, list := range []string{"0-27", "28-55"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "devices", "system", "node", fmt.Sprintf("node%d", n), "cpulist"), []byte(list+"\n"), 0o644))
	}
	ts := newTestScraper(t, "skx", func(c *Config) { c.RootPath = root; c.PCIe.Granularity = GranularityPort; c.Memory.Enabled = false })
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket1/iio1/port0", "", 1), "not socket 0's root port 0000:17:00.0")
	assert.NotContains(t, got, io("cpu_pcie", "receive", "socket1/iio1/port0", "0000:17:00.0", 0))
	assert.Contains(t, got, io("cpu_pcie", "receive", "socket0/iio2/port2", "0000:3a:02.0", 0), "a stack whose mapping agrees keeps it")
	said := corrections(ts, "IIO stack mapping names a root bus of another socket")
	require.Len(t, said, 1, "said once: %v", said)
	assert.Contains(t, said[0], "root_bus=0000:17")
}
