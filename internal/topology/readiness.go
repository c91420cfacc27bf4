package topology

import "github.com/otelcol-iclens/otelcol-iclens/internal/pci"

// Reason says why a pair is, is not, or may not be ready for GPUDirect RDMA.
type Reason int

const (
	ReasonReady Reason = iota
	// Not ready:
	ReasonPCIePath        // PHB or farther: NCCL's default NCCL_NET_GDR_LEVEL does not use it
	ReasonNoPeerMemory    // neither nvidia-peermem nor DMA-BUF
	ReasonACSRedirect     // a switch port between them redirects peer traffic upstream
	ReasonIOMMUTranslated // either device's DMA is translated by the IOMMU
	// Unknown:
	ReasonACSUnknown  // the extended config space is unreadable without CAP_SYS_ADMIN
	ReasonPathUnknown // across host bridges with a NUMA node of -1
)

// readiness is the GPUDirect RDMA verdict of a pair: a condition known to fail makes it No; else
// a condition that cannot be known makes it Unknown, never Yes (an unprivileged reader cannot see
// the ACS redirect that the kernel sets on switch downstream ports whenever an IOMMU driver is
// active, iommu=pt included: pci_enable_acs -> pci_std_enable_acs in drivers/pci/pci.c).
func readiness(p Pair, havePeer bool) (State, Reason) {
	switch {
	case p.Path.Farther(pci.PathPXB) && p.Path != pci.PathUnknown:
		return No, ReasonPCIePath
	case !havePeer:
		return No, ReasonNoPeerMemory
	case p.ACS == pci.ACSRedirect:
		return No, ReasonACSRedirect
	case p.GPU.IOMMU == pci.IOMMUTranslated || p.NIC.IOMMU == pci.IOMMUTranslated:
		return No, ReasonIOMMUTranslated
	case p.Path == pci.PathUnknown:
		return Unknown, ReasonPathUnknown
	case p.ACS == pci.ACSUnknown:
		return Unknown, ReasonACSUnknown
	}
	return Yes, ReasonReady
}
