// Package ncclreceiver reads NCCL's own outputs on a GPU node: the NCCL Inspector profiler plugin's
// JSON Lines dumps (plugins/profiler/inspector in NVIDIA/nccl), tailed with contrib's stanza
// fileconsumer, and the NCCL RAS service's job status (src/ras in NVIDIA/nccl), and emits per
// communicator, collective type and message-size bucket the bus bandwidth and duration of the
// sampled operations, joined to each GPU by PCI address, and the ranks by state.
//
//go:generate mdatagen metadata.yaml
package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"
