package dashboard

// gpuActivity shows whether the GPUs compute or wait: during an AllReduce that the network
// throttles, SM activity drops while the interconnect panels stay busy.
func (g *gen) gpuActivity() {
	g.row("GPU activity")
	const legend = "{{host_name}} {{device}}"

	g.add(g.timeSeries("GPU memory activity",
		"DRAM active: fraction of cycles the memory interface was busy (a ratio, not bytes; read and write cannot be told apart). Copy utilisation: fraction of time memory was read or written (coarser).",
		"percentunit", 12, 8,
		target{expr: `avg by (host_name, device) (gpu_dram_active_ratio{host_name=~"$node"})`, legend: legend + " DRAM active"},
		target{expr: `avg by (host_name, device) (gpu_memory_copy_utilization_ratio{host_name=~"$node"})`, legend: legend + " copy util"},
	).Max(1))
	g.add(g.timeSeries("GPU compute activity",
		"SM active: fraction of cycles at least one warp was on an SM. Graphics engine active and GPU utilisation: fraction of time any kernel ran (coarser).",
		"percentunit", 12, 8,
		target{expr: `avg by (host_name, device) (gpu_sm_active_ratio{host_name=~"$node"})`, legend: legend + " SM active"},
		target{expr: `avg by (host_name, device) (gpu_graphics_engine_active_ratio{host_name=~"$node"})`, legend: legend + " engine active"},
		target{expr: `avg by (host_name, device) (gpu_utilization_ratio{host_name=~"$node"})`, legend: legend + " utilization"},
	).Max(1))
}
