// Package topologytest holds the whole-node PCI fixtures of the topology tests: described here
// once, written by testfs.WritePCINode (which follows the kernel's sysfs layout:
// drivers/pci/pci-sysfs.c, Documentation/ABI/testing/sysfs-bus-pci and sysfs-kernel-iommu_groups)
// into a temporary directory by internal/topology's tests and into the rnic receiver's
// testdata/topology/<name> by its TestTopologyFixturesUpToDate.
package topologytest // import "github.com/otelcol-iclens/otelcol-iclens/internal/topology/topologytest"

import (
	"fmt"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

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

// OnePair is one healthy H100-ConnectX-7 pair behind one switch on host bridge 0000:10 (GPU
// 0000:13:00.0, NIC mlx5_0 at 0000:14:00.0), IOMMU in passthrough.
func OnePair() testfs.PCINode {
	n := testfs.PCINode{IOMMUGroupType: map[int]string{10: "identity", 11: "identity"}}
	n.RootBuses = []testfs.PCIRootBus{{Name: "pci0000:10", NUMANode: 0,
		RootPorts: []testfs.PCIFunction{pairBehindSwitch(0x10, 10, "mlx5_0", 0, fullGen5)}}}
	healthyDrivers(&n)
	return n
}

// Nodes returns every fixture node by name.
func Nodes() map[string]testfs.PCINode {
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

	// mixed: display-class functions ahead of the NVIDIA GPU in PCI order: the BMC's ASPEED AST2600
	// VGA (1a03:2000, class 0x030000, behind its ASPEED bridge 1a03:1150) on bus 02 and an AMD
	// Instinct MI210 (1002:740f, class 0x038000, pci.ids) on bus 06, then one H100-NIC pair on
	// bus 10. DCGM and NVML see only the NVIDIA GPU and call it GPU 0 (index 0): its topology
	// series must name it by its PCI address, 0000:13:00.0, not by a count over display devices.
	mx := OnePair()
	mx.RootBuses = append([]testfs.PCIRootBus{
		{Name: "pci0000:00", NUMANode: 0, RootPorts: []testfs.PCIFunction{{
			Address: "0000:00:1c.0", Vendor: 0x8086, DevID: 0x7ab8, Class: bridgeClass, IOMMUGroup: -1,
			Children: []testfs.PCIFunction{{Address: "0000:01:00.0", Vendor: 0x1a03, DevID: 0x1150, Class: bridgeClass, IOMMUGroup: -1,
				Children: []testfs.PCIFunction{{Address: "0000:02:00.0", Vendor: 0x1a03, DevID: 0x2000, Class: 0x030000, IOMMUGroup: 3}}}},
		}}},
		{Name: "pci0000:05", NUMANode: 0, RootPorts: []testfs.PCIFunction{{
			Address: "0000:05:01.0", Vendor: 0x8086, DevID: 0x352a, Class: bridgeClass, IOMMUGroup: -1,
			Children: []testfs.PCIFunction{{Address: "0000:06:00.0", Vendor: 0x1002, DevID: 0x740f, Class: 0x038000, IOMMUGroup: 5,
				Speed: 16, MaxSpeed: 16, Width: 16, MaxWidth: 16}},
		}}},
	}, mx.RootBuses...)
	mx.IOMMUGroupType[3], mx.IOMMUGroupType[5] = "identity", "identity"
	nodes["mixed"] = mx

	// nic-x8: a ConnectX-7 trained to x8 at 16 GT/s in its x16 Gen5 slot (a bad riser).
	nx := OnePair()
	nic := &nx.RootBuses[0].RootPorts[0].Children[0].Children[1].Children[0]
	nic.Width, nic.Speed = 8, 16
	nodes["nic-x8"] = nx

	// bf3-slot-x8: a BlueField-3 (15b3:a2dc behind the card's own PCIe switch, ports 15b3:197b,
	// pci.ids) whose slot link, between the host's root port and the card's upstream port, trained
	// to x8 while the card-internal link to the NIC function runs at full x16 Gen5. The kernel's
	// pcie_bandwidth_available() (drivers/pci/pci.c) walks every link up to the root and takes the
	// narrowest; so does the degraded check.
	bf := OnePair()
	bf.RootBuses = append(bf.RootBuses, testfs.PCIRootBus{Name: "pci0000:a0", NUMANode: 0, RootPorts: []testfs.PCIFunction{{
		Address: "0000:a0:01.0", Vendor: 0x8086, DevID: 0x352a, Class: bridgeClass, IOMMUGroup: -1,
		Speed: 32, MaxSpeed: 32, Width: 8, MaxWidth: 16,
		Children: []testfs.PCIFunction{{
			Address: "0000:a1:00.0", Vendor: 0x15b3, DevID: 0x197b, Class: bridgeClass, IOMMUGroup: -1,
			Speed: 32, MaxSpeed: 32, Width: 8, MaxWidth: 16,
			Children: []testfs.PCIFunction{{
				Address: "0000:a2:00.0", Vendor: 0x15b3, DevID: 0x197b, Class: bridgeClass, IOMMUGroup: -1,
				Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
				Children: []testfs.PCIFunction{{
					Address: "0000:a3:00.0", Vendor: 0x15b3, DevID: 0xa2dc, Class: ibClass, IOMMUGroup: 12, RDMA: "mlx5_1",
					Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
				}},
			}},
		}},
	}}})
	bf.IOMMUGroupType[12] = "identity"
	nodes["bf3-slot-x8"] = bf

	// mi300x: an AMD Instinct MI300X (1002:74a1, class 0x120000 processing accelerator, pci.ids)
	// and a ConnectX-7 behind one switch, amdgpu loaded and no NVIDIA driver, kernel 6.8: amdgpu
	// exports VRAM over dma-buf (amdgpu_dma_buf.c), so the pair is ready without nvidia-peermem.
	mi := OnePair()
	gpu := &mi.RootBuses[0].RootPorts[0].Children[0].Children[0].Children[0]
	gpu.Vendor, gpu.DevID, gpu.Class = 0x1002, 0x74a1, 0x120000
	mi.Modules = []string{"amdgpu", "mlx5_core", "mlx5_ib"}
	mi.NVIDIAVersion, mi.NVIDIAProcVersion = "", ""
	nodes["mi300x"] = mi
	return nodes
}
