package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// The topology part of the receiver shows, before any traffic flows, whether GPUDirect RDMA can
// work between each GPU and each RDMA NIC of the node: their PCIe distance, ACS redirect on the
// switch ports between them, the IOMMU mode, a peer-memory mechanism, and links trained below
// their capability. Everything comes from sysfs (and two /proc files) under root_path, resolved
// when the receiver discovers devices and every topology.refresh_interval, never per scrape.

// topoDevice is a GPU or an RDMA NIC with its PCI facts.
type topoDevice struct {
	name string // gpu0, mlx5_0
	dev  *pci.Device
	link pci.Link
	// capable is link with its maxima capped at the upstream port's (pci.Link.Capable).
	capable pci.Link
	iommu   metadata.AttributeIommuMode
	gpu     bool
}

// topoPair is one GPU-NIC pair.
type topoPair struct {
	gpu, nic *topoDevice
	path     pci.Path
	acs      pci.ACS
	ready    int64 // 1 ready, 0 not ready, -1 unknown
	reason   metadata.AttributeGpudirectReason
	// shown: the pair's series are emitted (PIX/PXB, the GPU's nearest, or all_pairs).
	shown bool
}

// readiness is the GPUDirect RDMA verdict of a pair: a condition known to fail makes it 0; else
// a condition that cannot be known makes it -1, never 1 (an unprivileged reader cannot see the
// ACS redirect that the kernel sets on switch downstream ports whenever an IOMMU driver is active,
// iommu=pt included: pci_enable_acs -> pci_std_enable_acs in drivers/pci/pci.c).
func readiness(p topoPair, havePeer bool) (int64, metadata.AttributeGpudirectReason) {
	switch {
	case p.path.Farther(pci.PathPXB) && p.path != pci.PathUnknown:
		return 0, metadata.AttributeGpudirectReasonPciePath
	case !havePeer:
		return 0, metadata.AttributeGpudirectReasonNoPeerMemory
	case p.acs == pci.ACSRedirect:
		return 0, metadata.AttributeGpudirectReasonAcsRedirect
	case p.gpu.iommu == metadata.AttributeIommuModeTranslated || p.nic.iommu == metadata.AttributeIommuModeTranslated:
		return 0, metadata.AttributeGpudirectReasonIommuTranslated
	case p.path == pci.PathUnknown:
		return -1, metadata.AttributeGpudirectReasonPathUnknown
	case p.acs == pci.ACSUnknown:
		return -1, metadata.AttributeGpudirectReasonAcsUnknown
	}
	return 1, metadata.AttributeGpudirectReasonReady
}

// topology is the resolved picture, recorded as is on every scrape.
type topology struct {
	devices  []*topoDevice
	pairs    []topoPair
	nearest  []topoPair
	peermem  int64 // 1 loaded, 0 not
	dmabuf   int64 // 1 usable, 0 not, -1 unknown
	gpuCount int
	nicCount int
}

var pathAttr = map[pci.Path]metadata.AttributePciePath{
	pci.PathPIX:  metadata.AttributePciePathPIX,
	pci.PathPXB:  metadata.AttributePciePathPXB,
	pci.PathPHB:  metadata.AttributePciePathPHB,
	pci.PathNODE: metadata.AttributePciePathNODE,
	pci.PathSYS:  metadata.AttributePciePathSYS,

	pci.PathUnknown: metadata.AttributePciePathUnknown,
}

var iommuAttr = map[pci.IOMMUMode]metadata.AttributeIommuMode{
	pci.IOMMUOff:         metadata.AttributeIommuModeOff,
	pci.IOMMUPassthrough: metadata.AttributeIommuModePassthrough,
	pci.IOMMUTranslated:  metadata.AttributeIommuModeTranslated,
}

