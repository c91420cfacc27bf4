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
	IOMMU   pci.IOMMUMode
	GPU     bool
}

// Address is the device's PCI address in the kernel's form.
func (d *Device) Address() string { return d.PCI.Address }

// LinkDegraded reports a NIC link trained below what it can reach with its upstream port: fewer
// lanes or a lower speed. Unknown where the kernel does not report the width.
func (d *Device) LinkDegraded() State {
	if !d.Link.Known() {
		return Unknown
	}
	return stateOf(d.Capable.BelowWidth() || d.Capable.BelowSpeed())
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
		t.NICs = append(t.NICs, nd)
	}

	t.PeerMem = peerMemLoaded(sys)
	t.DMABuf = dmabufUsable(root, sys)
	havePeer := t.PeerMem == Yes || t.DMABuf == Yes

	for _, g := range t.GPUs {
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
