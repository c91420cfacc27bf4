package rnicreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// Whole-node fixtures for the topology metrics, written by testfs.WritePCINode (which follows the
// kernel's sysfs layout: drivers/pci/pci-sysfs.c, Documentation/ABI/testing/sysfs-bus-pci and
// sysfs-kernel-iommu_groups) into testdata/topology/<name>. `go test -run
// TestTopologyFixturesUpToDate -update` rewrites them.
//
// IDs: NVIDIA H100 SXM5 10de:2330 (class 0x030200, 3D controller), ConnectX-7 15b3:1021 (class
// 0x020700, InfiniBand), Broadcom PEX89000 switch ports 1000:c030 (class 0x060400), Intel
// Sapphire Rapids root ports 8086:352a (pci.ids).

const (
	bridgeClass = 0x060400
	gpuClass    = 0x030200
	ibClass     = 0x020700
)

// pairBehindSwitch is one host bridge with a root port, a PCIe switch and, on two downstream
// ports, a GPU and a ConnectX-7: the building block of a DGX H100-class node, where each GPU is
// paired with its own NIC behind one switch (NVIDIA DGX H100 user guide, "network ports" and
// `nvidia-smi topo -m` showing GPU-NIC pairs as PIX).
func pairBehindSwitch(bus int, group int, nic string, acs uint16, gpuLink [4]int) testfs.PCIFunction {
	a := func(b, d int) string { return fmt.Sprintf("0000:%02x:%02x.0", b, d) }
	return testfs.PCIFunction{
		Address: a(bus, 1), Vendor: 0x8086, DevID: 0x352a, Class: bridgeClass, IOMMUGroup: -1,
		Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
		Children: []testfs.PCIFunction{{
			Address: a(bus+1, 0), Vendor: 0x1000, DevID: 0xc030, Class: bridgeClass, IOMMUGroup: -1,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
			Children: []testfs.PCIFunction{
				{Address: a(bus+2, 0), Vendor: 0x1000, DevID: 0xc030, Class: bridgeClass, IOMMUGroup: -1, ACSControl: testfs.U16(acs),
					Children: []testfs.PCIFunction{{
						Address: a(bus+3, 0), Vendor: 0x10de, DevID: 0x2330, Class: gpuClass, IOMMUGroup: group,
						Speed: float64(gpuLink[0]), MaxSpeed: float64(gpuLink[1]), Width: gpuLink[2], MaxWidth: gpuLink[3],
					}}},
				{Address: a(bus+2, 1), Vendor: 0x1000, DevID: 0xc030, Class: bridgeClass, IOMMUGroup: -1, ACSControl: testfs.U16(acs),
					Children: []testfs.PCIFunction{{
						Address: a(bus+4, 0), Vendor: 0x15b3, DevID: 0x1021, Class: ibClass, IOMMUGroup: group + 1, RDMA: nic,
						Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
					}}},
			},
		}},
	}
}

var fullGen5 = [4]int{32, 32, 16, 16}

// A driver with the open kernel module, and kernel 6.8, as on Ubuntu 24.04 with R550.
func healthyDrivers(n *testfs.PCINode) {
	n.Modules = []string{"nvidia_peermem", "mlx5_core", "mlx5_ib"}
	n.NVIDIAVersion = "550.54.15"
	n.NVIDIAProcVersion = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024"
	n.KernelRelease = "6.8.0-45-generic"
	n.IOMMUs = []string{"dmar0", "dmar1"}
}

