package dashboard

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// series of the paper's view: the legend Grafana builds from "{{component}} {{direction}}", the
// name the InterconnectLens figures use, and a colour per component (lighter for the second
// direction), so that a healthy and a broken node are told apart at a glance.
var paperSeries = []struct{ legend, name, color string }{
	{"rnic transmit", "RNIC TX", "dark-green"},
	{"rnic receive", "RNIC RX", "light-green"},
	{"netdev transmit", "netdev TX (IP)", "dark-orange"},
	{"netdev receive", "netdev RX (IP)", "light-orange"},
	{"cpu_pcie receive", "CPU PCIe RX", "dark-purple"},
	{"cpu_pcie transmit", "CPU PCIe TX", "light-purple"},
	{"cpu_memory read", "CPU MEM RD", "dark-red"},
	{"cpu_memory write", "CPU MEM WR", "light-red"},
	{"gpu_pcie transmit", "GPU PCIe TX", "dark-blue"},
	{"gpu_pcie receive", "GPU PCIe RX", "light-blue"},
	{"gpu_pcie both", "GPU PCIe TX+RX", "blue"}, // AMD Instinct: one figure for both directions
	{"gpu_nvlink transmit", "NVLink TX", "dark-yellow"},
	{"gpu_nvlink receive", "NVLink RX", "light-yellow"},
	{"gpu_c2c transmit", "C2C TX", "#0a7d7d"},
	{"gpu_c2c receive", "C2C RX", "#7fd1d1"},
	{"gpu_xgmi transmit", "XGMI TX", "#b5651d"},
	{"gpu_xgmi receive", "XGMI RX", "#e0a878"},
}

// paperView is InterconnectLens' figure: every component and direction of one node on one time
// axis, in bytes/s. Healthy GPUDirect RDMA: RNIC and GPU PCIe busy, CPU PCIe and host memory
// idle. TCP fallback: RNIC idle, netdev, CPU PCIe and host memory busy. GPUDirect bouncing
// through host memory: RNIC and host memory both busy. Congestion: RNIC below line rate.
func (g *gen) paperView() {
	g.row("Per node: every component on one time axis")
	const title = "Interconnect bandwidth on $node"
	p := g.timeSeries(title,
		"Bytes/s through every interconnect component of the node, by direction (interconnect.io). "+
			"GPU memory has no byte counter (DCGM and NVML only give a busy ratio): its DRAM activity is drawn dashed on the right axis.",
		"Bps", 24, 12,
		target{
			expr:   `sum by (component, direction) (rate(interconnect_io_bytes_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{component}} {{direction}}",
		},
		target{
			expr:   `avg by (device) (gpu_dram_active_ratio{host_name=~"$node"})`,
			legend: "GPU MEM active {{device}}",
		},
	).
		Repeat("node").
		RepeatDirection(dashboard.PanelRepeatDirectionH).
		MaxPerRow(2)
	for _, s := range paperSeries {
		p.OverrideByName(s.legend, []dashboard.DynamicConfigValue{displayName(s.name), fixedColor(s.color)})
	}
	p.OverrideByRegexp("^GPU MEM active", []dashboard.DynamicConfigValue{
		unitOf("percentunit"),
		{Id: "max", Value: 1},
		{Id: "custom.axisPlacement", Value: "right"},
		{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
		{Id: "custom.fillOpacity", Value: 0},
		fixedColor("text"),
	})
	g.add(p)
}
