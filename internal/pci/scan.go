package pci

import (
	"errors"
	"os"
	"path/filepath"
	"sort"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// PCI IDs (include/linux/pci_ids.h): vendors and the class codes GPUs use.
const (
	VendorNVIDIA = 0x10de
	VendorAMD    = 0x1002

	classDisplayVGA   = 0x0300 // PCI_CLASS_DISPLAY_VGA
	classDisplay3D    = 0x0302 // PCI_CLASS_DISPLAY_3D: data-center NVIDIA GPUs
	classDisplayOther = 0x0380 // PCI_CLASS_DISPLAY_OTHER: AMD Instinct
	classAccelerator  = 0x1200 // PCI_CLASS_ACCELERATOR_PROCESSING
)

// IsGPU reports whether the function is an NVIDIA or AMD GPU, from vendor and class alone (no GPU
// library needed).
func (d *Device) IsGPU() bool {
	base := d.Class >> 8 // base class and subclass
	switch d.Vendor {
	case VendorNVIDIA:
		return base == classDisplayVGA || base == classDisplay3D
	case VendorAMD:
		return base == classDisplay3D || base == classDisplayOther || base == classAccelerator
	}
	return false
}

// Scan resolves every PCI function listed under sys/bus/pci/devices (links into /sys/devices)
// with its place in the tree, NUMA node, vendor and class, sorted by address. A function that
// cannot be resolved is skipped and its error returned with the others.
func Scan(r *sysfs.Reader, sys string) ([]*Device, error) {
	dir := filepath.Join(sys, "bus", "pci", "devices")
	entries, err := sysfs.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var (
		out  []*Device
		errs []error
	)
	for _, e := range entries {
		if !IsAddress(e.Name()) {
			continue
		}
		d, err := FromLink(r, filepath.Join(dir, e.Name()))
		if d == nil {
			errs = append(errs, err)
			continue
		}
		d.Vendor, _ = r.ReadUint(filepath.Join(d.Path, "vendor"))
		d.Class, _ = r.ReadUint(filepath.Join(d.Path, "class"))
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, errors.Join(errs...)
}
