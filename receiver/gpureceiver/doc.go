// Package gpureceiver reads how many bytes move through each NVIDIA GPU's PCIe link, NVLink and
// chip-to-chip link, with memory and engine activity and PCIe link health, from DCGM (go-dcgm) or,
// where DCGM is absent, NVML (go-nvml), and emits them as interconnect.io with
// component=gpu_pcie|gpu_nvlink|gpu_c2c and the receiver's own gpu.* metrics.
//
//go:generate mdatagen metadata.yaml
package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"