// resolveTopology scans the PCI tree and relates every GPU to the RDMA devices of ports. A PCI
// function that cannot be resolved is left out and reported in the error.
func resolveTopology(r *sysfs.Reader, root, sys string, ports []*port, allPairs bool) (*topology, error) {
	t := &topology{}
	all, err := pci.Scan(r, sys)
	byAddr := make(map[string]*pci.Device, len(all))
	for _, d := range all {
		byAddr[d.Address] = d
	}
	newDevice := func(name string, d *pci.Device, gpu bool) *topoDevice {
		td := &topoDevice{name: name, dev: d, link: pci.ReadLink(r, d.Path), iommu: iommuAttr[pci.ReadIOMMU(d.Path)], gpu: gpu}
		td.capable = td.link
		if up := byAddr[d.Upstream()]; up != nil {
			td.capable = td.link.Capable(pci.ReadLink(r, up.Path))
		}
		return td
	}

	var gpus, nics []*topoDevice
	for _, d := range all {
		if d.IsGPU() {
			gpus = append(gpus, newDevice("gpu"+strconv.Itoa(len(gpus)), d, true))
		}
	}
	seen := map[string]bool{}
	for _, p := range ports {
		d := byAddr[p.pciBusID]
		if d == nil || seen[p.pciBusID] || p.plane {
			// rxe has no PCI function; one entry per PCI function, not per port or per RDMA
			// device: the plane devices of a multi-plane HCA share the function.
			continue
		}
		seen[p.pciBusID] = true
		nics = append(nics, newDevice(p.device, d, false))
	}
	t.devices = append(gpus, nics...)
	t.gpuCount, t.nicCount = len(gpus), len(nics)

	t.peermem = peerMemLoaded(sys)
	t.dmabuf = dmabufUsable(root, sys)
	havePeer := t.peermem == 1 || t.dmabuf == 1

	for _, g := range gpus {
		first := len(t.pairs)
		nearest := -1
		for _, n := range nics {
			p := topoPair{gpu: g, nic: n, path: pci.PathBetween(g.dev, n.dev)}
			p.acs = acsBetween(byAddr, g.dev, n.dev)
			p.ready, p.reason = readiness(p, havePeer)
			p.shown = allPairs || (p.path != pci.PathUnknown && !p.path.Farther(pci.PathPXB))
			// The first of the closest NICs, in RDMA device order (natural: mlx5_2 before mlx5_10).
			if nearest < 0 || t.pairs[nearest].path.Farther(p.path) {
				nearest = len(t.pairs)
			}
			t.pairs = append(t.pairs, p)
		}
		if nearest >= first {
			t.pairs[nearest].shown = true
			t.nearest = append(t.nearest, t.pairs[nearest])
		}
	}
	return t, err
}

// acsBetween combines the ACS state of the switch ports between two devices: any redirect wins,
// then any unknown.
func acsBetween(byAddr map[string]*pci.Device, a, b *pci.Device) pci.ACS {
	state := pci.ACSNoRedirect
	for _, addr := range pci.BridgesBelowCommon(a, b) {
		bridge := byAddr[addr]
		if bridge == nil {
			state = pci.ACSUnknown
			continue
		}
		switch pci.ReadACS(bridge.Path) {
		case pci.ACSRedirect:
			return pci.ACSRedirect
		case pci.ACSUnknown:
			state = pci.ACSUnknown
		}
	}
	return state
}

// peerMemLoaded reports whether a peer-memory client for GPU memory is loaded: nvidia-peermem
// (shipped with the NVIDIA driver since R470) or the older nv_peer_mem from nv_peer_memory.
// Loaded modules appear under /sys/module.
func peerMemLoaded(sys string) int64 {
	for _, m := range []string{"nvidia_peermem", "nv_peer_mem"} {
		if _, err := os.Stat(filepath.Join(sys, "module", m)); err == nil {
			return 1
		}
	}
	return 0
}

