package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"strings"
)

// Axis of a series on the page: bytes/s on the left, GPU memory activity (a ratio) on its own
// right axis as the paper draws it, per-second event counts on the RDMA ports' chart.
const (
	axisBytes  = "bytes"
	axisRatio  = "ratio"
	axisEvents = "events"
)

// directionTag is the paper's bracketed direction: TX/RX for links, RD/WR for memory.
func directionTag(direction string) string {
	switch direction {
	case "transmit":
		return "TX"
	case "receive":
		return "RX"
	case "read":
		return "RD"
	case "write":
		return "WR"
	case "both":
		return "TX+RX" // a link counted as one figure for its two directions (an AMD GPU's PCIe)
	}
	return strings.ToUpper(direction)
}

// portName drops the port number of port 1, the only port of almost every RDMA NIC function, so
// that mlx5_1/1 reads RNIC(mlx5_1) as in the paper; other ports keep it (mlx5_0/2).
func portName(device string) string {
	if dev, port, ok := strings.Cut(device, "/"); ok && port == "1" {
		return dev
	}
	return device
}

// gpuName turns the vocabulary's gpu0 into the paper's GPU0.
func gpuName(device string) string {
	if rest, ok := strings.CutPrefix(device, "gpu"); ok {
		return "GPU" + rest
	}
	return device
}

// bandwidthSeries names the series an interconnect.io point feeds, as the InterconnectLens
// dashboard names them (RNIC(mlx5_1)[TX], CPU PCIe[RX], CPU MEM[RD], GPU0 PCIe[TX]). The root
// complex and the memory controllers are one series per direction, their devices summed, as the
// paper draws them; NICs and GPUs keep a series per device. The id is the series' stable key.
func bandwidthSeries(component, direction, device string) (id, label string, summed bool) {
	tag := "[" + directionTag(direction) + "]"
	switch component {
	case "rnic":
		return "rnic/" + direction + "/" + device, "RNIC(" + portName(device) + ")" + tag, false
	case "netdev":
		return "netdev/" + direction + "/" + device, "NET(" + device + ")" + tag, false
	case "cpu_pcie":
		return "cpu_pcie/" + direction, "CPU PCIe" + tag, true
	case "cpu_memory":
		return "cpu_memory/" + direction, "CPU MEM" + tag, true
	case "gpu_pcie":
		return "gpu_pcie/" + direction + "/" + device, gpuName(device) + " PCIe" + tag, false
	case "gpu_nvlink":
		return "gpu_nvlink/" + direction + "/" + device, gpuName(device) + " NVLink" + tag, false
	case "gpu_c2c":
		return "gpu_c2c/" + direction + "/" + device, gpuName(device) + " C2C" + tag, false
	case "gpu_xgmi":
		return "gpu_xgmi/" + direction + "/" + device, gpuName(device) + " XGMI" + tag, false
	case "gpu_memory":
		return "gpu_memory/" + direction + "/" + device, gpuName(device) + " MEM" + tag, false
	}
	return component + "/" + direction + "/" + device, component + "(" + device + ")" + tag, false
}

// componentOrder sorts the legend as the paper reads the path: NIC, root complex, host memory,
// GPU, then the rest.
func componentOrder(component string) int {
	switch component {
	case "rnic":
		return 0
	case "netdev":
		return 1
	case "cpu_pcie":
		return 2
	case "cpu_memory":
		return 3
	case "gpu_pcie":
		return 4
	case "gpu_nvlink":
		return 5
	case "gpu_c2c":
		return 6
	case "gpu_xgmi":
		return 7
	case "gpu_memory":
		return 8
	case "gpu_dram_active":
		return 9
	}
	return 10
}
