// Package topology resolves, from sysfs alone, whether GPUDirect RDMA can work between each GPU
// and each RDMA NIC of a node: their PCIe distance, ACS redirect on the switch ports between them,
// the IOMMU mode of each device, a peer-memory mechanism, and NIC links trained below their
// capability. It is node-level PCIe policy; a receiver maps the result onto its own metrics.
//
// GPUs are identified by their PCI address (pci_name(): 0000:3b:00.0), the one name the kernel,
// DCGM and NVML (after pci.NormaliseAddress) agree on. No ordinal is invented: an ordinal over
// display-class functions in PCI order is not the gpu receiver's DCGM id or NVML index.
package topology // import "github.com/otelcol-iclens/otelcol-iclens/internal/topology"
