package dashboard

// Port states as the kernel numbers them (rnic.port.state, rnic.port.physical_state).
var (
	portStates = valueMap(
		state{1, "DOWN", "red"},
		state{2, "INIT", "orange"},
		state{3, "ARMED", "yellow"},
		state{4, "ACTIVE", "green"},
		state{5, "ACTIVE_DEFER", "yellow"},
	)
	physicalStates = valueMap(
		state{1, "Sleep", "red"},
		state{2, "Polling", "orange"},
		state{3, "Disabled", "red"},
		state{4, "Training", "orange"},
		state{5, "LinkUp", "green"},
		state{6, "LinkErrorRecovery", "orange"},
		state{7, "PhyTest", "purple"},
	)
)

// linkState shows whether each link is up and at the rate it should be: a link trained down to
// fewer lanes or a lower speed caps the bandwidth long before anything is congested.
func (g *gen) linkState() {
	g.row("Links: state, rate, width")
	const legend = "{{host_name}} {{device}}"

	g.add(g.stateTimeline("RDMA port state",
		"Logical state of each RDMA port (DOWN, INIT, ARMED, ACTIVE).",
		12, 7, portStates,
		target{expr: `max by (host_name, device) (rnic_port_state{host_name=~"$node"})`, legend: legend}))
	g.add(g.stateTimeline("RDMA port physical state",
		"Physical state of each RDMA port; LinkErrorRecovery or Polling on a port that should be up is a cabling or transceiver problem.",
		12, 7, physicalStates,
		target{expr: `max by (host_name, device) (rnic_port_physical_state{host_name=~"$node"})`, legend: legend}))

	g.add(g.timeSeries("RDMA port link rate",
		"The rate the port trained to (the kernel's rate file). A step down is a link that retrained to a lower speed or fewer lanes.",
		"Bps", 8, 8,
		target{expr: `max by (host_name, device) (rnic_port_rate_bytes_per_second{host_name=~"$node"})`, legend: legend}))
	g.add(g.timeSeries("RDMA transmit as a share of link rate",
		"RDMA bytes/s sent by each port over its link rate. Well below 100% while NCCL is busy and CNPs or pause frames rise: the fabric limits the port (the paper's 20 Gb/s switch port shows as about 20% of a 100 Gb/s port).",
		"percentunit", 8, 8,
		target{
			expr: `sum by (host_name, device) (rate(interconnect_io_bytes_total{host_name=~"$node", component="rnic", direction="transmit"}[$__rate_interval]))` +
				` / on (host_name, device) max by (host_name, device) (rnic_port_rate_bytes_per_second{host_name=~"$node"})`,
			legend: legend,
		}))
	g.add(g.timeSeries("RDMA port width",
		"Lanes the port trained to (the 4X of the rate file).",
		"short", 8, 8,
		target{expr: `max by (host_name, device) (rnic_port_width{host_name=~"$node"})`, legend: legend}))

	g.add(g.table("GPU PCIe link: current vs maximum",
		"Generation and lanes each GPU's PCIe link runs at, beside what it supports. A GPU may idle at a low generation; fewer lanes than the maximum is a downgraded link.",
		12, 7,
		target{expr: `max by (host_name, device) (gpu_pcie_link_generation{host_name=~"$node"})`},
		target{expr: `max by (host_name, device) (gpu_pcie_link_max_generation{host_name=~"$node"})`},
		target{expr: `max by (host_name, device) (gpu_pcie_link_width{host_name=~"$node"})`},
		target{expr: `max by (host_name, device) (gpu_pcie_link_max_width{host_name=~"$node"})`},
	).
		WithTransformation(merge()).
		WithTransformation(organize(map[string]string{
			"Value #A": "generation", "Value #B": "max generation",
			"Value #C": "lanes", "Value #D": "max lanes",
		})))
	g.add(g.table("Saturated counters",
		"Narrow InfiniBand counters stuck at all ones (they stop instead of wrapping). While a counter is saturated its series is not reported; clear it (perfquery -R) or rely on the 64-bit counters.",
		12, 7,
		target{
			expr:  `max by (host_name, device, counter) (rnic_counter_saturated{host_name=~"$node"})`,
			needs: "a narrow counter stuck at its maximum (the series exists only then)",
		},
	).WithTransformation(organize(map[string]string{"Value": "saturated"})))
}
