package dashboard

// bursts shows what a collection interval's average hides, where the rnic receiver's fast sampler
// is on (bursts.period): each interval's peak rate over one sampling window, and the share of time
// each port ran above 50 % and 90 % of its line rate; and, where the cpuuncore receiver's is on,
// the peak of host memory and CPU PCIe; and, where the gpu receiver's is on, each GPU's PCIe
// link's. A port at a few percent on average whose
// peak is the line rate moves its traffic in bursts (a data-parallel step's gradient exchange).
func (g *gen) bursts() {
	g.row("Microbursts: inside the collection interval (bursts.period)")
	g.add(g.timeSeries("Peak rate within the interval",
		"The highest rate of the port's bytes over one window of the rnic receiver's fast sampler (burst.window, e.g. 10ms) in each collection interval, beside what the interval's average would say: a port saturated in bursts shows the line rate here. Empty unless bursts.period is set.",
		"Bps", 12, 8,
		target{
			expr:   `max by (host_name, device, component, direction) (rnic_burst_peak_rate_bytes_per_second{host_name=~"$node"})`,
			legend: "{{host_name}} {{device}} {{component}} {{direction}} peak",
		}))
	g.add(g.timeSeries("Time above a share of line rate",
		"Share of the time the port ran at or above burst.share of its line rate (rnic.port.rate), counted over the fast sampler's windows: 40 ms bursts every 600 ms read 6.7 % above 90 %.",
		"percentunit", 12, 8,
		target{
			expr:   `sum by (host_name, device, direction, burst_share) (rate(rnic_burst_time_above_seconds_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} {{direction}} above {{burst_share}}",
		}))
	g.add(g.timeSeries("Host memory and CPU PCIe: peak within the interval",
		"The highest rate of a host memory or CPU PCIe series over one window of the cpuuncore receiver's fast sampler (its bursts.period) in each collection interval: data bouncing through host memory at every training step shows its burst rate here where the average shows a few GB/s. Empty unless the cpuuncore receiver's bursts.period is set.",
		"Bps", 12, 8,
		target{
			expr:   `max by (host_name, device, component, direction) (cpuuncore_burst_peak_rate_bytes_per_second{host_name=~"$node"})`,
			legend: "{{host_name}} {{device}} {{component}} {{direction}} peak",
		}))
	g.add(g.timeSeries("GPU PCIe: peak within the interval",
		"The highest rate of each GPU's PCIe link, per direction, over one window of the gpu receiver's fast sampler (NVML's cumulative PCIe byte counters, its bursts.period) in each collection interval: a GPU that feeds its NIC in bursts shows the link's rate here. Empty unless the gpu receiver's bursts.period is set with the NVML source.",
		"Bps", 12, 8,
		target{
			expr:   `max by (host_name, device, component, direction) (gpu_burst_peak_rate_bytes_per_second{host_name=~"$node"})`,
			legend: "{{host_name}} {{device}} {{component}} {{direction}} peak",
		}))
}
