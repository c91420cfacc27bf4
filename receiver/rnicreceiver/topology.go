package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	nodetopo "github.com/otelcol-iclens/otelcol-iclens/internal/topology"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// The topology part of the receiver reports, before any traffic flows, whether GPUDirect RDMA can
// work between each GPU and each RDMA NIC of the node (internal/topology resolves it from sysfs
// when the receiver discovers devices and every topology.refresh_interval, never per scrape).
// GPUs are named by their PCI address (gpu.pci.bus_id), which joins the gpu receiver's gpu.info;
// their PCIe links are the gpu receiver's to report.

// topology is the resolved topology, recorded as is on every scrape.
type topology struct{ *nodetopo.Topology }

var pathAttr = map[pci.Path]metadata.AttributePciePath{
	pci.PathPIX:     metadata.AttributePciePathPIX,
	pci.PathPXB:     metadata.AttributePciePathPXB,
	pci.PathPHB:     metadata.AttributePciePathPHB,
	pci.PathNODE:    metadata.AttributePciePathNODE,
	pci.PathSYS:     metadata.AttributePciePathSYS,
	pci.PathUnknown: metadata.AttributePciePathUnknown,
}

var iommuAttr = map[pci.IOMMUMode]metadata.AttributeIommuMode{
	pci.IOMMUOff:         metadata.AttributeIommuModeOff,
	pci.IOMMUPassthrough: metadata.AttributeIommuModePassthrough,
	pci.IOMMUTranslated:  metadata.AttributeIommuModeTranslated,
}

var reasonAttr = map[nodetopo.Reason]metadata.AttributeGpudirectReason{
	nodetopo.ReasonReady:           metadata.AttributeGpudirectReasonReady,
	nodetopo.ReasonPCIePath:        metadata.AttributeGpudirectReasonPciePath,
	nodetopo.ReasonNoPeerMemory:    metadata.AttributeGpudirectReasonNoPeerMemory,
	nodetopo.ReasonACSRedirect:     metadata.AttributeGpudirectReasonAcsRedirect,
	nodetopo.ReasonIOMMUTranslated: metadata.AttributeGpudirectReasonIommuTranslated,
	nodetopo.ReasonACSUnknown:      metadata.AttributeGpudirectReasonAcsUnknown,
	nodetopo.ReasonPathUnknown:     metadata.AttributeGpudirectReasonPathUnknown,
}

// resolveTopology relates every GPU to the PCI functions of the ports: one NIC per function (the
// plane devices of a multi-plane HCA share the main device's function).
func resolveTopology(r *sysfs.Reader, root, sys string, ports []*port, allPairs bool) (*topology, error) {
	nics := make([]nodetopo.NIC, 0, len(ports))
	for _, p := range ports {
		if !p.plane {
			nics = append(nics, nodetopo.NIC{Name: p.device, Address: p.pciBusID})
		}
	}
	t, err := nodetopo.Resolve(r, root, sys, nics, allPairs)
	return &topology{t}, err
}

// record emits the topology; the values were resolved earlier, nothing is read here.
func (t *topology) record(mb *metadata.MetricsBuilder, now pcommon.Timestamp) {
	if len(t.GPUs) > 0 {
		mb.RecordRnicTopologyPeerMemoryDataPoint(now, int64(t.PeerMem), metadata.AttributeMechanismNvidiaPeermem)
		mb.RecordRnicTopologyPeerMemoryDataPoint(now, int64(t.DMABuf), metadata.AttributeMechanismDmaBuf)
	}
	for _, g := range t.GPUs {
		mb.RecordRnicTopologyIommuDataPoint(now, 1, g.Address(), g.Address(), iommuAttr[g.IOMMU])
	}
	for _, n := range t.NICs {
		addr := n.Address()
		mb.RecordRnicTopologyIommuDataPoint(now, 1, n.Name, addr, iommuAttr[n.IOMMU])
		if n.Link.SpeedGTs > 0 {
			mb.RecordRnicTopologyLinkSpeedDataPoint(now, n.Link.SpeedGTs, n.Name, addr, metadata.AttributePcieLinkBoundCurrent)
		}
		if n.Link.MaxSpeedGTs > 0 {
			mb.RecordRnicTopologyLinkSpeedDataPoint(now, n.Link.MaxSpeedGTs, n.Name, addr, metadata.AttributePcieLinkBoundMax)
		}
		if d := n.LinkDegraded(); d != nodetopo.Unknown {
			mb.RecordRnicTopologyLinkWidthDataPoint(now, n.Link.Width, n.Name, addr, metadata.AttributePcieLinkBoundCurrent)
			mb.RecordRnicTopologyLinkWidthDataPoint(now, n.Link.MaxWidth, n.Name, addr, metadata.AttributePcieLinkBoundMax)
			mb.RecordRnicTopologyLinkDegradedDataPoint(now, int64(d), n.Name, addr)
		}
	}
	for _, p := range t.Pairs {
		if !p.Shown {
			continue
		}
		gpu := p.GPU.Address()
		mb.RecordRnicTopologyGpuDistanceDataPoint(now, int64(p.Path), gpu, p.NIC.Name, p.NIC.Address(), pathAttr[p.Path])
		mb.RecordRnicTopologyAcsRedirectDataPoint(now, int64(p.ACS), gpu, p.NIC.Name)
		mb.RecordRnicTopologyGpudirectReadyDataPoint(now, int64(p.Ready), gpu, p.NIC.Name, reasonAttr[p.Reason])
	}
	for _, p := range t.Nearest {
		mb.RecordRnicTopologyNearestRnicDataPoint(now, int64(p.Path), p.GPU.Address(), p.NIC.Name, p.NIC.Address(), pathAttr[p.Path])
	}
}

// topologyEnabled reports whether any topology metric is enabled.
func topologyEnabled(m metadata.MetricsConfig) bool {
	return m.RnicTopologyGpuDistance.Enabled || m.RnicTopologyNearestRnic.Enabled || m.RnicTopologyAcsRedirect.Enabled ||
		m.RnicTopologyPeerMemory.Enabled || m.RnicTopologyIommu.Enabled || m.RnicTopologyLinkSpeed.Enabled ||
		m.RnicTopologyLinkWidth.Enabled || m.RnicTopologyLinkDegraded.Enabled || m.RnicTopologyGpudirectReady.Enabled
}
