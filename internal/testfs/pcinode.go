package testfs

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	sys := filepath.Join(root, "sys")
	w := &nodeWriter{tb: tb, sys: sys}
	for _, rb := range node.RootBuses {
		for _, f := range rb.RootPorts {
			w.function(filepath.Join("devices", rb.Name), f, rb.NUMANode)
		}
	}
	for g, typ := range node.IOMMUGroupType {
		w.file(filepath.Join(sys, "kernel", "iommu_groups", strconv.Itoa(g), "type"), typ)
	}
	for _, name := range node.IOMMUs {
		w.file(filepath.Join(sys, "class", "iommu", name, "uevent"), "")
	}
	for _, m := range node.Modules {
		w.file(filepath.Join(sys, "module", m, "initstate"), "live")
	}
	if node.KernelRelease != "" {
		w.file(filepath.Join(root, "proc", "sys", "kernel", "osrelease"), node.KernelRelease)
	}
	if node.NVIDIAProcVersion != "" {
		w.file(filepath.Join(root, "proc", "driver", "nvidia", "version"), node.NVIDIAProcVersion)
	}
	if node.NVIDIAVersion != "" {
		w.file(filepath.Join(sys, "module", "nvidia", "version"), node.NVIDIAVersion)
		w.file(filepath.Join(sys, "module", "nvidia", "initstate"), "live")
	}
}

type nodeWriter struct {
	tb  testing.TB
	sys string
}

func (w *nodeWriter) file(p, content string) {
	w.tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		w.tb.Fatal(err)
	}
}

func (w *nodeWriter) raw(p string, b []byte) {
	w.tb.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		w.tb.Fatal(err)
	}
}

func (w *nodeWriter) link(p, target string) {
	w.tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.tb.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		w.tb.Fatal(err)
	}
}

// up returns the "../" prefix that climbs from the directory rel (relative to /sys) back to /sys.
func up(rel string) string {
	n := 0
	for _, c := range filepath.ToSlash(rel) {
		if c == '/' {
			n++
		}
	}
	s := ""
	for i := 0; i <= n; i++ {
		s += "../"
	}
	return s
}

func (w *nodeWriter) function(parentRel string, f PCIFunction, numa int) {
	rel := filepath.Join(parentRel, f.Address)
	dir := filepath.Join(w.sys, rel)
	w.file(filepath.Join(dir, "vendor"), fmt.Sprintf("0x%04x", f.Vendor))
	w.file(filepath.Join(dir, "device"), fmt.Sprintf("0x%04x", f.DevID))
	w.file(filepath.Join(dir, "class"), fmt.Sprintf("0x%06x", f.Class))
	w.file(filepath.Join(dir, "numa_node"), strconv.Itoa(numa))
	speed := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " GT/s PCIe" }
	if f.Speed > 0 {
		w.file(filepath.Join(dir, "current_link_speed"), speed(f.Speed))
	}
	if f.MaxSpeed > 0 {
		w.file(filepath.Join(dir, "max_link_speed"), speed(f.MaxSpeed))
	}
	if f.Width > 0 {
		w.file(filepath.Join(dir, "current_link_width"), strconv.Itoa(f.Width))
	}
	if f.MaxWidth > 0 {
		w.file(filepath.Join(dir, "max_link_width"), strconv.Itoa(f.MaxWidth))
	}
	w.raw(filepath.Join(dir, "config"), configSpace(f))
	if f.IOMMUGroup >= 0 {
		w.link(filepath.Join(dir, "iommu_group"), up(rel)+"kernel/iommu_groups/"+strconv.Itoa(f.IOMMUGroup))
		w.link(filepath.Join(w.sys, "kernel", "iommu_groups", strconv.Itoa(f.IOMMUGroup), "devices", f.Address), up(filepath.Join("kernel", "iommu_groups", "0", "devices"))+rel)
	}
	w.link(filepath.Join(w.sys, "bus", "pci", "devices", f.Address), "../../../"+rel)
	if f.RDMA != "" {
		ib := filepath.Join(dir, "infiniband", f.RDMA)
		w.link(filepath.Join(ib, "device"), "../../../"+f.Address)
		w.file(filepath.Join(ib, "fw_ver"), "28.39.1002")
		w.file(filepath.Join(ib, "hca_type"), "MT4129")
		port := filepath.Join(ib, "ports", "1")
		ll := f.LinkLayer
		if ll == "" {
			ll = "InfiniBand"
		}
		w.file(filepath.Join(port, "link_layer"), ll)
		if ll == "Ethernet" && f.Netdev != "" {
			w.file(filepath.Join(port, "gid_attrs", "ndevs", "0"), f.Netdev)
		}
		w.file(filepath.Join(port, "state"), "4: ACTIVE")
		w.file(filepath.Join(port, "phys_state"), "5: LinkUp")
		w.file(filepath.Join(port, "rate"), "400 Gb/sec (4X NDR)")
		for _, c := range []string{"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets", "unicast_rcv_packets"} {
			w.file(filepath.Join(port, "counters", c), "0")
		}
		w.link(filepath.Join(w.sys, "class", "infiniband", f.RDMA), "../../"+filepath.Join(rel, "infiniband", f.RDMA))
	}
	if f.Netdev != "" {
		nd := filepath.Join(dir, "net", f.Netdev)
		w.file(filepath.Join(nd, "dev_port"), "0")
		w.file(filepath.Join(nd, "statistics", "tx_bytes"), "0")
		w.file(filepath.Join(nd, "statistics", "rx_bytes"), "0")
		w.link(filepath.Join(w.sys, "class", "net", f.Netdev), "../../"+filepath.Join(rel, "net", f.Netdev))
	}
	for _, c := range f.Children {
		w.function(rel, c, numa)
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
