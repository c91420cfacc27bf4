package dashboard

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// perNode is the rate of interconnect.io per node for a component selector, over all nodes: the
// cluster overview ignores $node so that one broken node stands out among healthy ones.
func perNode(components string) string {
	return `sum by (host_name) (rate(interconnect_io_bytes_total{component=~"` + components + `"}[$__rate_interval]))`
}

// cluster compares nodes. The two ratios tell the simulated cases (internal/scenario) apart without reading any
// chart: RDMA share of the network bytes (about 1 healthy, about 0 after a fallback to TCP) and
// CPU PCIe bytes per network byte (near 0 with GPUDirect RDMA; about 2 when every network byte
// is staged in host memory and so crosses the root complex twice: TCP fallback or GPUDirect RDMA
// bouncing). The root complex is the cleaner witness than host memory, which carries the data
// loader's and the CPU's own traffic whatever the network does.
func (g *gen) cluster() {
	g.row("Cluster overview: all nodes")

	// clamp_min keeps an idle node at 0 instead of NaN (0/0).
	network := `clamp_min(` + perNode("rnic|netdev") + `, 1)`
	g.add(g.table("Per node: where the bytes go",
		"One row per node, now. RDMA share = RDMA / (RDMA + IP) bytes: near 0 with traffic on the IP netdev means NCCL fell back to TCP. "+
			"CPU PCIe per network byte near 0 is GPUDirect RDMA working; 1 or more means the network traffic is staged in host memory (TCP fallback, or GPUDirect RDMA bouncing). "+
			"Busiest port's load is RDMA transmit over link rate: low while busy with CNPs or pause frames means congestion; a low slowest port rate, a link trained down.",
		24, 9,
		target{expr: perNode("rnic")},
		target{expr: perNode("netdev")},
		target{expr: perNode("cpu_memory")},
		target{expr: perNode("cpu_pcie")},
		target{expr: perNode("gpu_pcie")},
		target{expr: perNode("rnic") + ` / ` + network},
		target{expr: perNode("cpu_pcie") + ` / ` + network},
		target{expr: `max by (host_name) (sum by (host_name, device) (rate(interconnect_io_bytes_total{component="rnic", direction="transmit"}[$__rate_interval])) / on (host_name, device) max by (host_name, device) (rnic_port_rate_bytes_per_second))`},
		target{expr: `min by (host_name) (rnic_port_rate_bytes_per_second)`},
		target{expr: `sum by (host_name) (rate(rnic_roce_cnp_total[$__rate_interval]))`},
		target{expr: `sum by (host_name) (rate(rnic_pfc_pause_frames_total[$__rate_interval]))`},
	).
		WithTransformation(merge()).
		WithTransformation(organize(map[string]string{
			"Value #A": "RDMA", "Value #B": "IP (netdev)", "Value #C": "host memory",
			"Value #D": "CPU PCIe", "Value #E": "GPU PCIe",
			"Value #F": "RDMA share", "Value #G": "CPU PCIe per network byte",
			"Value #H": "busiest port's load", "Value #I": "slowest port rate",
			"Value #J": "CNPs/s", "Value #K": "PFC pauses/s",
		})).
		Unit("Bps").
		OverrideByName("RDMA share", []dashboard.DynamicConfigValue{unitOf("percentunit")}).
		OverrideByName("CPU PCIe per network byte", []dashboard.DynamicConfigValue{unitOf("none"), {Id: "decimals", Value: 2}}).
		OverrideByName("busiest port's load", []dashboard.DynamicConfigValue{unitOf("percentunit")}).
		OverrideByName("CNPs/s", []dashboard.DynamicConfigValue{unitOf("pps")}).
		OverrideByName("PFC pauses/s", []dashboard.DynamicConfigValue{unitOf("short")}))

	g.add(g.timeSeries("RDMA vs IP vs host memory vs CPU PCIe per node",
		"Over time, per node: RDMA bytes/s (solid), IP bytes/s on the RDMA ports' netdevs (dashed), host memory and CPU PCIe bytes/s (dotted). CPU PCIe and host memory rising with the network is the TCP-fallback or bounce signature.",
		"Bps", 16, 9,
		target{expr: perNode("rnic"), legend: "{{host_name}} RDMA"},
		target{expr: perNode("netdev"), legend: "{{host_name}} IP"},
		target{expr: perNode("cpu_memory"), legend: "{{host_name}} host memory"},
		target{expr: perNode("cpu_pcie"), legend: "{{host_name}} CPU PCIe"},
	).
		OverrideByRegexp(" IP$", []dashboard.DynamicConfigValue{{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}}}).
		OverrideByRegexp(" (host memory|CPU PCIe)$", []dashboard.DynamicConfigValue{{Id: "custom.lineStyle", Value: map[string]any{"fill": "dot", "dash": []int{0, 10}}}}))
	g.add(g.barGauge("Bandwidth per node and component, now",
		"Bytes/s of every component per node at the end of the range.",
		"Bps", 8, 9,
		target{
			expr:   `sum by (host_name, component) (rate(interconnect_io_bytes_total[$__rate_interval]))`,
			legend: "{{host_name}} {{component}}",
		}))
}
