package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import "time"

// observeSpan is how far back the observed ratios average: long enough to cover a training
// step (compute and communication), short enough to follow a change of case.
const observeSpan = time.Minute

// observedRatios are quotients the view computes itself from the bandwidths it draws, averaged
// over the last minute: the paper's reading of its figures, shown whether or not a diagnosis
// connector is in the pipeline. They are named apart from the connector's evidence ratios
// (internal/verdict), which are irates at one evaluation over the port's own line rate: the
// page shows both, and the same name with two formulas would say two things.
type observedRatios struct {
	// RDMABytesPerSecond is RNIC TX+RX, NetworkBytesPerSecond adds the netdevs' IP traffic.
	RDMABytesPerSecond    float64 `json:"rdma_bytes_per_second"`
	NetworkBytesPerSecond float64 `json:"network_bytes_per_second"`
	// RDMAShareOfNetwork: 1 when the bytes go over RDMA, near 0 when NCCL fell back to TCP.
	RDMAShareOfNetwork float64 `json:"mean_rdma_bytes_per_network_byte"`
	// CPUPCIePerNetworkByte: root complex bytes (RX+TX) per network byte; near 0 with
	// GPUDirect RDMA, about 2 when every byte bounces through host memory.
	CPUPCIePerNetworkByte float64 `json:"mean_cpu_pcie_bytes_per_network_byte"`
	// HostMemoryPerNetworkByte: host memory bytes (RD+WR) per network byte.
	HostMemoryPerNetworkByte float64 `json:"mean_host_memory_bytes_per_network_byte"`
	// RDMATransmitLineShare: RNIC TX of every port over the sum of their trained link rates
	// (the connector's rdma_transmit_line_share is per port).
	RDMATransmitLineShare float64 `json:"mean_rdma_transmit_bytes_per_line_byte"`
}

// mean is the time-weighted average of a series' rates after t (0 when it has none): each rate
// weighs as much as the interval it covers (the gap to the point before it; the first point weighs
// as much as the second's gap), so that the mean is the bytes moved over the time they took. A
// plain average of the rates would not be: a scrape that a loaded machine delays by half an
// interval draws one rate low over a long gap and the next high over a short one, and the high
// one would count as much as the low.
func mean(r *ring, after int64) float64 {
	var sum, weights float64
	var n int
	var prev int64
	var first float64
	r.since(after, func(t int64, v float64) {
		switch n {
		case 0:
			first = v
		case 1:
			// The first point's interval is taken to be the second's.
			sum += first * float64(t-prev)
			weights += float64(t - prev)
			fallthrough
		default:
			sum += v * float64(t-prev)
			weights += float64(t - prev)
		}
		prev = t
		n++
	})
	switch {
	case n == 0:
		return 0
	case weights <= 0:
		return first
	}
	return sum / weights
}

func observe(n *node, after int64, ports []portRow, f *ownerFilter) observedRatios {
	var rdma, rdmaTx, netdev, pcie, mem float64
	for _, sr := range n.series {
		if sr.kind != "" || !f.keepsDevice(sr.device) {
			continue // a port's bursts (bursts.go) beside its average, or another owner's bytes
		}
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
	o := observedRatios{RDMABytesPerSecond: rdma, NetworkBytesPerSecond: rdma + netdev}
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
