package testfs

import (
	"encoding/binary"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
)

// PCIFunction describes one PCI function of a fixture node and what sits below it. WritePCINode
// lays it out as the kernel does:
//
//   - /sys/devices/pci<domain>:<bus>/<root port>/<...>/<function>/ with vendor, device, class
//     ("0x%06x"), numa_node, current_link_speed ("16.0 GT/s PCIe", pci_speed_string),
//     max_link_speed, current_link_width, max_link_width (drivers/pci/pci-sysfs.c);
//   - config: the configuration space as root reads it (4096 bytes for PCIe) or, with
//     ConfigHeaderOnly, as an unprivileged reader gets it (64 bytes);
//   - iommu_group -> ../../../kernel/iommu_groups/<n> and /sys/kernel/iommu_groups/<n>/type
//     (Documentation/ABI/testing/sysfs-kernel-iommu_groups);
//   - /sys/bus/pci/devices/<address> -> ../../../devices/.../<address>;
//   - an RDMA device: <function>/infiniband/<name>/ with ports/1, the `device` link back and
//     /sys/class/infiniband/<name> -> ../../devices/.../infiniband/<name>.
type PCIFunction struct {
	Address string
	Vendor  uint16
	DevID   uint16
	Class   uint32 // 24-bit: 0x030200 3D controller, 0x020700 InfiniBand, 0x060400 PCI bridge
	// Link speeds in GT/s and widths; zero leaves the attribute out.
	Speed, MaxSpeed float64
	Width, MaxWidth int
	// ACSControl is the ACS control register; nil means no ACS capability.
	ACSControl *uint16
	// ConfigHeaderOnly writes only the 64 bytes an unprivileged reader gets.
	ConfigHeaderOnly bool
	// IOMMUGroup is the function's group number, -1 for none.
	IOMMUGroup int
	// RDMA names an RDMA device on this function (mlx5_0), with one InfiniBand port.
	RDMA string
	// LinkLayer of the RDMA port: InfiniBand when empty, or Ethernet (a RoCE port, whose GID
	// table names Netdev).
	LinkLayer string
	// Netdev is the function's network device (<function>/net/<name>, /sys/class/net/<name>):
	// the IPoIB netdev of an InfiniBand port or the Ethernet netdev of a RoCE port.
	Netdev   string
	Children []PCIFunction
}

// PCINode is a whole fixture node.
type PCINode struct {
	// RootBuses maps a host bridge (pci0000:17) to its NUMA node and the root ports below it.
	RootBuses []PCIRootBus
	// IOMMUGroupType is the default domain type of each group ("identity", "DMA", "DMA-FQ").
	IOMMUGroupType map[int]string
	// IOMMUs are the entries of /sys/class/iommu (dmar0, ivhd0); none means no IOMMU.
	IOMMUs []string
	// Modules are loaded kernel modules (/sys/module/<name>/initstate = live).
	Modules []string
	// NVIDIAVersion is /sys/module/nvidia/version; empty for no NVIDIA driver.
	NVIDIAVersion string
	// NVIDIAProcVersion is the first line of /proc/driver/nvidia/version ("NVRM version: NVIDIA
	// UNIX Open Kernel Module for x86_64  550.54.15  Release Build ..."); empty for none.
	NVIDIAProcVersion string
	// KernelRelease is /proc/sys/kernel/osrelease.
	KernelRelease string
}

// PCIRootBus is one host bridge.
type PCIRootBus struct {
	Name      string // pci0000:17
	NUMANode  int
	RootPorts []PCIFunction
}

// U16 returns a pointer to v, for ACSControl.
func U16(v uint16) *uint16 { return &v }

// WritePCINode writes the node under root (root/sys/..., root/proc/...).
func WritePCINode(tb testing.TB, root string, node PCINode) {
	tb.Helper()
	var t Tree
	t.PCINode(node)
	if err := t.Write(root); err != nil {
		tb.Fatal(err)
	}
}

// PCINode adds the node (sys/..., proc/...).
func (t *Tree) PCINode(node PCINode) {
	for _, rb := range node.RootBuses {
		for _, f := range rb.RootPorts {
			t.PCIFunction(path.Join("devices", rb.Name), f, rb.NUMANode)
		}
	}
	for g, typ := range node.IOMMUGroupType {
		t.Attr(path.Join("sys", "kernel", "iommu_groups", strconv.Itoa(g), "type"), typ)
	}
	for _, name := range node.IOMMUs {
		t.Attr(path.Join("sys", "class", "iommu", name, "uevent"), "")
	}
	for _, m := range node.Modules {
		t.Attr(path.Join("sys", "module", m, "initstate"), "live")
	}
	if node.KernelRelease != "" {
		t.Attr(path.Join("proc", "sys", "kernel", "osrelease"), node.KernelRelease)
	}
	if node.NVIDIAProcVersion != "" {
		t.Attr(path.Join("proc", "driver", "nvidia", "version"), node.NVIDIAProcVersion)
	}
	if node.NVIDIAVersion != "" {
		t.Attr(path.Join("sys", "module", "nvidia", "version"), node.NVIDIAVersion)
		t.Attr(path.Join("sys", "module", "nvidia", "initstate"), "live")
	}
}

