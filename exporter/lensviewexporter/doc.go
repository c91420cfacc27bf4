// Package lensviewexporter is the paper's own dashboard as an exporter of the collector: it keeps
// a bounded ring per series of the last minutes of every node's interconnect.io rates (named as
// InterconnectLens names them: RNIC(mlx5_1)[TX], CPU PCIe[RX], CPU MEM[RD], GPU0 PCIe[TX]), the
// RDMA ports' link rates and congestion counters, the GPUDirect readiness of the rnic receiver's
// rnic.topology.* metrics and the diagnosis connector's verdicts, and serves them on a local HTTP
// endpoint as a page (uPlot, embedded) and a read-only JSON API.
//
//go:generate mdatagen metadata.yaml
package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"