func topologyNodes() map[string]testfs.PCINode {
	nodes := map[string]testfs.PCINode{}

	// dgx: 8 GPU-NIC pairs, four host bridges per socket, IOMMU in passthrough (iommu=pt).
	dgx := testfs.PCINode{IOMMUGroupType: map[int]string{}}
	for i := range 8 {
		bus := 0x10 + 0x20*i
		group := 10 + 2*i
		dgx.IOMMUGroupType[group], dgx.IOMMUGroupType[group+1] = "identity", "identity"
		dgx.RootBuses = append(dgx.RootBuses, testfs.PCIRootBus{
			Name: fmt.Sprintf("pci0000:%02x", bus), NUMANode: i / 4,
			RootPorts: []testfs.PCIFunction{pairBehindSwitch(bus, group, fmt.Sprintf("mlx5_%d", i), 0, fullGen5)},
		})
	}
	healthyDrivers(&dgx)
	nodes["dgx"] = dgx

	// miscabled: the only NIC sits under a root port of socket 1, the GPUs on socket 0 (the
	// seeds' "GPU and NIC under different root complexes").
	mis := testfs.PCINode{IOMMUGroupType: map[int]string{10: "identity", 11: "identity", 12: "identity", 13: "identity"}}
	p0 := pairBehindSwitch(0x10, 10, "", 0, fullGen5)
	mis.RootBuses = []testfs.PCIRootBus{
		{Name: "pci0000:10", NUMANode: 0, RootPorts: []testfs.PCIFunction{p0}},
		{Name: "pci0000:90", NUMANode: 1, RootPorts: []testfs.PCIFunction{{
			Address: "0000:90:01.0", Vendor: 0x8086, DevID: 0x352a, Class: bridgeClass, IOMMUGroup: -1,
			Children: []testfs.PCIFunction{{Address: "0000:91:00.0", Vendor: 0x15b3, DevID: 0x1021, Class: ibClass, IOMMUGroup: 13, RDMA: "mlx5_0",
				Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}},
		}}},
	}
	healthyDrivers(&mis)
	nodes["miscabled"] = mis

	// nopeermem: two good pairs, but nvidia-peermem is not loaded and the proprietary kernel module
	// rules out DMA-BUF; the second pair's switch ports redirect peer traffic (ACS SV|RR|CR|UF, what
	// Linux's pci_std_enable_acs sets); the IOMMU translates the second NIC's DMA.
	np := testfs.PCINode{IOMMUGroupType: map[int]string{10: "identity", 11: "identity", 30: "identity", 31: "DMA-FQ"}}
	np.RootBuses = []testfs.PCIRootBus{
		{Name: "pci0000:10", NUMANode: 0, RootPorts: []testfs.PCIFunction{pairBehindSwitch(0x10, 10, "mlx5_0", 0, fullGen5)}},
		{Name: "pci0000:30", NUMANode: 0, RootPorts: []testfs.PCIFunction{pairBehindSwitch(0x30, 30, "mlx5_1", 0x001d, fullGen5)}},
	}
	healthyDrivers(&np)
	np.Modules = []string{"mlx5_core", "mlx5_ib"}
	np.NVIDIAProcVersion = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:23:56 UTC 2024"
	nodes["nopeermem"] = np

	// x8gen3: one pair whose GPU trained to x8 at 8 GT/s instead of x16 at 32 GT/s (a bad riser).
	x8 := testfs.PCINode{IOMMUGroupType: map[int]string{10: "identity", 11: "identity"}}
	x8.RootBuses = []testfs.PCIRootBus{{Name: "pci0000:10", NUMANode: 0,
		RootPorts: []testfs.PCIFunction{pairBehindSwitch(0x10, 10, "mlx5_0", 0, [4]int{8, 32, 8, 16})}}}
	healthyDrivers(&x8)
	nodes["x8gen3"] = x8

	// The fleet nodes (internal/testfs/fleet.go).
	nodes["dgx-h100"] = testfs.DGXH100Node()
	nodes["hgx-iommu-pt"] = testfs.HGXNode(false)
	nodes["hgx-unprivileged"] = testfs.HGXNode(true)

	// gen5-in-gen4: a Gen5 ConnectX-7 (max 32 GT/s) on a Gen4 root port (max 16 GT/s), trained to
	// 16 GT/s x16: what the slot allows, not degraded (pcie_bandwidth_available, drivers/pci/pci.c).
	g4 := testfs.PCINode{IOMMUGroupType: map[int]string{10: "identity", 11: "identity"}}
	pair := pairBehindSwitch(0x10, 10, "mlx5_0", 0, fullGen5)
	pair.MaxSpeed, pair.Speed = 16, 16 // the root port
	sw := &pair.Children[0]
	sw.MaxSpeed, sw.Speed = 16, 16 // the switch upstream port, behind the Gen4 root port
	for i := range sw.Children {
		sw.Children[i].MaxSpeed, sw.Children[i].MaxWidth = 16, 16 // Gen4 switch downstream ports
		ep := &sw.Children[i].Children[0]
		ep.Speed = 16
	}
	g4.RootBuses = []testfs.PCIRootBus{{Name: "pci0000:10", NUMANode: 0, RootPorts: []testfs.PCIFunction{pair}}}
	healthyDrivers(&g4)
	nodes["gen5-in-gen4"] = g4

	// no-numa: a VM whose two host bridges report numa_node -1 (Documentation/ABI/testing/
	// sysfs-bus-pci: -1 is unknown), the GPU on one and the NIC on the other.
	nn := testfs.PCINode{IOMMUGroupType: map[int]string{10: "identity", 11: "identity", 13: "identity"}}
	gpuOnly := pairBehindSwitch(0x10, 10, "", 0, fullGen5)
	nn.RootBuses = []testfs.PCIRootBus{
		{Name: "pci0000:10", NUMANode: -1, RootPorts: []testfs.PCIFunction{gpuOnly}},
		{Name: "pci0000:90", NUMANode: -1, RootPorts: []testfs.PCIFunction{{
			Address: "0000:90:01.0", Vendor: 0x8086, DevID: 0x352a, Class: bridgeClass, IOMMUGroup: -1,
			Children: []testfs.PCIFunction{{Address: "0000:91:00.0", Vendor: 0x15b3, DevID: 0x1021, Class: ibClass, IOMMUGroup: 13, RDMA: "mlx5_0",
				Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}},
		}}},
	}
	healthyDrivers(&nn)
	nodes["no-numa"] = nn
	return nodes
}

