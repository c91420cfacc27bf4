package topology

import (
	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// State is a tri-state fact: Yes (1), No (0), or Unknown (-1), not knowable by this reader; the
// values are what the metrics report.
type State int8

const (
	Unknown State = iota - 1
	No
	Yes
)

func stateOf(b bool) State {
	if b {
		return Yes
	}
	return No
}

// Device is a GPU or an RDMA NIC with its PCI facts.
type Device struct {
	// Name is the NIC's RDMA device name (mlx5_0); empty for a GPU, which is known by Address.
	Name string
	PCI  *pci.Device
	// Link and Capable (Link with its maxima capped at the upstream port's, pci.Link.Capable) are
	// read for NICs only: a GPU's link is the gpu receiver's (DCGM and NVML report it, and the
	// idle GPU's lowered speed needs the GPU's own activity to judge).
	Link    pci.Link
	Capable pci.Link
	// Upstream are the links above the NIC's own, each capped as Capable is: the link of every
	// function in the chain up to the root port with its port above (a card-internal switch's
	// upstream port carries the slot link). pcie_bandwidth_available() (drivers/pci/pci.c) walks
	// the same chain.
	Upstream []pci.Link
	IOMMU    pci.IOMMUMode
	GPU      bool
}

// Address is the device's PCI address in the kernel's form.
func (d *Device) Address() string { return d.PCI.Address }

// LinkDegraded reports a NIC link trained below what it can reach with its upstream port: fewer
// lanes or a lower speed. Unknown where the kernel does not report the width.
func (d *Device) LinkDegraded() State {
	if !d.Link.Known() {
		return Unknown
	}
	below := d.Capable.BelowWidth() || d.Capable.BelowSpeed()
	for _, l := range d.Upstream {
		below = below || l.BelowWidth() || l.BelowSpeed()
	}
	return stateOf(below)
}

// Pair is one GPU-NIC pair.
type Pair struct {
	GPU, NIC *Device
	Path     pci.Path
	ACS      pci.ACS
	Ready    State
	Reason   Reason
	// Shown: the pair is worth reporting (PIX/PXB, the GPU's nearest, or every pair on request).
	Shown bool
}

// NIC is an RDMA NIC to relate to the GPUs: its RDMA device name and PCI address.
type NIC struct {
	Name    string
	Address string
}

// Topology is the resolved picture of a node.
type Topology struct {
	GPUs, NICs []*Device
	Pairs      []Pair
	// Nearest holds, per GPU, its pair with the closest NIC.
	Nearest []Pair
	// PeerMem: a peer-memory client module is loaded; DMABuf: the DMA-BUF path is usable.
	PeerMem, DMABuf State
}

// Resolve scans the PCI tree under sys and relates every GPU to the NICs. A NIC whose address is
// not in the tree (Soft-RoCE has no PCI function) is left out; so is a PCI function that cannot be
// resolved, which is reported in the error. Only the first NIC of each PCI function counts.
func Resolve(r *sysfs.Reader, root, sys string, nics []NIC, allPairs bool) (*Topology, error) {
	t := &Topology{}
	all, err := pci.Scan(r, sys)
	byAddr := make(map[string]*pci.Device, len(all))
	for _, d := range all {
		byAddr[d.Address] = d
		if d.IsGPU() {
			t.GPUs = append(t.GPUs, &Device{PCI: d, IOMMU: pci.ReadIOMMU(d.Path), GPU: true})
		}
	}
	seen := map[string]bool{}
	for _, n := range nics {
		d := byAddr[n.Address]
		if d == nil || seen[n.Address] {
			continue
		}
		seen[n.Address] = true
		nd := &Device{Name: n.Name, PCI: d, Link: pci.ReadLink(r, d.Path), IOMMU: pci.ReadIOMMU(d.Path)}
		nd.Capable = nd.Link
		if up := byAddr[d.Upstream()]; up != nil {
			nd.Capable = nd.Link.Capable(pci.ReadLink(r, up.Path))
		}
		nd.Upstream = upstreamLinks(r, byAddr, d)
		t.NICs = append(t.NICs, nd)
	}

	t.PeerMem = peerMemLoaded(sys)
	nvidiaDMABuf, amdDMABuf := dmabufUsable(root, sys), amdgpuDMABufUsable(root, sys)
	// The node's DMA-BUF state is the NVIDIA driver's where it is loaded, else amdgpu's.
	t.DMABuf = nvidiaDMABuf
	if nvidiaDMABuf == No {
		t.DMABuf = amdDMABuf
	}

	for _, g := range t.GPUs {
		// GPU memory is exported by the GPU's own driver: nvidia-peermem or the NVIDIA dma-buf
		// exporter for NVIDIA GPUs, amdgpu's dma-buf exporter for AMD Instinct.
		havePeer := t.PeerMem == Yes || nvidiaDMABuf == Yes
		if g.PCI.Vendor == pci.VendorAMD {
			havePeer = amdDMABuf == Yes
		}
		first := len(t.Pairs)
		nearest := -1
		for _, n := range t.NICs {
			p := Pair{GPU: g, NIC: n, Path: pci.PathBetween(g.PCI, n.PCI), ACS: acsBetween(byAddr, g.PCI, n.PCI)}
			p.Ready, p.Reason = readiness(p, havePeer)
			p.Shown = allPairs || (p.Path != pci.PathUnknown && !p.Path.Farther(pci.PathPXB))
			// The first of the closest NICs, in the order given (natural: mlx5_2 before mlx5_10).
			if nearest < 0 || t.Pairs[nearest].Path.Farther(p.Path) {
				nearest = len(t.Pairs)
			}
			t.Pairs = append(t.Pairs, p)
		}
		if nearest >= first {
			t.Pairs[nearest].Shown = true
			t.Nearest = append(t.Nearest, t.Pairs[nearest])
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

// upstreamLinks returns the links between the bridges above d, from the bridge d hangs off up to
// the root port, each function's link capped by its port above's maxima (pci.Link.Capable). A
// function's link attributes describe its own PCIe link: for a switch's upstream port, the link
// to the port above it; a downstream port's repeat the link below it (checked as d's own). Links
// the kernel does not report (a bridge without width) are left out.
func upstreamLinks(r *sysfs.Reader, byAddr map[string]*pci.Device, d *pci.Device) []pci.Link {
	var out []pci.Link
	for i := len(d.Chain) - 2; i >= 1; i-- {
		fn, up := byAddr[d.Chain[i]], byAddr[d.Chain[i-1]]
		if fn == nil || up == nil {
			continue
		}
		if l := pci.ReadLink(r, fn.Path).Capable(pci.ReadLink(r, up.Path)); l.Known() {
			out = append(out, l)
		}
	}
	return out
}