// up returns the "../" prefix that climbs from the directory rel (relative to /sys) back to /sys.
func up(rel string) string {
	return strings.Repeat("../", strings.Count(rel, "/")+1)
}

// PCIFunction adds the function f, its links and the functions below it; parentRel is the
// directory it sits in below /sys (devices/pci0000:17/0000:17:00.0), numa its NUMA node.
func (t *Tree) PCIFunction(parentRel string, f PCIFunction, numa int) {
	rel := path.Join(parentRel, f.Address)
	dir := path.Join("sys", rel)
	t.Attr(path.Join(dir, "vendor"), fmt.Sprintf("0x%04x", f.Vendor))
	t.Attr(path.Join(dir, "device"), fmt.Sprintf("0x%04x", f.DevID))
	t.Attr(path.Join(dir, "class"), fmt.Sprintf("0x%06x", f.Class))
	t.Attr(path.Join(dir, "numa_node"), strconv.Itoa(numa))
	speed := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " GT/s PCIe" }
	if f.Speed > 0 {
		t.Attr(path.Join(dir, "current_link_speed"), speed(f.Speed))
	}
	if f.MaxSpeed > 0 {
		t.Attr(path.Join(dir, "max_link_speed"), speed(f.MaxSpeed))
	}
	if f.Width > 0 {
		t.Attr(path.Join(dir, "current_link_width"), strconv.Itoa(f.Width))
	}
	if f.MaxWidth > 0 {
		t.Attr(path.Join(dir, "max_link_width"), strconv.Itoa(f.MaxWidth))
	}
	t.Bytes(path.Join(dir, "config"), configSpace(f))
	if f.IOMMUGroup >= 0 {
		t.Link(path.Join(dir, "iommu_group"), up(rel)+"kernel/iommu_groups/"+strconv.Itoa(f.IOMMUGroup))
		t.Link(path.Join("sys", "kernel", "iommu_groups", strconv.Itoa(f.IOMMUGroup), "devices", f.Address), up(path.Join("kernel", "iommu_groups", "0", "devices"))+rel)
	}
	t.Link(path.Join("sys", "bus", "pci", "devices", f.Address), "../../../"+rel)
	if f.RDMA != "" {
		ib := path.Join(dir, "infiniband", f.RDMA)
		t.Link(path.Join(ib, "device"), "../../../"+f.Address)
		t.Attr(path.Join(ib, "fw_ver"), "28.39.1002")
		t.Attr(path.Join(ib, "hca_type"), "MT4129")
		port := path.Join(ib, "ports", "1")
		ll := f.LinkLayer
		if ll == "" {
			ll = "InfiniBand"
		}
		t.Attr(path.Join(port, "link_layer"), ll)
		if ll == "Ethernet" && f.Netdev != "" {
			t.Attr(path.Join(port, "gid_attrs", "ndevs", "0"), f.Netdev)
		}
		t.Attr(path.Join(port, "state"), "4: ACTIVE")
		t.Attr(path.Join(port, "phys_state"), "5: LinkUp")
		t.Attr(path.Join(port, "rate"), "400 Gb/sec (4X NDR)")
		for _, c := range []string{"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets", "unicast_rcv_packets"} {
			t.Attr(path.Join(port, "counters", c), "0")
		}
		t.Link(path.Join("sys", "class", "infiniband", f.RDMA), "../../"+path.Join(rel, "infiniband", f.RDMA))
	}
	if f.Netdev != "" {
		nd := path.Join(dir, "net", f.Netdev)
		t.Attr(path.Join(nd, "dev_port"), "0")
		t.Attr(path.Join(nd, "statistics", "tx_bytes"), "0")
		t.Attr(path.Join(nd, "statistics", "rx_bytes"), "0")
		t.Link(path.Join("sys", "class", "net", f.Netdev), "../../"+path.Join(rel, "net", f.Netdev))
	}
	for _, c := range f.Children {
		t.PCIFunction(rel, c, numa)
	}
}

// configSpace returns the function's configuration space: the header's vendor, device and class,
// and, in the extended space, an ACS capability at 0x100 when ACSControl is set (a PCIe extended
// capability header: ID 0x000d in bits 0-15, version 1 in bits 16-19, next offset 0).
func configSpace(f PCIFunction) []byte {
	size := 4096
	if f.ConfigHeaderOnly {
		size = 64
	}
	b := make([]byte, size)
	binary.LittleEndian.PutUint16(b[0:], f.Vendor)
	binary.LittleEndian.PutUint16(b[2:], f.DevID)
	b[0x09], b[0x0a], b[0x0b] = byte(f.Class), byte(f.Class>>8), byte(f.Class>>16)
	if f.ACSControl != nil && size == 4096 {
		binary.LittleEndian.PutUint32(b[0x100:], 0x000d|1<<16)
		binary.LittleEndian.PutUint16(b[0x104:], 0x005f) // capabilities: SV TB RR CR UF EC (no DT)
		binary.LittleEndian.PutUint16(b[0x106:], *f.ACSControl)
	}
	return b
}
