package dashboard

// congestion shows why a port sends below line rate: RoCE congestion control (ECN marks at the
// switch, CNPs between the endpoints), transmit back-pressure (port_xmit_wait) and link-level
// flow control (PFC pause frames, pause storms).
func (g *gen) congestion() {
	g.row("Congestion: ECN / CNP, xmit_wait, PFC")
	const legend = "{{host_name}} {{device}}"

	g.add(g.timeSeries("RoCE congestion notification packets/s",
		"np_cnp_sent: this port, as notification point, received ECN-marked packets and told the sender to slow down. rp_cnp_handled: this port, as reaction point, was told to slow down and did. rp_cnp_ignored: CNPs it ignored.",
		"pps", 8, 8,
		target{
			expr:   `sum by (host_name, device, counter) (rate(rnic_roce_cnp_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} {{counter}}",
		}))
	g.add(g.timeSeries("ECN-marked RoCE packets received/s",
		"RoCEv2 packets that arrived with the congestion-experienced mark: a switch queue on the path was filling.",
		"pps", 8, 8,
		target{
			expr:   `sum by (host_name, device) (rate(rnic_roce_ecn_marked_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: legend,
		}))
	g.add(g.timeSeries("port_xmit_wait ticks/s",
		"Ticks during which the port had data to send but could not (no credits or paused): transmit back-pressure from the fabric.",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device) (rate(rnic_port_xmit_wait_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: legend,
		}))

	g.add(g.timeSeries("PFC pause frames/s per priority",
		"Priority flow control pause frames per 802.1p priority. receive: the switch paused this port; transmit: this port paused its peer (its receive buffers filled).",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device, direction, priority) (rate(rnic_pfc_pause_frames_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} {{direction}} prio {{priority}}",
		},
		target{
			expr:   `sum by (host_name, device, direction, priority) (rate(rnic_pfc_pause_transitions_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} {{direction}} prio {{priority}} pause episodes",
		}))
	g.add(g.timeSeries("Time paused per priority",
		"Share of time each priority was paused (ethtool rx/tx_prio<p>_pause_duration, microseconds per second). Near 100% on receive during a pause storm.",
		"percentunit", 8, 8,
		target{
			expr:   `sum by (host_name, device, direction, priority) (rate(rnic_pfc_pause_duration_microseconds_total{host_name=~"$node"}[$__rate_interval])) / 1e6`,
			legend: "{{host_name}} {{device}} {{direction}} prio {{priority}}",
		}))
	g.add(g.timeSeries("Global pause frames and pause storms",
		"Link-level (global) pause frames of the physical port, and pause-storm events of the NIC's watchdog (a port that kept sending pause frames, usually a stuck receiver, until the NIC stopped it).",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, device, direction) (rate(rnic_pause_frames_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} pause {{direction}}",
		},
		target{
			expr:   `sum by (host_name, device, severity) (increase(rnic_pause_storm_events_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} pause storm {{severity}}",
		}))
}
