package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// topology is the readiness table of the API: the GPUDirect topology of the node's state
// (internal/nodestate, from the rnic receiver's rnic.topology.* metrics and the gpu receiver's
// gpu.info and PCIe link): per GPU-NIC pair the PCIe distance, whether GPUDirect RDMA can work and
// whether ACS redirects peer traffic; per device the IOMMU mode and whether its PCIe link trained
// below its capability; per mechanism whether peer memory exists.
type topology struct {
	PeerMemory map[string]int64 `json:"peer_memory"`
	Pairs      []topologyPair   `json:"pairs"`
}

// topologyPair is one GPU-NIC pair. -1 means the receiver did not report (or could not read) it.
// GPU is the GPU's PCI address; GPUDevice the gpu receiver's name for it, "" where none reported.
type topologyPair struct {
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

// tristate is 1 or 0 for a known fact, -1 for an unreported one.
func tristate(v, known bool) int64 {
	switch {
	case !known:
		return -1
	case v:
		return 1
	}
	return 0
}

// exportTopology is the table of the node, or with f of the owner's GPUs only.
func exportTopology(st *nodestate.State, f *ownerFilter) topology {
	out := topology{PeerMemory: map[string]int64{}, Pairs: []topologyPair{}}
	for k, v := range st.PeerMemory {
		out.PeerMemory[k] = int64(v)
	}
	for _, p := range st.Pairs {
		if f != nil && st.OwnerOf(nodestate.GPUPCIe, p.GPU).OwnerID != f.id {
			continue
		}
		row := topologyPair{
			GPU: p.GPU, NIC: p.NIC, Path: p.Path, Distance: int64(p.Distance), Nearest: p.Nearest,
			Ready: int64(p.Ready), ReadyReason: p.Reason, ACSRedirect: int64(p.ACS),
			GPUIOMMU: st.IOMMU[p.GPU], NICIOMMU: st.IOMMU[p.NIC], GPULinkDegraded: -1,
		}
		if p.GPUName != p.GPU {
			row.GPUDevice = p.GPUName
		}
		if g, ok := st.GPU(p.GPUName); ok {
			row.GPULinkDegraded = tristate(g.LinkDegraded())
		}
		d, ok := st.NICLinkDegraded[p.NIC]
		row.NICLinkDegraded = tristate(d, ok)
		out.Pairs = append(out.Pairs, row)
	}
	return out
}
