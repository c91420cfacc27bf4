package dashboard

// nccl puts NCCL's own view of the job beside the hardware bytes: the bus bandwidth the
// Inspector measured per communicator and collective, its sampling and record outcomes, and the
// ranks by state from the RAS service (the nccl receiver).
func (g *gen) nccl() {
	g.row("NCCL: collectives (Inspector) and ranks (RAS)")
	const comm = "{{host_name}} {{nccl_comm_id}} {{nccl_collective}} {{nccl_message_size}}"

	g.add(g.timeSeries("Bus bandwidth of the newest sampled collective",
		"coll_busbw_gbs of the newest Inspector record per communicator, collective and message-size bucket. A ring AllReduce's bus bandwidth is 2(N-1)/N times its algorithm bandwidth: compare it with what the RDMA NIC of the same GPU can carry.",
		"decgbytes", 12, 8,
		target{
			expr:   `max by (host_name, nccl_comm_id, nccl_collective, nccl_message_size) (nccl_collective_last_bus_bandwidth_gigabytes_per_second{host_name=~"$node"})`,
			legend: comm,
		},
		target{
			expr:   `max by (host_name, nccl_comm_name, nccl_collective, nccl_message_size) (nccl_inspector_textfile_bus_bandwidth_gigabytes_per_second{host_name=~"$node"})`,
			legend: "{{host_name}} {{nccl_comm_name}} {{nccl_collective}} {{nccl_message_size}} (textfile)",
		}))
	g.add(g.timeSeries("Inspector records sampled/s and their size",
		"Records taken per second (samples of completed operations, not every collective) and the message bytes of those samples.",
		"short", 12, 8,
		target{
			expr:   `sum by (host_name, nccl_comm_id, nccl_collective) (rate(nccl_collective_samples_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{nccl_comm_id}} {{nccl_collective}} records/s",
		},
		target{
			expr:   `sum by (host_name, nccl_comm_id, nccl_collective) (rate(nccl_collective_sampled_bytes_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{nccl_comm_id}} {{nccl_collective}} sampled bytes/s",
		}))
	g.add(g.timeSeries("Execution time per bucket (textfile mode)",
		"The Inspector's Prometheus textfile mode: mean execution time of a dump interval per bucket.",
		"µs", 8, 8,
		target{
			expr:   `max by (host_name, nccl_comm_name, nccl_collective, nccl_message_size) (nccl_inspector_textfile_duration_microseconds{host_name=~"$node"})`,
			legend: "{{host_name}} {{nccl_comm_name}} {{nccl_collective}} {{nccl_message_size}}",
		}))
	g.add(g.timeSeries("Ranks by state (RAS)",
		"Ranks of each communicator by the state NCCL's RAS service reports; unresponsive, dead, aborted or async_error above 0 is a stalled job.",
		"short", 8, 8,
		target{
			expr:   `sum by (host_name, nccl_comm_id, rank_state) (nccl_ras_ranks{host_name=~"$node"})`,
			legend: "{{host_name}} {{nccl_comm_id}} {{rank_state}}",
		},
		target{
			expr:   `min by (host_name) (nccl_ras_up_ratio{host_name=~"$node"})`,
			legend: "{{host_name}} RAS answered",
		}))
	g.add(g.timeSeries("Operations per collective, lowest and highest rank (RAS)",
		"A highest count that advances while the lowest does not: a straggler or a hang.",
		"short", 8, 8,
		target{
			expr:   `max by (host_name, nccl_comm_id, nccl_collective, bound) (nccl_ras_operations{host_name=~"$node"})`,
			legend: "{{host_name}} {{nccl_comm_id}} {{nccl_collective}} {{bound}}",
		},
		target{
			expr:   `sum by (host_name, outcome) (rate(nccl_inspector_records_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} Inspector records {{outcome}}/s",
		}))
}
