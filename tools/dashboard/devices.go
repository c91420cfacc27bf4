package dashboard

// ioByDevice is the per-device drill-down of one or more components of interconnect.io.
func ioByDevice(components string) string {
	return `sum by (host_name, device, direction) (rate(interconnect_io_bytes_total{host_name=~"$node", component=~"` + components + `"}[$__rate_interval]))`
}

// devices breaks the node view down to the device that carries the bytes: which NIC port, which
// IIO stack or root port, which memory controller, which GPU.
func (g *gen) devices() {
	g.row("Per device")
	const legend = "{{host_name}} {{device}} {{direction}}"

	g.add(g.timeSeries("RDMA NIC ports: RDMA bytes/s",
		"RDMA traffic of each port (port_xmit_data / port_rcv_data x 4, or the 64-bit counters).",
		"Bps", 12, 8, target{expr: ioByDevice("rnic"), legend: legend}))
	g.add(g.timeSeries("Network devices: IP bytes/s",
		"IP traffic of each RDMA port's Ethernet (or IPoIB) netdev. Bytes here while the same port's RDMA is idle: NCCL fell back to TCP.",
		"Bps", 12, 8, target{expr: ioByDevice("netdev"), legend: legend}))

	g.add(g.timeSeries("Physical port bytes/s (RDMA + Ethernet)",
		"Everything on the wire, headers and FCS included (ethtool rx/tx_bytes_phy). Compare with the RDMA bytes above for the RDMA share.",
		"Bps", 12, 8, target{
			expr:   `sum by (host_name, device, direction) (rate(rnic_phy_io_bytes_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: legend,
		}))
	g.add(g.timeSeries("RDMA NIC ports: packets/s",
		"Packets of each RDMA port on all virtual lanes.",
		"pps", 12, 8, target{
			expr:   `sum by (host_name, device, direction) (rate(rnic_packets_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: legend,
		}))

	g.add(g.timeSeries("RDMA bytes/s by operation",
		"Where the driver splits the port's bytes by operation (AWS EFA): two-sided send/receive, RDMA write, RDMA read. A part of the RDMA bytes above, never to be added to them.",
		"Bps", 12, 8,
		target{
			expr:   `sum by (host_name, device, direction, operation) (rate(rnic_operation_io_bytes_total{host_name=~"$node"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} {{operation}} {{direction}}",
		}))
	g.add(g.timeSeries("CPU PCIe per IIO stack / root port",
		"Bytes through the CPU's PCIe root complex (uncore IIO). receive = device to CPU (DMA writes into host memory), transmit = CPU to device. Busy during healthy GPUDirect RDMA means the traffic is not peer-to-peer.",
		"Bps", 12, 8, target{expr: ioByDevice("cpu_pcie"), legend: legend}))
	// One query for both kinds of memory counters: a cluster can mix CPUs that split reads from
	// writes with CPUs that cannot (AMD Zen 2/3 Data Fabric, resctrl MBM), whose combined bytes are
	// drawn with direction "total".
	g.add(g.timeSeries("Host memory per socket / controller",
		"Host DRAM read and write bytes (uncore IMC / UMC CAS commands x 64 B). Where the hardware only counts reads and writes together (AMD Zen 2/3, resctrl) the combined bytes are drawn as 'total'.",
		"Bps", 12, 8,
		target{
			expr:   ioByDevice("cpu_memory") + ` or label_replace(sum by (host_name, device) (rate(cpuuncore_memory_io_bytes_total{host_name=~"$node"}[$__rate_interval])), "direction", "total", "", "")`,
			legend: legend,
		}))

	// PCIe, NVLink and C2C in one panel: the paper's nodes have only PCIe, HGX and Grace nodes
	// add NVLink and C2C, and a cluster mixes them.
	g.add(g.timeSeries("GPU links per GPU: PCIe, NVLink, C2C",
		"Bytes through each GPU's PCIe link (transmit = GPU to host side), over all its NVLink links, and over the chip-to-chip link of Grace Hopper / Grace Blackwell.",
		"Bps", 12, 8, target{
			expr:   `sum by (host_name, device, component, direction) (rate(interconnect_io_bytes_total{host_name=~"$node", component=~"gpu_pcie|gpu_nvlink|gpu_c2c|gpu_xgmi"}[$__rate_interval]))`,
			legend: "{{host_name}} {{device}} {{component}} {{direction}}",
		}))
}
