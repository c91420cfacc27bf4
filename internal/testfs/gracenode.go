package testfs

// GraceNode is a Grace Hopper node as Linux lays out its PCI tree: on Grace every PCIe root port
// is the only port of its own host bridge and PCI segment (domain), each with bus 00: the Hopper
// GPU, attached through NVLink-C2C, is 0009:01:00.0 behind root port 0009:00:00.0, a ConnectX-7 is
// 0000:01:00.0 behind root port 0000:00:00.0 (NVIDIA GH200 platform notes and `lspci` of GH200
// systems; host bridges pci<segment>:00 as drivers/pci/probe.c pci_register_host_bridge names
// them). Each function's numa_node is its Grace socket's node (the host bridge's proximity domain;
// an inference: a real node's /sys/bus/pci/devices/0009:01:00.0/numa_node is the check). With
// twoSockets a second superchip (GB200-style tray) adds its GPU on segment 0019 and a NIC on
// segment 0010, on node 1. IDs: GH200 GPU 10de:2342 and ConnectX-7 15b3:1021 (pci.ids); the Grace
// root port's device id is inferred (class 0x060400 is what the classification reads).
func GraceNode(twoSockets bool) PCINode {
	rootPort := func(seg string, node int, endpoint PCIFunction) PCIRootBus {
		return PCIRootBus{Name: "pci" + seg + ":00", NUMANode: node, RootPorts: []PCIFunction{{
			Address: seg + ":00:00.0", Vendor: 0x10de, DevID: 0x22b2, Class: 0x060400, IOMMUGroup: -1,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16, Children: []PCIFunction{endpoint},
		}}}
	}
	gpu := func(seg string, group int) PCIFunction {
		return PCIFunction{Address: seg + ":01:00.0", Vendor: 0x10de, DevID: 0x2342, Class: 0x030200, IOMMUGroup: group,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}
	}
	nic := func(seg, name string, group int) PCIFunction {
		return PCIFunction{Address: seg + ":01:00.0", Vendor: 0x15b3, DevID: 0x1021, Class: 0x020700, IOMMUGroup: group, RDMA: name,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}
	}
	n := PCINode{IOMMUGroupType: map[int]string{1: "identity", 9: "identity"},
		Modules: []string{"nvidia_peermem", "mlx5_core", "mlx5_ib"}, NVIDIAVersion: "570.124.06", KernelRelease: "6.8.0-1021-nvidia-64k"}
	n.RootBuses = []PCIRootBus{rootPort("0000", 0, nic("0000", "mlx5_0", 1)), rootPort("0009", 0, gpu("0009", 9))}
	if twoSockets {
		n.IOMMUGroupType[10], n.IOMMUGroupType[19] = "identity", "identity"
		n.RootBuses = append(n.RootBuses, rootPort("0010", 1, nic("0010", "mlx5_1", 10)), rootPort("0019", 1, gpu("0019", 19)))
	}
	return n
}