// dmabufUsable reports whether the DMA-BUF path can be used: RDMA drivers import dma-buf memory
// regions since Linux 5.12 (ib_umem_dmabuf), and the NVIDIA driver exports GPU memory as dma-buf
// with its open kernel module (NVIDIA GPU Operator documentation, "GPUDirect RDMA and GPUDirect
// Storage"). 0 without the NVIDIA driver, -1 when /proc does not tell.
func dmabufUsable(root, sys string) int64 {
	if _, err := os.Stat(filepath.Join(sys, "module", "nvidia")); err != nil {
		return 0
	}
	rel, err := os.ReadFile(filepath.Join(root, "proc", "sys", "kernel", "osrelease"))
	if err != nil {
		return -1
	}
	if !kernelAtLeast(strings.TrimSpace(string(rel)), 5, 12) {
		return 0
	}
	ver, err := os.ReadFile(filepath.Join(root, "proc", "driver", "nvidia", "version"))
	if err != nil {
		return -1
	}
	if !strings.Contains(string(ver), "Open Kernel Module") {
		return 0
	}
	return 1
}

// kernelAtLeast compares an osrelease string ("6.8.0-45-generic") with major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(release, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// record emits the topology; the values were resolved earlier, nothing is read here.
func (t *topology) record(mb *metadata.MetricsBuilder, now pcommon.Timestamp) {
	if t.gpuCount > 0 {
		mb.RecordRnicTopologyPeerMemoryDataPoint(now, t.peermem, metadata.AttributeMechanismNvidiaPeermem)
		mb.RecordRnicTopologyPeerMemoryDataPoint(now, t.dmabuf, metadata.AttributeMechanismDmaBuf)
	}
	for _, d := range t.devices {
		addr := d.dev.Address
		mb.RecordRnicTopologyIommuDataPoint(now, 1, d.name, addr, d.iommu)
		if d.link.SpeedGTs > 0 {
			mb.RecordRnicTopologyLinkSpeedDataPoint(now, d.link.SpeedGTs, d.name, addr, metadata.AttributePcieLinkBoundCurrent)
		}
		if d.link.MaxSpeedGTs > 0 {
			mb.RecordRnicTopologyLinkSpeedDataPoint(now, d.link.MaxSpeedGTs, d.name, addr, metadata.AttributePcieLinkBoundMax)
		}
		if d.link.Known() {
			mb.RecordRnicTopologyLinkWidthDataPoint(now, d.link.Width, d.name, addr, metadata.AttributePcieLinkBoundCurrent)
			mb.RecordRnicTopologyLinkWidthDataPoint(now, d.link.MaxWidth, d.name, addr, metadata.AttributePcieLinkBoundMax)
			// GPUs drop their link speed when idle; only lanes count for them. Both relative to
			// what the link can reach with its upstream port (capable).
			degraded := d.capable.BelowWidth() || (!d.gpu && d.capable.BelowSpeed())
			mb.RecordRnicTopologyLinkDegradedDataPoint(now, boolInt(degraded), d.name, addr)
		}
	}
	for _, p := range t.pairs {
		if !p.shown {
			continue
		}
		mb.RecordRnicTopologyGpuDistanceDataPoint(now, int64(p.path), p.gpu.name, p.gpu.dev.Address, p.nic.name, p.nic.dev.Address, pathAttr[p.path])
		mb.RecordRnicTopologyAcsRedirectDataPoint(now, int64(p.acs), p.gpu.name, p.nic.name)
		mb.RecordRnicTopologyGpudirectReadyDataPoint(now, p.ready, p.gpu.name, p.nic.name, p.reason)
	}
	for _, p := range t.nearest {
		mb.RecordRnicTopologyNearestRnicDataPoint(now, int64(p.path), p.gpu.name, p.gpu.dev.Address, p.nic.name, p.nic.dev.Address, pathAttr[p.path])
	}
}

// topologyEnabled reports whether any topology metric is enabled.
func topologyEnabled(m metadata.MetricsConfig) bool {
	return m.RnicTopologyGpuDistance.Enabled || m.RnicTopologyNearestRnic.Enabled || m.RnicTopologyAcsRedirect.Enabled ||
		m.RnicTopologyPeerMemory.Enabled || m.RnicTopologyIommu.Enabled || m.RnicTopologyLinkSpeed.Enabled ||
		m.RnicTopologyLinkWidth.Enabled || m.RnicTopologyLinkDegraded.Enabled || m.RnicTopologyGpudirectReady.Enabled
}
