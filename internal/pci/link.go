package pci

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// Link is a PCIe link's trained and maximum speed and width, from the function's
// current_link_speed, max_link_speed, current_link_width and max_link_width attributes
// (drivers/pci/pci-sysfs.c; Documentation/ABI/testing/sysfs-bus-pci). Speeds are in GT/s per lane.
// A zero field is unknown (a bridge without a link, a kernel that prints "Unknown").
type Link struct {
	SpeedGTs    float64
	MaxSpeedGTs float64
	Width       int64
	MaxWidth    int64
}

// Known reports whether the kernel told both the trained and the maximum width.
func (l Link) Known() bool { return l.Width > 0 && l.MaxWidth > 0 }

// BelowWidth reports a link trained to fewer lanes than it is capable of: a card in the wrong
// slot, a bad riser or a lane failure. Width does not change at run time.
func (l Link) BelowWidth() bool { return l.Known() && l.Width < l.MaxWidth }

// BelowSpeed reports a link running slower than its maximum. GPUs lower their link speed when
// idle to save power (nvidia-smi reports "PCIe Generation Current" dropping to 1), so for them
// this is only a fault under load.
func (l Link) BelowSpeed() bool {
	return l.SpeedGTs > 0 && l.MaxSpeedGTs > 0 && l.SpeedGTs < l.MaxSpeedGTs
}

// Capable returns the link as far as it can train: the maximum speed and width capped at the
// upstream port's maximum. A link trains to what both ends support, which is what the kernel's
// pcie_bandwidth_available() (drivers/pci/pci.c) takes the minimum of while it walks the upstream
// bridges: a Gen5 NIC in a Gen4 slot runs at 16 GT/s and is not degraded. An unknown upstream
// maximum caps nothing.
func (l Link) Capable(upstream Link) Link {
	if upstream.MaxSpeedGTs > 0 && upstream.MaxSpeedGTs < l.MaxSpeedGTs {
		l.MaxSpeedGTs = upstream.MaxSpeedGTs
	}
	if upstream.MaxWidth > 0 && upstream.MaxWidth < l.MaxWidth {
		l.MaxWidth = upstream.MaxWidth
	}
	return l
}

// Upstream returns the address of the bridge whose downstream port the device's link connects
// to (the previous function in the chain), or "" for an integrated endpoint on the root bus.
func (d *Device) Upstream() string {
	if len(d.Chain) < 2 {
		return ""
	}
	return d.Chain[len(d.Chain)-2]
}

// ReadLink reads the link attributes of the function in dir. Missing or unparsable attributes
// leave their field zero: only PCIe functions have them.
func ReadLink(r *sysfs.Reader, dir string) Link {
	speed := func(name string) float64 {
		s, err := r.ReadString(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		return parseSpeed(s)
	}
	width := func(name string) int64 {
		s, err := r.ReadString(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0
		}
		return v
	}
	return Link{
		SpeedGTs:    speed("current_link_speed"),
		MaxSpeedGTs: speed("max_link_speed"),
		Width:       width("current_link_width"),
		MaxWidth:    width("max_link_width"),
	}
}

// parseSpeed reads "16.0 GT/s PCIe" (pci_speed_string, v5.x and later), "8 GT/s" or "2.5 GT/s"
// (older kernels); "Unknown" yields 0.
func parseSpeed(s string) float64 {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "GT/s" {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(v > 0 && v < 1000) {
		return 0
	}
	return v
}

// GenerationGTs is the transfer rate of PCIe generation gen (1 to 6) in GT/s per lane, as NVML
// and DCGM number a link's generation (nvmlDeviceGetMaxPcieLinkGeneration); 0 for another.
func GenerationGTs(gen int) float64 {
	switch gen {
	case 1:
		return 2.5
	case 2:
		return 5
	case 3:
		return 8
	case 4:
		return 16
	case 5:
		return 32
	case 6:
		return 64
	}
	return 0
}

// LaneBandwidth is what one lane at gts GT/s carries in one direction after its encoding, in
// bytes/s, as the kernel's PCIE_SPEED2MBS_ENC (drivers/pci/pci.h, used by
// pcie_bandwidth_available) counts it: 8b/10b at 2.5 and 5 GT/s, 128b/130b at 8, 16 and 32 GT/s,
// and 1/1 at 64 GT/s (FLIT mode, whose overhead the kernel leaves out). 0 for a rate the kernel
// does not know.
func LaneBandwidth(gts float64) float64 {
	var mbps float64 // Mb/s
	switch gts {
	case 2.5, 5:
		mbps = gts * 1000 * 8 / 10
	case 8, 16, 32:
		mbps = gts * 1000 * 128 / 130
	case 64:
		mbps = gts * 1000
	}
	return mbps * 1e6 / 8
}
