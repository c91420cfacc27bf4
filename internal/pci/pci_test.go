package pci

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

func TestParseSpeed(t *testing.T) {
	// pci_speed_string (v5.x+) and older kernels' formats.
	assert.Equal(t, 16.0, parseSpeed("16.0 GT/s PCIe"))
	assert.Equal(t, 2.5, parseSpeed("2.5 GT/s"))
	assert.Equal(t, 8.0, parseSpeed("8 GT/s"))
	assert.Equal(t, 0.0, parseSpeed("Unknown"))
	assert.Equal(t, 0.0, parseSpeed("Unknown speed"))
	assert.Equal(t, 0.0, parseSpeed(""))
}

func TestLinkState(t *testing.T) {
	assert.True(t, Link{SpeedGTs: 8, MaxSpeedGTs: 32, Width: 8, MaxWidth: 16}.BelowWidth())
	assert.True(t, Link{SpeedGTs: 8, MaxSpeedGTs: 32, Width: 16, MaxWidth: 16}.BelowSpeed())
	assert.False(t, Link{SpeedGTs: 32, MaxSpeedGTs: 32, Width: 16, MaxWidth: 16}.BelowWidth())
	assert.False(t, Link{}.BelowWidth(), "unknown is not degraded")
}

// TestLaneBandwidth: a link's payload bandwidth as the kernel's PCIE_SPEED2MBS_ENC counts it
// (drivers/pci/pci.h), which pcie_bandwidth_available logs as "x Gb/s available PCIe bandwidth":
// "31.504 Gb/s" for an 8 GT/s x4 link, 252.064 Gb/s for Gen4 x16, 504.128 Gb/s for Gen5 x16.
func TestLaneBandwidth(t *testing.T) {
	gbps := func(gen, width int) float64 { return LaneBandwidth(GenerationGTs(gen)) * float64(width) * 8 / 1e9 }
	assert.InDelta(t, 2.0, gbps(1, 1), 1e-9, "Gen1 x1: 8b/10b")
	assert.InDelta(t, 32.0, gbps(2, 8), 1e-9, "Gen2 x8")
	assert.InDelta(t, 31.508, gbps(3, 4), 1e-3, "Gen3 x4")
	assert.InDelta(t, 252.062, gbps(4, 16), 1e-3, "Gen4 x16 (A100 PCIe, ConnectX-6/7 in a Gen4 slot)")
	assert.InDelta(t, 504.123, gbps(5, 16), 1e-3, "Gen5 x16 (H100, ConnectX-7 NDR)")
	assert.InDelta(t, 1024.0, gbps(6, 16), 1e-9, "Gen6 x16 (B200's ConnectX-8): FLIT mode, counted 1/1")
	assert.Zero(t, LaneBandwidth(GenerationGTs(7)), "a generation the kernel does not know carries nothing it can name")
	assert.Zero(t, LaneBandwidth(12))
}

func acsConfig(ctrl uint16, withCap bool) []byte {
	b := make([]byte, 4096)
	if withCap {
		// A capability chain: AER (0x0001) at 0x100 pointing to ACS (0x000d) at 0x148.
		binary.LittleEndian.PutUint32(b[0x100:], 0x0001|2<<16|0x148<<20)
		binary.LittleEndian.PutUint32(b[0x148:], 0x000d|1<<16)
		binary.LittleEndian.PutUint16(b[0x14e:], ctrl)
	}
	return b
}

func TestParseACS(t *testing.T) {
	// Linux's pci_std_enable_acs sets SV|RR|CR|UF = 0x1d on downstream ports.
	assert.Equal(t, ACSRedirect, parseACS(acsConfig(0x001d, true)))
	assert.Equal(t, ACSRedirect, parseACS(acsConfig(0x0008, true)), "completion redirect alone")
	assert.Equal(t, ACSNoRedirect, parseACS(acsConfig(0x0011, true)), "SV|UF without redirect")
	// drivers/pci/p2pdma.c pci_bridge_has_acs_redir: ctrl & (PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC).
	assert.Equal(t, ACSRedirect, parseACS(acsConfig(0x0020, true)), "egress control alone")
	assert.Equal(t, ACSRedirect, parseACS(acsConfig(0x0031, true)), "SV|UF|EC")
	assert.Equal(t, ACSNoRedirect, parseACS(acsConfig(0, false)), "no ACS capability")
	assert.Equal(t, ACSUnknown, parseACS(make([]byte, 64)), "unprivileged read: header only")

	loop := make([]byte, 4096)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x0001|1<<16|0x100<<20) // points at itself
	assert.Equal(t, ACSNoRedirect, parseACS(loop), "a looping chain ends")
}

