// Package cpuuncorereceiver reads host memory bandwidth and CPU-side PCIe bandwidth from the CPU's
// uncore PMUs (Intel IMC and IIO, AMD UMC and Data Fabric) through perf_event_open and emits
// interconnect.io with component=cpu_memory and component=cpu_pcie, and the receiver's own
// cpuuncore.* metrics.
//
//go:generate mdatagen metadata.yaml
package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"
