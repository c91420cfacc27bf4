package dashboard

// errorCounters shows loss and damage: a link that drops or corrupts packets makes RDMA
// retransmit and NCCL slow down without any bandwidth panel showing why.
func (g *gen) errorCounters() {
	g.row("Errors")
	const legend = "{{host_name}} {{device}} {{counter}}"

	g.add(g.timeSeries("RDMA port errors/s",
		"InfiniBand PortCounters errors by kernel counter (symbol errors, link downed, receive errors, transmit discards, ...). Saturated counters are not reported: see 'Saturated counters'.",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device, counter) (rate(rnic_port_errors_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: legend,
		}))
	g.add(g.timeSeries("RDMA transport events/s",
		"Loss and retransmission: out-of-sequence packets, sequence errors, ACK timeouts, RNR NAK retries, duplicates.",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device, counter) (rate(rnic_transport_events_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: legend,
		}))
	g.add(g.timeSeries("RDMA transport errors/s",
		"out_of_buffer, ICRC errors, completion, access and length errors.",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device, counter) (rate(rnic_transport_errors_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: legend,
		}))

	g.add(g.timeSeries("Physical port discards/s",
		"Packets the physical port dropped (ethtool rx/tx_discards_phy); receive discards with PFC enabled point at a lossless class that is not lossless.",
		"pps", 8, 8,
		target{
			expr:   `sum by (host_name, device, direction) (rate(rnic_phy_discards_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} {{direction}}",
		}))
	g.add(g.timeSeries("GPU XID errors",
		"XID errors the NVIDIA driver reported, per XID number (see NVIDIA's XID catalogue; 79 fell off the bus, 48/63/64 memory errors, 74 NVLink).",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device, xid) (increase(gpu_xid_errors_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} XID {{xid}}",
			needs:  "an XID error since the receiver started (one series per XID seen)",
		}))
	g.add(g.timeSeries("GPU PCIe replays/s",
		"Link-level retransmissions on each GPU's PCIe link; a rising rate means a bad link, riser or slot.",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device) (rate(gpu_pcie_replays_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}}",
		}))
}
