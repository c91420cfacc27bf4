// Package pci resolves where a device sits in the PCI tree from sysfs alone: its PCI address, the
// root port it hangs off, the bridges in between and its NUMA node. Class devices (an RDMA device,
// a netdev, a GPU's DRM node) reach their PCI function through the `device` link; the path of that
// function under /sys/devices spells out the whole chain, e.g.
// /sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0 is function 0000:3b:00.0 behind root port
// 0000:3a:00.0 on root bus 0000:3a (Documentation/ABI/testing/sysfs-bus-pci; PCI core
// pci_setup_device names the directories with pci_name()).
package pci // import "github.com/otelcol-iclens/otelcol-iclens/internal/pci"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// addressRE matches a PCI function name as the kernel prints it: %04x:%02x:%02x.%d.
var addressRE = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$`)

// rootBusRE matches the host bridge directory under /sys/devices: pci%04x:%02x.
var rootBusRE = regexp.MustCompile(`^pci[0-9a-f]{4,8}:[0-9a-f]{2}$`)

// IsAddress reports whether s is a PCI function address such as 0000:3b:00.0.
func IsAddress(s string) bool { return addressRE.MatchString(s) }

// IsRootBus reports whether s is a host bridge directory name such as pci0000:3a.
func IsRootBus(s string) bool { return rootBusRE.MatchString(s) }

// Device is a PCI function as sysfs shows it.
type Device struct {
	// Address is the function's own address (0000:3b:00.0).
	Address string
	// Path is the function's directory with every link resolved.
	Path string
	// RootBus is the host bridge (pci0000:3a), the "root complex" of nvidia-smi topo's PHB.
	RootBus string
	// Chain lists the functions from the root port down to this device, both included.
	Chain []string
	// NUMANode is the kernel's numa_node for the function, -1 where unknown.
	NUMANode int64
	// Vendor and Class are the function's vendor ID and 24-bit class code (base, sub, prog-if),
	// filled by Scan.
	Vendor uint64
	Class  uint64
}

// RootPort returns the address of the root port the device hangs off (the device itself for an
// integrated endpoint on the root bus).
func (d *Device) RootPort() string {
	if len(d.Chain) == 0 {
		return ""
	}
	return d.Chain[0]
}

// ErrNotPCI reports a device with no PCI parent, such as a Soft-RoCE (rxe) device, which the
// kernel registers without a DMA device.
var ErrNotPCI = fmt.Errorf("not a PCI device")

// FromLink resolves the `device` link of a class device (for example
// /sys/class/infiniband/mlx5_0/device) to the PCI function behind it and reads its NUMA node.
// If only numa_node cannot be read, the device comes back with NUMANode -1 together with the error;
// a function without numa_node (CONFIG_NUMA off) is NUMANode -1 and no error.
func FromLink(r *sysfs.Reader, link string) (*Device, error) {
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", link, err)
	}
	dev, err := parsePath(real)
	if err != nil {
		return nil, fmt.Errorf("%s -> %s: %w", link, real, err)
	}
	dev.NUMANode = -1
	n, err := r.ReadInt(filepath.Join(real, "numa_node"))
	if errors.Is(err, os.ErrNotExist) {
		// drivers/pci/pci-sysfs.c creates numa_node only #ifdef CONFIG_NUMA: a kernel without NUMA
		// support has none, which is the unknown node, not an error.
		return dev, nil
	}
	if err != nil {
		return dev, err
	}
	dev.NUMANode = n
	return dev, nil
}

// parsePath splits a resolved /sys/devices/pciDDDD:BB/... path into the chain of PCI functions.
func parsePath(real string) (*Device, error) {
	parts := strings.Split(filepath.ToSlash(real), "/")
	root := -1
	for i, p := range parts {
		if rootBusRE.MatchString(p) {
			root = i
		}
	}
	if root < 0 {
		return nil, ErrNotPCI
	}
	dev := &Device{Path: real, RootBus: parts[root]}
	for _, p := range parts[root+1:] {
		if !IsAddress(p) {
			// Anything after the last function (a class directory) ends the chain.
			break
		}
		dev.Chain = append(dev.Chain, p)
	}
	if len(dev.Chain) == 0 {
		return nil, ErrNotPCI
	}
	dev.Address = dev.Chain[len(dev.Chain)-1]
	return dev, nil
}
