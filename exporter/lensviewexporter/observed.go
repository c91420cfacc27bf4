package lensviewexporter

import "time"

// observeSpan is how far back the observed ratios average: long enough to cover a training
// step (compute and communication), short enough to follow a change of case.
const observeSpan = time.Minute

// Observed are ratios the view computes itself from the series it keeps, over the last minute:
// the evidence behind the paper's reading of its figures, shown whether or not a diagnosis
// connector is in the pipeline. They are plain quotients of the drawn bandwidths; the verdict
// (thresholds) is the diagnosis connector's, not the view's.
type Observed struct {
	// RDMABytesPerSecond is RNIC TX+RX, NetworkBytesPerSecond adds the netdevs' IP traffic.
	RDMABytesPerSecond    float64 `json:"rdma_bytes_per_second"`
	NetworkBytesPerSecond float64 `json:"network_bytes_per_second"`
	// RDMAShareOfNetwork: 1 when the bytes go over RDMA, near 0 when NCCL fell back to TCP.
	RDMAShareOfNetwork float64 `json:"rdma_share_of_network"`
	// CPUPCIePerNetworkByte: root complex bytes (RX+TX) per network byte; near 0 with
	// GPUDirect RDMA, about 2 when every byte bounces through host memory.
	CPUPCIePerNetworkByte float64 `json:"cpu_pcie_per_network_byte"`
	// HostMemoryPerNetworkByte: host memory bytes (RD+WR) per network byte.
	HostMemoryPerNetworkByte float64 `json:"host_memory_per_network_byte"`
	// RDMATransmitLineShare: RNIC TX over the ports' trained link rate.
	RDMATransmitLineShare float64 `json:"rdma_transmit_line_share"`
}

// mean is the average of a series' points after t (0 when it has none).
func mean(r *ring, after int64) float64 {
	var sum float64
	var n int
	r.since(after, func(_ int64, v float64) {
		sum += v
		n++
	})
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func observe(n *node, after int64, ports []Port) Observed {
	var rdma, rdmaTx, netdev, pcie, mem float64
	for _, sr := range n.series {
		m := mean(sr.ring, after)
		switch sr.component {
		case "rnic":
			rdma += m
			if sr.direction == "transmit" {
				rdmaTx += m
			}
		case "netdev":
			netdev += m
		case "cpu_pcie":
			pcie += m
		case "cpu_memory":
			mem += m
		}
	}
	o := Observed{RDMABytesPerSecond: rdma, NetworkBytesPerSecond: rdma + netdev}
	if network := rdma + netdev; network > 0 {
		o.RDMAShareOfNetwork = rdma / network
		o.CPUPCIePerNetworkByte = pcie / network
		o.HostMemoryPerNetworkByte = mem / network
	}
	var line float64
	for _, p := range ports {
		line += p.RateBytes
	}
	if line > 0 {
		o.RDMATransmitLineShare = rdmaTx / line
	}
	return o
}