// tinyNode: one host bridge (NUMA 0) with a root port and a switch holding a GPU and a NIC, plus
// a NIC under a root port of a second host bridge on NUMA 1.
func tinyNode() testfs.PCINode {
	bridge := uint32(0x060400)
	return testfs.PCINode{
		RootBuses: []testfs.PCIRootBus{
			{Name: "pci0000:10", NUMANode: 0, RootPorts: []testfs.PCIFunction{{
				Address: "0000:10:01.0", Vendor: 0x8086, Class: bridge, IOMMUGroup: -1, Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
				Children: []testfs.PCIFunction{{
					Address: "0000:11:00.0", Vendor: 0x1000, DevID: 0xc030, Class: bridge, IOMMUGroup: -1,
					Children: []testfs.PCIFunction{
						{Address: "0000:12:00.0", Vendor: 0x1000, Class: bridge, IOMMUGroup: -1, ACSControl: testfs.U16(0x001d),
							Children: []testfs.PCIFunction{{Address: "0000:13:00.0", Vendor: VendorNVIDIA, DevID: 0x2330, Class: 0x030200, IOMMUGroup: 7, Speed: 8, MaxSpeed: 32, Width: 8, MaxWidth: 16}}},
						{Address: "0000:12:01.0", Vendor: 0x1000, Class: bridge, IOMMUGroup: -1, ACSControl: testfs.U16(0),
							Children: []testfs.PCIFunction{{Address: "0000:14:00.0", Vendor: 0x15b3, DevID: 0x1021, Class: 0x020700, IOMMUGroup: 8, RDMA: "mlx5_0"}}},
					},
				}},
			}}},
			{Name: "pci0000:90", NUMANode: 1, RootPorts: []testfs.PCIFunction{{
				Address: "0000:90:01.0", Vendor: 0x8086, Class: bridge, IOMMUGroup: -1,
				Children: []testfs.PCIFunction{{Address: "0000:91:00.0", Vendor: 0x15b3, Class: 0x020700, IOMMUGroup: -1, RDMA: "mlx5_1"}},
			}}},
		},
		IOMMUGroupType: map[int]string{7: "identity", 8: "DMA-FQ"},
	}
}

func TestScanAndPaths(t *testing.T) {
	root := t.TempDir()
	testfs.WritePCINode(t, root, tinyNode())
	var r sysfs.Reader
	devs, err := Scan(&r, filepath.Join(root, "sys"))
	require.NoError(t, err)
	by := map[string]*Device{}
	for _, d := range devs {
		by[d.Address] = d
	}
	require.Len(t, devs, 8)
	gpu, nic0, nic1 := by["0000:13:00.0"], by["0000:14:00.0"], by["0000:91:00.0"]
	assert.True(t, gpu.IsGPU())
	assert.False(t, nic0.IsGPU())
	assert.Equal(t, []string{"0000:10:01.0", "0000:11:00.0", "0000:12:00.0", "0000:13:00.0"}, gpu.Chain)
	assert.Equal(t, int64(1), nic1.NUMANode)

	assert.Equal(t, PathPIX, PathBetween(gpu, nic0))
	assert.Equal(t, PathSYS, PathBetween(gpu, nic1))
	assert.Equal(t, "PIX", PathPIX.String())
	assert.Equal(t, []string{"0000:12:00.0", "0000:12:01.0"}, BridgesBelowCommon(gpu, nic0))
	assert.Equal(t, ACSRedirect, ReadACS(by["0000:12:00.0"].Path))
	assert.Equal(t, ACSNoRedirect, ReadACS(by["0000:12:01.0"].Path))

	assert.True(t, IsBridge(&r, by["0000:12:00.0"].Path), "a switch port (class 0x060400)")
	assert.False(t, IsBridge(&r, gpu.Path), "a 3D controller")
	assert.False(t, IsBridge(&r, nic0.Path), "an Ethernet controller")
	assert.False(t, IsBridge(&r, filepath.Join(root, "no-such-function")), "an unreadable class is no bridge")

	assert.Equal(t, IOMMUPassthrough, ReadIOMMU(gpu.Path))
	assert.Equal(t, IOMMUTranslated, ReadIOMMU(nic0.Path))
	assert.Equal(t, IOMMUOff, ReadIOMMU(nic1.Path))

	l := ReadLink(&r, gpu.Path)
	assert.Equal(t, Link{SpeedGTs: 8, MaxSpeedGTs: 32, Width: 8, MaxWidth: 16}, l)
	assert.True(t, l.BelowWidth())
}