func TestTopologyFixturesUpToDate(t *testing.T) {
	for name, node := range topologyNodes() {
		dir := filepath.Join("testdata", "topology", name)
		if *update {
			require.NoError(t, os.RemoveAll(dir))
			testfs.WritePCINode(t, dir, node)
			continue
		}
		fresh := t.TempDir()
		testfs.WritePCINode(t, fresh, node)
		require.Equal(t, snapshotTree(t, fresh), snapshotTree(t, dir), "testdata/topology/%s is stale: run go test -run TestTopologyFixturesUpToDate -update", name)
	}
}

func scrapeTopology(t *testing.T, name string) *rnicScraper {
	t.Helper()
	s, _ := newTestScraper(t, filepath.Join("testdata", "topology", name), nil)
	return s
}

func allPairs(cfg *Config) { cfg.Topology.AllPairs = true }

func TestTopologyDGX(t *testing.T) {
	s, _ := newTestScraper(t, filepath.Join("testdata", "topology", "dgx"), allPairs)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	for i := range 8 {
		gpu, nic := fmt.Sprintf("gpu%d", i), fmt.Sprintf("mlx5_%d", i)
		dp, ok := point(md, "rnic.topology.gpu_distance", map[string]any{"gpu": gpu, "device": nic})
		require.True(t, ok)
		assert.Equal(t, int64(1), dp.IntValue())
		assert.Equal(t, "PIX", dp.Attributes().AsRaw()["pcie.path"])
		assert.Equal(t, int64(1), value(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu": gpu, "device": nic, "pcie.path": "PIX"}))
		assert.Equal(t, int64(1), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": gpu, "device": nic}))
		assert.Equal(t, int64(0), value(t, md, "rnic.topology.acs_redirect", map[string]any{"gpu": gpu, "device": nic}))
	}
	// Same socket, other host bridge: NODE; other socket: SYS.
	assert.Equal(t, "NODE", mustPath(t, md, "gpu0", "mlx5_3"))
	assert.Equal(t, "SYS", mustPath(t, md, "gpu0", "mlx5_4"))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": "gpu0", "device": "mlx5_4"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "nvidia_peermem"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "dma_buf"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.iommu", map[string]any{"device": "gpu3", "iommu.mode": "passthrough"}))
	assert.Equal(t, "0000:13:00.0", mustAttr(t, md, "rnic.topology.iommu", "gpu0", "pci.bus_id"))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.link.degraded", map[string]any{"device": "gpu0"}))
	assert.Equal(t, 64, countPoints(md, "rnic.topology.gpu_distance"), "one series per GPU-NIC pair")
}

func TestTopologyMiscabled(t *testing.T) {
	md, err := scrapeTopology(t, "miscabled").scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(5), value(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu": "gpu0", "device": "mlx5_0", "pcie.path": "SYS"}))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": "gpu0", "device": "mlx5_0"}))
	assert.Equal(t, "0000:91:00.0", mustAttr(t, md, "rnic.topology.nearest_rnic", "mlx5_0", "pci.bus_id"))
}

