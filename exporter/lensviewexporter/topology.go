package lensviewexporter

import (
	"maps"
	"sort"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
)

// topology is the latest GPUDirect readiness the rnic receiver reported (its rnic.topology.*
// metrics, receiver/rnicreceiver/metadata.yaml): per GPU-NIC pair the PCIe distance, whether
// GPUDirect RDMA can work and whether ACS redirects peer traffic; per device the IOMMU mode and,
// for NICs, whether its PCIe link trained below its capability; per mechanism whether peer memory
// exists. The rnic receiver names a GPU by its PCI address (gpu.pci.bus_id); the gpu receiver's
// gpu.info gives the device name it uses for that address (its DCGM id or NVML index), and its
// gpu.pcie.link.width and max_width the GPU's own link.
type topology struct {
	pairs    map[string]*gpuPair
	peerMem  map[string]fact
	iommu    map[string]factString
	degraded map[string]fact
	// gpuNames: GPU PCI address -> the gpu receiver's device; gpuWidth: device -> lanes.
	gpuNames map[string]factString
	gpuWidth map[string]*gpuLink
}

// gpuLink is a GPU's trained and maximum lane count, as the gpu receiver reports them.
type gpuLink struct {
	width, maxWidth fact
}

// fact is a value and when it was last reported (unix ms).
type fact struct {
	v int64
	t int64
}

type factString struct {
	v string
	t int64
}

type gpuPair struct {
	gpu, nic string // the GPU's PCI address, the NIC's RDMA device
	path     string // PIX, PXB, PHB, NODE, SYS
	distance fact
	ready    fact
	reason   string // why not ready, or why unknown (the rnic receiver's gpudirect.reason)
	acs      fact
	nearest  bool
	t        int64
}

func (tp *topology) init() {
	tp.pairs = map[string]*gpuPair{}
	tp.peerMem = map[string]fact{}
	tp.iommu = map[string]factString{}
	tp.degraded = map[string]fact{}
	tp.gpuNames = map[string]factString{}
	tp.gpuWidth = map[string]*gpuLink{}
}

func (tp *topology) pair(gpu, nic string, t int64) *gpuPair {
	k := gpu + "|" + nic
	p := tp.pairs[k]
	if p == nil {
		p = &gpuPair{gpu: gpu, nic: nic, distance: fact{v: -1}, ready: fact{v: -1}, acs: fact{v: -1}}
		tp.pairs[k] = p
	}
	p.t = max(p.t, t)
	return p
}

func (tp *topology) forget(oldest int64) {
	maps.DeleteFunc(tp.pairs, func(_ string, p *gpuPair) bool { return p.t < oldest })
	for _, m := range []map[string]fact{tp.peerMem, tp.degraded} {
		maps.DeleteFunc(m, func(_ string, f fact) bool { return f.t < oldest })
	}
	for _, m := range []map[string]factString{tp.iommu, tp.gpuNames} {
		maps.DeleteFunc(m, func(_ string, f factString) bool { return f.t < oldest })
	}
	maps.DeleteFunc(tp.gpuWidth, func(_ string, l *gpuLink) bool { return max(l.width.t, l.maxWidth.t) < oldest })
}

// gpuLinkFor returns the link record of a GPU device, created on first use.
func (tp *topology) gpuLinkFor(dev string) *gpuLink {
	l := tp.gpuWidth[dev]
	if l == nil {
		l = &gpuLink{width: fact{v: -1}, maxWidth: fact{v: -1}}
		tp.gpuWidth[dev] = l
	}
	return l
}

// Topology is the readiness table of the API.
type Topology struct {
	PeerMemory map[string]int64 `json:"peer_memory"`
	Pairs      []TopologyPair   `json:"pairs"`
}

// TopologyPair is one GPU-NIC pair. -1 means the receiver did not report (or could not read) it.
// GPU is the GPU's PCI address; GPUDevice the gpu receiver's name for it, "" where none reported.
type TopologyPair struct {
	GPU             string `json:"gpu"`
	GPUDevice       string `json:"gpu_device"`
	NIC             string `json:"nic"`
	Path            string `json:"path"`
	Distance        int64  `json:"distance"`
	Nearest         bool   `json:"nearest"`
	Ready           int64  `json:"ready"`
	ReadyReason     string `json:"ready_reason"`
	ACSRedirect     int64  `json:"acs_redirect"`
	GPUIOMMU        string `json:"gpu_iommu"`
	NICIOMMU        string `json:"nic_iommu"`
	GPULinkDegraded int64  `json:"gpu_link_degraded"`
	NICLinkDegraded int64  `json:"nic_link_degraded"`
}

func (tp *topology) export() Topology {
	out := Topology{PeerMemory: map[string]int64{}, Pairs: []TopologyPair{}}
	for k, f := range tp.peerMem {
		out.PeerMemory[k] = f.v
	}
	degraded := func(dev string) int64 {
		if f, ok := tp.degraded[dev]; ok {
			return f.v
		}
		return -1
	}
	// A GPU's link is degraded when it runs fewer lanes than it supports (a lower PCIe generation
	// is how an idle GPU saves power, not a fault).
	gpuDegraded := func(dev string) int64 {
		l := tp.gpuWidth[dev]
		if l == nil || l.width.v <= 0 || l.maxWidth.v <= 0 {
			return -1
		}
		if l.width.v < l.maxWidth.v {
			return 1
		}
		return 0
	}
	for _, p := range tp.pairs {
		dev := tp.gpuNames[p.gpu].v
		out.Pairs = append(out.Pairs, TopologyPair{
			GPU: p.gpu, GPUDevice: dev, NIC: p.nic, Path: p.path, Distance: p.distance.v, Nearest: p.nearest,
			Ready: p.ready.v, ReadyReason: p.reason, ACSRedirect: p.acs.v,
			GPUIOMMU: tp.iommu[p.gpu].v, NICIOMMU: tp.iommu[p.nic].v,
			GPULinkDegraded: gpuDegraded(dev), NICLinkDegraded: degraded(p.nic),
		})
	}
	sort.Slice(out.Pairs, func(i, j int) bool {
		if c := natorder.Compare(out.Pairs[i].GPU, out.Pairs[j].GPU); c != 0 {
			return c < 0
		}
		return natorder.Compare(out.Pairs[i].NIC, out.Pairs[j].NIC) < 0
	})
	return out
}