func TestPathBetweenShapes(t *testing.T) {
	dev := func(rootBus string, numa int64, chain ...string) *Device {
		return &Device{RootBus: rootBus, NUMANode: numa, Chain: chain, Address: chain[len(chain)-1]}
	}
	// Nested switches: PXB.
	a := dev("pci0000:00", 0, "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0", "0000:05:00.0")
	b := dev("pci0000:00", 0, "0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:06:00.0")
	assert.Equal(t, PathPXB, PathBetween(a, b))
	// Two root ports of one host bridge: PHB.
	c := dev("pci0000:00", 0, "0000:00:02.0", "0000:07:00.0")
	assert.Equal(t, PathPHB, PathBetween(b, c))
	// Two functions of one card: PIX.
	d := dev("pci0000:00", 0, "0000:00:02.0", "0000:07:00.1")
	assert.Equal(t, PathPIX, PathBetween(c, d))
	// Another host bridge on the same NUMA node: NODE.
	e := dev("pci0000:40", 0, "0000:40:01.0", "0000:41:00.0")
	assert.Equal(t, PathNODE, PathBetween(c, e))
	// numa_node -1 is "unknown" (Documentation/ABI/testing/sysfs-bus-pci): two host bridges that
	// both report -1 are not the same NUMA node.
	f := dev("pci0000:40", -1, "0000:40:01.0", "0000:41:00.0")
	g := dev("pci0000:80", -1, "0000:80:01.0", "0000:81:00.0")
	assert.Equal(t, PathUnknown, PathBetween(f, g))
	assert.Equal(t, PathUnknown, PathBetween(c, g))
	assert.True(t, PathUnknown.Farther(PathSYS))
	assert.False(t, PathPIX.Farther(PathPXB))
	// Under one host bridge the PCIe path is known whatever the NUMA node.
	h := dev("pci0000:80", -1, "0000:80:02.0", "0000:82:00.0")
	assert.Equal(t, PathPHB, PathBetween(g, h))
}

// TestLinkCapable: the link trains to the lower of the two ends' maxima, as
// pcie_bandwidth_available() in drivers/pci/pci.c computes it.
func TestLinkCapable(t *testing.T) {
	gen5nic := Link{SpeedGTs: 16, MaxSpeedGTs: 32, Width: 16, MaxWidth: 16}
	gen4slot := Link{SpeedGTs: 16, MaxSpeedGTs: 16, Width: 16, MaxWidth: 16}
	assert.True(t, gen5nic.BelowSpeed(), "against its own maximum")
	assert.False(t, gen5nic.Capable(gen4slot).BelowSpeed(), "a Gen5 NIC in a Gen4 slot is not degraded")
	x8slot := Link{MaxSpeedGTs: 32, MaxWidth: 8}
	assert.False(t, Link{SpeedGTs: 32, MaxSpeedGTs: 32, Width: 8, MaxWidth: 16}.Capable(x8slot).BelowWidth(), "x16 card in an x8 slot")
	assert.True(t, Link{SpeedGTs: 32, MaxSpeedGTs: 32, Width: 8, MaxWidth: 16}.Capable(Link{}).BelowWidth(), "unknown upstream caps nothing")
	assert.True(t, Link{SpeedGTs: 8, MaxSpeedGTs: 32, Width: 16, MaxWidth: 16}.Capable(gen4slot).BelowSpeed(), "Gen3 in a Gen4 slot is degraded")
}