func TestTopologyNoPeermem(t *testing.T) {
	md, err := scrapeTopology(t, "nopeermem").scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "nvidia_peermem"}))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "dma_buf"}), "proprietary kernel module")
	assert.Equal(t, "PIX", mustPath(t, md, "gpu0", "mlx5_0"))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": "gpu0", "device": "mlx5_0"}), "no peer memory")
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.acs_redirect", map[string]any{"gpu": "gpu1", "device": "mlx5_1"}))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.acs_redirect", map[string]any{"gpu": "gpu0", "device": "mlx5_0"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.iommu", map[string]any{"device": "mlx5_1", "iommu.mode": "translated"}))
}

func TestTopologyDegradedLink(t *testing.T) {
	md, err := scrapeTopology(t, "x8gen3").scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.link.degraded", map[string]any{"device": "gpu0"}))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.link.degraded", map[string]any{"device": "mlx5_0"}))
	assert.Equal(t, int64(8), value(t, md, "rnic.topology.link.width", map[string]any{"device": "gpu0", "pcie.link.bound": "current"}))
	assert.Equal(t, int64(16), value(t, md, "rnic.topology.link.width", map[string]any{"device": "gpu0", "pcie.link.bound": "max"}))
	dp, ok := point(md, "rnic.topology.link.speed", map[string]any{"device": "gpu0", "pcie.link.bound": "current"})
	require.True(t, ok)
	assert.Equal(t, 8.0, dp.DoubleValue())
	// Still a PIX pair with everything in place: degraded bandwidth, not broken GPUDirect.
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": "gpu0", "device": "mlx5_0"}))
}

// TestTopologyNotPerScrape: the PCI tree is read at discovery, not on every scrape.
func TestTopologyNotPerScrape(t *testing.T) {
	s := scrapeTopology(t, "dgx")
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	var opened []string
	s.reader.OnOpen = func(p string) error {
		opened = append(opened, p)
		return nil
	}
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	for _, p := range opened {
		assert.NotContains(t, p, "link_speed")
		assert.NotContains(t, p, "numa_node")
	}
	assert.Equal(t, 8, countPoints(md, "rnic.topology.gpu_distance"), "still reported: by default the PIX/PXB and nearest pairs")
}

func mustPath(t *testing.T, md pmetric.Metrics, gpu, nic string) string {
	t.Helper()
	dp, ok := point(md, "rnic.topology.gpu_distance", map[string]any{"gpu": gpu, "device": nic})
	require.True(t, ok, "no distance for %s-%s", gpu, nic)
	return dp.Attributes().AsRaw()["pcie.path"].(string)
}

func countPoints(md pmetric.Metrics, name string) int {
	return len(metrictest.Points(md, name))
}

