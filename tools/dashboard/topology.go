package dashboard

// PCIe distance levels as rnic.topology.gpu_distance numbers them (nvidia-smi topo -m names):
// GPUDirect RDMA works at NCCL's default level only through PCIe switches (PIX, PXB).
var distances = valueMap(
	state{0, "unknown", "text"},
	state{1, "PIX", "green"},
	state{2, "PXB", "green"},
	state{3, "PHB", "orange"},
	state{4, "NODE", "red"},
	state{5, "SYS", "red"},
)

var (
	readiness = valueMap(
		state{-1, "unknown", "orange"},
		state{0, "no", "red"},
		state{1, "yes", "green"},
	)
	triState = valueMap(
		state{-1, "unknown", "text"},
		state{0, "no", "green"},
		state{1, "yes", "red"},
	)
	peerMemory = valueMap(
		state{-1, "unknown", "text"},
		state{0, "absent", "red"},
		state{1, "present", "green"},
	)
	degraded = valueMap(
		state{0, "ok", "green"},
		state{1, "degraded", "red"},
	)
)

// topology shows, before any traffic flows, whether GPUDirect RDMA can work on the node and which
// condition fails when it cannot: the cause of the bounce-through-host-memory case.
func (g *gen) topology() {
	g.row("Topology and GPUDirect RDMA readiness")

	g.add(g.table("GPUDirect RDMA readiness per GPU-NIC pair",
		"GPUs by PCI address (gpu_pci_bus_id; the GPUs table names each address's device). ready = PIX or PXB path, a peer-memory mechanism, no ACS redirect on the path, no translating IOMMU; unknown when nothing is known to fail but the ACS state (needs CAP_SYS_ADMIN) or the path cannot be read. The other columns say which condition fails.",
		16, 8,
		target{expr: `max by (host_name, gpu_pci_bus_id, device) (rnic_topology_gpudirect_ready{host_name=~"$node"})`},
		target{expr: `max by (host_name, gpu_pci_bus_id, device) (rnic_topology_gpu_distance{host_name=~"$node"})`},
		target{expr: `max by (host_name, gpu_pci_bus_id, device) (rnic_topology_acs_redirect{host_name=~"$node"})`},
	).
		WithTransformation(merge()).
		WithTransformation(organize(map[string]string{
			"Value #A": "GPUDirect ready", "Value #B": "PCIe distance", "Value #C": "ACS redirect",
		})).
		OverrideByName("GPUDirect ready", cellMapping(readiness)).
		OverrideByName("PCIe distance", cellMapping(distances)).
		OverrideByName("ACS redirect", cellMapping(triState)))
	g.add(g.table("Nearest RDMA NIC per GPU",
		"Each GPU's (by PCI address) nearest RDMA NIC and the PCIe path to it; PHB or farther cannot use GPUDirect RDMA at NCCL's default NCCL_NET_GDR_LEVEL.",
		8, 8,
		target{expr: `max by (host_name, gpu_pci_bus_id, device, pcie_path) (rnic_topology_nearest_rnic{host_name=~"$node"})`},
	).
		WithTransformation(organize(map[string]string{"Value": "distance"})).
		OverrideByName("distance", cellMapping(distances)))

	g.add(g.table("Peer memory",
		"Whether the kernel offers the NIC a path to GPU memory: the nvidia-peermem module, or dma_buf (kernel 5.12+ and the NVIDIA open kernel module).",
		6, 8,
		target{expr: `max by (host_name, mechanism) (rnic_topology_peer_memory{host_name=~"$node"})`},
	).
		WithTransformation(organize(map[string]string{"Value": "available"})).
		OverrideByName("available", cellMapping(peerMemory)))
	g.add(g.table("IOMMU mode",
		"IOMMU mode of each GPU and RDMA NIC: translated DMA sends peer traffic through the IOMMU.",
		6, 8,
		target{expr: `max by (host_name, device, iommu_mode) (rnic_topology_iommu{host_name=~"$node"})`},
	).WithTransformation(organize(nil, "Value")))
	g.add(g.table("PCIe links of RDMA NICs",
		"Trained and maximum PCIe width and speed of each RDMA NIC; fewer lanes or a lower speed than the NIC and its slot can reach is a degraded link. GPU links are the gpu receiver's (GPU PCIe link: current vs maximum).",
		12, 8,
		target{expr: `max by (host_name, device) (rnic_topology_link_degraded{host_name=~"$node"})`},
		target{expr: `max by (host_name, device) (rnic_topology_link_width{host_name=~"$node", pcie_link_bound="current"})`},
		target{expr: `max by (host_name, device) (rnic_topology_link_width{host_name=~"$node", pcie_link_bound="max"})`},
		target{expr: `max by (host_name, device) (rnic_topology_link_speed_per_second{host_name=~"$node", pcie_link_bound="current"})`},
		target{expr: `max by (host_name, device) (rnic_topology_link_speed_per_second{host_name=~"$node", pcie_link_bound="max"})`},
	).
		WithTransformation(merge()).
		WithTransformation(organize(map[string]string{
			"Value #A": "link", "Value #B": "lanes", "Value #C": "max lanes",
			"Value #D": "GT/s", "Value #E": "max GT/s",
		})).
		OverrideByName("link", cellMapping(degraded)))

	g.add(g.table("Devices behind CPU root ports",
		"PCI functions found behind each CPU PCIe root port: which root port's bandwidth (CPU PCIe panel) a GPU or NIC sends through.",
		12, 8,
		target{
			expr:  `max by (host_name, device, pci_root_port, pci_bus_id) (cpuuncore_pcie_device{host_name=~"$node"})`,
			needs: "a CPU whose kernel maps IIO stacks to root ports (Skylake-SP to Ice Lake-SP)",
		},
	).WithTransformation(organize(nil, "Value")))
	g.add(g.timeSeries("Uncore counter running ratio",
		"Fraction of the time each uncore PMU's counters actually counted. Below 100% the kernel multiplexed them with another perf user and the CPU PCIe and memory bytes are extrapolated.",
		"percentunit", 12, 8,
		target{expr: `min by (host_name, pmu) (cpuuncore_counter_running_ratio{host_name=~"$node"})`, legend: "{{host_name}} {{pmu}}"},
	).Max(1))

	g.add(g.table("RDMA ports",
		"Static facts of every RDMA port: link layer, its netdev, PCI address, NUMA node, HCA type, firmware.",
		12, 8,
		target{expr: `max by (host_name, device, link_layer, netdev, pci_bus_id, numa_node, hca_type, fw_version) (rnic_port_info{host_name=~"$node"})`},
	).WithTransformation(organize(nil, "Value")))
	g.add(g.table("GPUs",
		"Identity of every GPU: PCI address (joins with the NIC and root-port tables), NUMA node, model, UUID, and the library read (dcgm or nvml).",
		12, 8,
		target{expr: `max by (host_name, device, pci_bus_id, numa_node, gpu_model, gpu_uuid, source) (gpu_info{host_name=~"$node"})`},
	).WithTransformation(organize(nil, "Value")))
}
