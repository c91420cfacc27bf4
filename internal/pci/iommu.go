package pci

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// IOMMUMode is how the IOMMU treats a device's DMA.
type IOMMUMode string

const (
	// IOMMUOff: the device is in no IOMMU group (no IOMMU, or it is disabled).
	IOMMUOff IOMMUMode = "off"
	// IOMMUPassthrough: the group's default domain is "identity": DMA addresses are not translated.
	IOMMUPassthrough IOMMUMode = "passthrough"
	// IOMMUTranslated: "DMA", "DMA-FQ" (translated by the IOMMU), or "blocked" / "unmanaged" (owned
	// by VFIO or another user of an unmanaged domain). Peer-to-peer DMA between devices then goes
	// through the IOMMU (and the root complex) unless the devices use ATS.
	IOMMUTranslated IOMMUMode = "translated"
)

// ReadIOMMU reports the IOMMU mode of the function in dir from its iommu_group link and the
// group's `type` (Documentation/ABI/testing/sysfs-kernel-iommu_groups: DMA, DMA-FQ, identity,
// auto, blocked, unmanaged). A group whose type cannot be read counts as translated, the
// conservative answer for GPUDirect.
func ReadIOMMU(dir string) IOMMUMode {
	group := filepath.Join(dir, "iommu_group")
	if _, err := os.Lstat(group); err != nil {
		return IOMMUOff
	}
	b, err := sysfs.ReadFile(filepath.Join(group, "type"), 4096)
	if err != nil {
		return IOMMUTranslated
	}
	if strings.TrimSpace(string(b)) == "identity" {
		return IOMMUPassthrough
	}
	return IOMMUTranslated
}