// TestTopologyHGXIommuPT: an HGX board booted with iommu=pt, whose switch downstream ports the
// kernel set to redirect peer traffic (pci_std_enable_acs: SV|RR|CR|UF): no pair is ready, each
// for acs_redirect. Read unprivileged, the same board's ACS state is unknown: the verdict is -1
// (acs_unknown), never 1. Two equally near NICs tie-break in natural order: gpu4's nearest
// is mlx5_2, not mlx5_10.
func TestTopologyHGXIommuPT(t *testing.T) {
	md, err := scrapeTopology(t, "hgx-iommu-pt").scrape(context.Background())
	require.NoError(t, err)
	ready := metrictest.Points(md, "rnic.topology.gpudirect_ready")
	require.Len(t, ready, 16, "two PIX NICs per GPU")
	for _, dp := range ready {
		assert.Equal(t, int64(0), dp.IntValue())
		assert.Equal(t, "acs_redirect", dp.Attributes().AsRaw()["gpudirect.reason"])
	}
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.acs_redirect", map[string]any{"gpu": "gpu0", "device": "mlx5_0"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.iommu", map[string]any{"device": "gpu0", "iommu.mode": "passthrough"}))
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu": "gpu4", "device": "mlx5_2"}))
	absent(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu": "gpu4", "device": "mlx5_10"})
	assert.Equal(t, int64(1), value(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu": "gpu7", "device": "mlx5_3"}))

	md, err = scrapeTopology(t, "hgx-unprivileged").scrape(context.Background())
	require.NoError(t, err)
	ready = metrictest.Points(md, "rnic.topology.gpudirect_ready")
	require.Len(t, ready, 16)
	for _, dp := range ready {
		assert.Equal(t, int64(-1), dp.IntValue(), "unknown ACS is never ready")
		assert.Equal(t, "acs_unknown", dp.Attributes().AsRaw()["gpudirect.reason"])
	}
	assert.Equal(t, int64(-1), value(t, md, "rnic.topology.acs_redirect", map[string]any{"gpu": "gpu0", "device": "mlx5_0"}))
}

// TestTopologyDGXH100: the DGX H100-like node with its real compute NIC names, IPoIB netdevs and
// storage NICs. Each GPU's pair is PIX and ready; the defaults report 8 pairs (each GPU's PIX NIC)
// instead of the full 8 x 12 matrix, and the node's topology series are counted here.
func TestTopologyDGXH100(t *testing.T) {
	md, err := scrapeTopology(t, "dgx-h100").scrape(context.Background())
	require.NoError(t, err)
	for i, c := range testfs.DGXComputeNICs {
		gpu := fmt.Sprintf("gpu%d", i)
		assert.Equal(t, int64(1), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": gpu, "device": c.RDMA, "gpudirect.reason": "ready"}), gpu)
		assert.Equal(t, int64(1), value(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu": gpu, "device": c.RDMA, "pcie.path": "PIX"}))
		assert.Equal(t, c.Netdev, mustAttr(t, md, "rnic.port.info", c.RDMA+"/1", "netdev"))
	}
	assert.Equal(t, "enp41s0f1np1", mustAttr(t, md, "rnic.port.info", "mlx5_2/1", "netdev"))
	assert.Equal(t, 8, countPoints(md, "rnic.topology.gpu_distance"))
	// Per node: 8 pairs x 3 pair metrics + 8 nearest + 20 devices x (iommu, 2 speeds, 2 widths,
	// degraded) + 2 peer-memory mechanisms.
	assert.Equal(t, 8*3+8+20*6+2, topologySeries(md), "DGX H100 with the defaults")

	s, _ := newTestScraper(t, filepath.Join("testdata", "topology", "dgx-h100"), allPairs)
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 96, countPoints(md, "rnic.topology.gpu_distance"), "all_pairs: the full matrix")
	assert.Equal(t, 96*3+8+20*6+2, topologySeries(md), "DGX H100 with all_pairs")
	assert.Equal(t, "SYS", mustPath(t, md, "gpu0", "mlx5_11"))
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": "gpu0", "device": "mlx5_11", "gpudirect.reason": "pcie_path"}))
}

func topologySeries(md pmetric.Metrics) int {
	n := 0
	for _, m := range []string{"gpu_distance", "nearest_rnic", "acs_redirect", "gpudirect_ready", "iommu", "link.speed", "link.width", "link.degraded", "peer_memory"} {
		n += countPoints(md, "rnic.topology."+m)
	}
	return n
}

// TestTopologyGen5InGen4: a Gen5 NIC trained to 16 GT/s under a Gen4 upstream port is running at
// what the link can reach.
func TestTopologyGen5InGen4(t *testing.T) {
	md, err := scrapeTopology(t, "gen5-in-gen4").scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(0), value(t, md, "rnic.topology.link.degraded", map[string]any{"device": "mlx5_0"}))
	dp, ok := point(md, "rnic.topology.link.speed", map[string]any{"device": "mlx5_0", "pcie.link.bound": "max"})
	require.True(t, ok)
	assert.Equal(t, 32.0, dp.DoubleValue(), "the device's own maximum is still reported")
}

// TestTopologyNoNUMA: numa_node -1 on both host bridges is unknown, never NODE; the verdict is
// unknown (path_unknown), and the pair is still reported as the GPU's nearest.
func TestTopologyNoNUMA(t *testing.T) {
	md, err := scrapeTopology(t, "no-numa").scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "unknown", mustPath(t, md, "gpu0", "mlx5_0"))
	assert.Equal(t, int64(-1), value(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu": "gpu0", "device": "mlx5_0", "gpudirect.reason": "path_unknown"}))
}
