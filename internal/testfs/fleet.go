package testfs

import (
	"strconv"
	"strings"
)

// Fleet nodes: one RDMA node per fleet people run, each laid out as its driver lays out sysfs.
// The rnic receiver's tests scrape them (receiver/rnicreceiver/testdata/fleet/<name>) and the
// distribution's end-to-end test serves them through the built collector. The PCIe-topology
// fleets (a DGX H100-like node, an HGX board) are PCINodes: see DGXH100Node and HGXNode.

// FleetRDMANodes returns the RDMA fleet nodes by name.
func FleetRDMANodes() map[string][]RDMADevice {
	return map[string][]RDMADevice{
		"broadcom":   BroadcomRDMANode(),
		"intel":      IntelE810RDMANode(),
		"ipu":        IntelIPURDMANode(),
		"efa":        EFARDMANode(),
		"lag":        LAGRDMANode(),
		"switchdev":  SwitchdevRDMANode(),
		"multiplane": MultiPlaneRDMANode(),
		"netns":      CompatNamespaceRDMANode(),
	}
}

// MultiPlaneRDMANode is an XDR ConnectX-8 in multi-plane mode: mlx5_0 and the SMI device smi1 on
// the same PCI function (Mellanox/rdmamap PR #17 lists both at 0000:0b:00.0, smi1 with ports 1-4).
// mlx5 mad.c process_pma_cmd answers the SMI device with per-plane PPCNT counters and mlx5_0 with
// the vport's; the plane counters here add up to mlx5_0's.
func MultiPlaneRDMANode() []RDMADevice {
	path := "pci0000:0a/0000:0a:01.0/0000:0b:00.0"
	attrs := map[string]string{"fw_ver": "40.44.1036", "hca_type": "MT4131", "node_guid": "a088:c203:0050:6e70", "node_type": "1: CA"}
	var planes []RDMAPort
	for n := 1; n <= 4; n++ {
		planes = append(planes, RDMAPort{Num: n, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp",
			Rate: "200 Gb/sec (1X XDR)", Counters: ExtendedCounters(250000, 500000, 2500, 5000)})
	}
	return []RDMADevice{
		{Name: "mlx5_0", PCIPath: path, NUMA: "0", Driver: "mlx5_core", Attrs: attrs,
			Ports: []RDMAPort{{Num: 1, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp",
				Rate: "800 Gb/sec (4X XDR)", Counters: ExtendedCounters(1000000, 2000000, 10000, 20000)}},
			Netdevs: []RDMANetdev{{Name: "ibp11s0", TX: 7, RX: 8}}},
		{Name: "smi1", PCIPath: path, NUMA: "0", Driver: "mlx5_core", Attrs: attrs, Ports: planes},
	}
}

// CompatNamespaceRDMANode is what a pod without the host's network namespace sees in the default
// "shared" RDMA netns mode: compat devices whose ports have state and rate but neither counters/
// nor hw_counters/ (drivers/infiniband/core/device.c add_one_compat_dev -> ib_setup_port_attrs;
// core sysfs.c setup_port creates them only `if (is_full_dev)`).
func CompatNamespaceRDMANode() []RDMADevice {
	var devs []RDMADevice
	for i, path := range []string{"pci0000:16/0000:16:02.0/0000:17:00.0", "pci0000:16/0000:16:02.0/0000:17:00.1"} {
		devs = append(devs, RDMADevice{
			Name: "mlx5_" + strconv.Itoa(i), PCIPath: path, NUMA: "0", Driver: "mlx5_core",
			Attrs: map[string]string{"fw_ver": "28.39.1002", "hca_type": "MT4129", "node_type": "1: CA"},
			Ports: []RDMAPort{{Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "200 Gb/sec (4X HDR)"}},
		})
	}
	return devs
}

// bnxtHW returns the hw_counters of a bnxt_re port on a P5 chip (drivers/infiniband/hw/bnxt_re/
// hw_counters.c, bnxt_re_stat_descs: the standard counters, the roce error counters and the
// extended ones) with the given byte counters.
func bnxtHW(rxBytes, txBytes, roceRx, roceTx uint64) map[string]string {
	return map[string]string{
		"active_pds": "3", "active_ahs": "0", "active_qps": "12", "active_rc_qps": "8", "active_ud_qps": "2",
		"active_srqs": "0", "active_cqs": "12", "active_mrs": "40", "active_mws": "0",
		"rx_pkts": u(rxBytes / 4096), "rx_bytes": u(rxBytes), "tx_pkts": u(txBytes / 4096), "tx_bytes": u(txBytes),
		"recoverable_errors": "0", "tx_errors": "0", "rx_errors": "0", "tx_discards": "0", "rx_discards": "0",
		"to_retransmits": "17", "seq_err_naks_rcvd": "4", "max_retry_exceeded": "0", "rnr_naks_rcvd": "9",
		"missing_resp": "1", "unrecoverable_err": "0", "bad_resp_err": "0", "local_qp_op_err": "0",
		"dup_req": "2", "oos_drop_count": "5",
		"tx_atomic_req": "0", "tx_read_req": "600", "tx_read_resp": "500", "tx_write_req": "19000", "tx_send_req": "800",
		"tx_roce_only_pkts": u(roceTx / 4096), "tx_roce_only_bytes": u(roceTx),
		"rx_atomic_req": "0", "rx_read_req": "500", "rx_read_resp": "600", "rx_write_req": "18000", "rx_send_req": "700",
		"rx_roce_only_pkts": u(roceRx / 4096), "rx_roce_only_bytes": u(roceRx),
		"rx_roce_good_pkts": u(roceRx / 4096), "rx_roce_good_bytes": u(roceRx),
		"rx_out_of_buffer": "3", "tx_cnp_pkts": "21", "rx_cnp_pkts": "34", "rx_ecn_marked_pkts": "55",
		"lifespan": "10",
	}
}

// BroadcomRDMANode is a node with two BCM57508 ports (bnxt_en + bnxt_re):
//   - bnxt_re0, the out-of-tree driver (and upstream before its 2025 PMA support): a 17-file
//     counters/ directory whose every read fails with EINVAL on a real kernel (core sysfs.c
//     show_pma_counter returns the get_perf_mad error; prometheus/procfs PR #675 shows
//     `port_rcv_data: Invalid argument` next to hw_counters/rx_bytes 7521781137064). A file
//     cannot fail a read, so the files hold "0" and the tests fail their reads with EINVAL.
//   - bnxt_re1, a kernel with "RDMA/bnxt_re: Support Perf management counters": the 21-file
//     extended table, whose data counters are the RoCE bytes / 4, next to the same hw_counters.
func BroadcomRDMANode() []RDMADevice {
	attrs := func(guid string) map[string]string {
		return map[string]string{"fw_ver": "227.1.111.0", "hca_type": "bnxt_re", "node_guid": guid, "board_id": "BCM957508-P2100G", "node_type": "1: CA"}
	}
	return []RDMADevice{
		{
			Name: "bnxt_re0", PCIPath: "pci0000:40/0000:40:01.1/0000:41:00.0", NUMA: "0", Driver: "bnxt_en", Vendor: "0x14e4",
			Attrs: attrs("5e9e:79ff:fe2c:1a30"),
			Ports: []RDMAPort{{
				Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
				Counters: BasicCounters(0, 0, 0, 0),
				HW:       bnxtHW(7521781137064, 6980139270144, 7000000000000, 6500000000000),
				Ndevs:    map[int]string{0: "ens2f0np0", 1: "ens2f0np0"},
			}},
			Netdevs: []RDMANetdev{{Name: "ens2f0np0", TX: 1000, RX: 2000}},
		},
		{
			Name: "bnxt_re1", PCIPath: "pci0000:40/0000:40:01.1/0000:41:00.1", NUMA: "0", Driver: "bnxt_en", Vendor: "0x14e4",
			Attrs: attrs("5e9e:79ff:fe2c:1a31"),
			Ports: []RDMAPort{{
				Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
				// The patch fills port_xmit_data with tx_roce_bytes / 4 on P5 PFs.
				Counters: ExtendedCounters(3000000000, 2500000000, 2929687, 2441406),
				HW:       bnxtHW(11000000000, 12500000000, 10000000000, 12000000000),
				Ndevs:    map[int]string{0: "ens2f1np1", 1: "ens2f1np1"},
			}},
			Netdevs: []RDMANetdev{{Name: "ens2f1np1", TX: 3000, RX: 4000}},
		},
		{
			// bnxt_re2, an SR-IOV VF of bnxt_re0's function on a kernel before the PMA support (no
			// process_mad, so no counters/): bnxt_re_ib_alloc_hw_port_stats creates the extended
			// files on every P5 chip, but bnxt_re_ib_get_hw_stats fills them only
			// `if (_is_ext_stats_supported(...) && !rdev->is_virtfn)`: they stay 0 while the
			// function context's tx/rx_bytes count the traffic.
			Name: "bnxt_re2", PCIPath: "pci0000:40/0000:40:01.1/0000:41:01.0", PhysFn: "pci0000:40/0000:40:01.1/0000:41:00.0",
			NUMA: "0", Driver: "bnxt_en", Vendor: "0x14e4", Attrs: attrs("5e9e:79ff:fe2c:1a40"),
			Ports: []RDMAPort{{
				Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
				HW:    bnxtHW(3000000000, 4000000000, 0, 0),
				Ndevs: map[int]string{0: "ens2f0v0", 1: "ens2f0v0"},
			}},
			Netdevs: []RDMANetdev{{Name: "ens2f0v0", TX: 5000, RX: 6000}},
		},
	}
}

// irdmaGen2HW returns the hw_counters of an irdma IRDMA_GEN_2 port (E810) as a kernel before
// Linux 6.16 prints them (drivers/infiniband/hw/irdma/verbs.c irdma_hw_stat_names): IPv4 and
// IPv6 octets and packets, the TCP statistics with the "tcp" prefix, the RDMA operations with the
// "iw" prefix, UDP and the gen2 congestion counters (cnpSent, cnpHandled, cnpIgnored, RxECNMrkd).
// RHEL 9 and Ubuntu 22.04/24.04 kernels print these names.
func irdmaGen2HW() map[string]string {
	return map[string]string{
		"ip4InDiscards": "0", "ip4InTruncatedPkts": "0", "ip4OutNoRoutes": "0", "ip6InDiscards": "0",
		"ip6InTruncatedPkts": "0", "ip6OutNoRoutes": "0", "rxVlanErrors": "0",
		"ip4InOctets": "900000000000", "ip4InPkts": "219726562", "ip4InReasmRqd": "0", "ip4InMcastOctets": "0",
		"ip4InMcastPkts": "0", "ip4OutOctets": "800000000000", "ip4OutPkts": "195312500", "ip4OutSegRqd": "0",
		"ip4OutMcastOctets": "0", "ip4OutMcastPkts": "0",
		"ip6InOctets": "100000000000", "ip6InPkts": "24414062", "ip6InReasmRqd": "0", "ip6InMcastOctets": "0",
		"ip6InMcastPkts": "0", "ip6OutOctets": "50000000000", "ip6OutPkts": "12207031", "ip6OutSegRqd": "0",
		"ip6OutMcastOctets": "0", "ip6OutMcastPkts": "0",
		"iwInRdmaReads": "1000", "iwInRdmaSends": "2000", "iwInRdmaWrites": "3000", "iwOutRdmaReads": "1000",
		"iwOutRdmaSends": "2000", "iwOutRdmaWrites": "3000", "iwRdmaBnd": "0", "iwRdmaInv": "0",
		"RxUDP": "0", "TxUDP": "0", "RxECNMrkd": "77",
		"cnpHandled": "41", "cnpIgnored": "2", "cnpSent": "63",
		"tcpRetransSegs": "11", "tcpInOptErrors": "0", "tcpInProtoErrors": "0", "tcpInSegs": "0", "tcpOutSegs": "0",
		"lifespan": "10",
	}
}

func irdmaDevice(name, path, driver, hcaType, netdev string, hw map[string]string) RDMADevice {
	return RDMADevice{
		Name: name, PCIPath: path, NUMA: "1", Driver: driver, Vendor: "0x8086",
		Attrs: map[string]string{"fw_ver": "1.7", "hca_type": hcaType, "node_guid": "b49a:9503:00c8:7e10", "node_type": "1: CA"},
		Ports: []RDMAPort{{
			Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
			HW: hw, Ndevs: map[int]string{0: netdev, 1: netdev},
		}},
		Netdevs: []RDMANetdev{{Name: netdev, TX: 5000, RX: 6000}},
	}
}

// IntelE810RDMANode is a node with two E810 ports (ice + irdma, IRDMA_GEN_2) in RoCEv2 mode on a
// kernel before Linux 6.16. irdma has no process_mad, so no counters/ (prometheus/procfs PR #605);
// its hw_counters are the protocol engine's statistics (irdmaGen2HW).
func IntelE810RDMANode() []RDMADevice {
	return []RDMADevice{
		irdmaDevice("irdma0", "pci0000:b0/0000:b0:02.0/0000:b1:00.0", "ice", "E810", "ens801f0", irdmaGen2HW()),
		irdmaDevice("irdma1", "pci0000:b0/0000:b0:03.0/0000:b2:00.0", "ice", "E810", "ens802f0", irdmaGen2HW()),
	}
}

// IntelIPURDMANode is an Intel IPU E2100 (IRDMA_GEN_3: irdma's ig3rdma auxiliary driver on the
// idpf function) on Linux 6.16 or later: "RDMA/irdma: Add GEN3 HW statistics support" prints the
// TCP and RDMA statistics without their prefixes (RetransSegs, InRdmaReads) in
// irdma_hw_stat_descs and adds the GEN_3 names, which contain spaces.
func IntelIPURDMANode() []RDMADevice {
	hw := map[string]string{}
	for k, v := range irdmaGen2HW() {
		if rest, ok := strings.CutPrefix(k, "tcp"); ok {
			k = rest
		} else if rest, ok := strings.CutPrefix(k, "iw"); ok {
			k = rest
		}
		hw[k] = v
	}
	for k, v := range map[string]string{"RTO": "6", "Nak Sequence Error": "8", "Rcvd Out of order packets": "12", "CRC errors": "1"} {
		hw[k] = v
	}
	return []RDMADevice{irdmaDevice("irdma0", "pci0000:30/0000:30:01.0/0000:31:00.0", "idpf", "IPU", "ens3f0", hw)}
}

// EFARDMANode is an AWS P5en-like node's first two EFA devices (drivers/infiniband/hw/efa). EFA
// has no process_mad, so no counters/; each port's hw_counters are EFA_DEFINE_PORT_STATS
// (efa_verbs.c: basic, messages, RDMA read and write, and on Nitro v4 the network stats of
// efa_com_cmd.h efa_com_network_stats: SRD retransmits, timeouts, unresponsive and impaired
// remotes), the device's are EFA_DEFINE_DEVICE_STATS (admin queue and allocation errors). The
// function has no netdev (the ENA function beside it has). efa_port_link_layer returns
// IB_LINK_LAYER_UNSPECIFIED (link_layer "Unknown" in core sysfs.c link_layer_show), node_type is
// RDMA_NODE_UNSPECIFIED, and efa_query_port maps the device's max_link_speed_gbps to an IB speed
// and width (200 -> 4X HDR): the rate is synthetic.
func EFARDMANode() []RDMADevice {
	port := func(k uint64) map[string]string {
		return map[string]string{
			"tx_bytes": u(k * 9000000000), "tx_pkts": u(k * 1000000), "rx_bytes": u(k * 8000000000), "rx_pkts": u(k * 900000),
			"rx_drops": u(k * 3), "send_bytes": u(k * 1000000000), "send_wrs": u(k * 100000),
			"recv_bytes": u(k * 900000000), "recv_wrs": u(k * 90000),
			"rdma_read_wrs": u(k * 2000), "rdma_read_bytes": u(k * 4000000000), "rdma_read_wr_err": u(k),
			"rdma_read_resp_bytes": u(k * 3500000000),
			"rdma_write_wrs":       u(k * 3000), "rdma_write_bytes": u(k * 4000000000), "rdma_write_wr_err": "0",
			"rdma_write_recv_bytes": u(k * 3600000000),
			"retrans_bytes":         u(k * 64000), "retrans_pkts": u(k * 16), "retrans_timeout_events": u(k * 2),
			"unresponsive_remote_events": "0", "impaired_remote_conn_events": u(k * 5),
			"lifespan": "10",
		}
	}
	device := map[string]string{
		"submitted_cmds": "120", "completed_cmds": "120", "cmds_err": "0", "no_completion_cmds": "0",
		"keep_alive_rcvd": "3600", "alloc_pd_err": "0", "create_qp_err": "0", "create_cq_err": "0", "reg_mr_err": "0",
		"alloc_ucontext_err": "0", "create_ah_err": "0", "mmap_err": "0", "lifespan": "10",
	}
	var devs []RDMADevice
	for i, bus := range []int{0x4f, 0x50} {
		devs = append(devs, RDMADevice{
			Name: "rdmap" + strconv.Itoa(bus) + "s0", PCIPath: "pci0000:" + hex2(bus-1) + "/" + FunctionAddress(bus-1, 0, 0) + "/" + FunctionAddress(bus, 0, 0),
			NUMA: "0", Driver: "efa", Vendor: "0x1d0f", DeviceHW: device,
			Attrs: map[string]string{"fw_ver": "", "node_guid": "0e3c:5fff:fe4f:" + hex2(bus) + "00", "node_type": "7: unspecified"},
			Ports: []RDMAPort{{Num: 1, LinkLayer: "Unknown", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "200 Gb/sec (4X HDR)",
				HW: port(uint64(i + 1))}},
		})
	}
	return devs
}

// LAGRDMANode is an mlx5 RoCE LAG: both ports of a ConnectX-6 Dx bonded (bond0 over ens1f0np0
// and ens1f1np1), one RDMA device mlx5_bond_0 on the first function whose GID table names the
// bond. Counter values are telegraf's mlx5_bond_0 (plugins/inputs/infiniband/README.md).
func LAGRDMANode() []RDMADevice {
	d := SyntheticRDMANode()[0]
	d.Driver = "mlx5_core"
	d.Netdevs = []RDMANetdev{{Name: "ens1f0np0", DevPort: 0, TX: 10, RX: 20}}
	d.Functions = []RDMAFunction{{PCIPath: "pci0000:3a/0000:3a:00.0/0000:3b:00.1", Netdevs: []RDMANetdev{{Name: "ens1f1np1", DevPort: 0, TX: 30, RX: 40}}}}
	d.Bond = &RDMABond{Name: "bond0", Members: []string{"ens1f0np0", "ens1f1np1"}, TX: 4000, RX: 3000}
	return []RDMADevice{d}
}

// SwitchdevRDMANode is an mlx5 ConnectX-7 in switchdev mode with two VF representors: the
// device-level hw_counters/ hold the normal Q counter names, the congestion and the ICRC counters
// (mlx5 counters.c: hw_switchdev_stats_ops -> alloc_hw_device_stats); the representor ports hold
// the vport_ names (INIT_VPORT_Q_COUNTER) without congestion or ICRC; the uplink port's vport
// counters are never queried (mlx5_ib_query_q_counters_vport returns 0 for the uplink) and stay 0.
func SwitchdevRDMANode() []RDMADevice {
	q := []string{"out_of_buffer", "out_of_sequence", "duplicate_request", "rnr_nak_retry_err", "packet_seq_err",
		"implied_nak_seq_err", "local_ack_timeout_err", "rx_write_requests", "rx_read_requests", "rx_atomic_requests",
		"resp_local_length_error", "resp_cqe_error", "req_cqe_error", "req_remote_invalid_request",
		"req_remote_access_errors", "resp_remote_access_errors", "resp_cqe_flush_error", "req_cqe_flush_error"}
	devHW := map[string]string{"lifespan": "10", "np_cnp_sent": "500", "np_ecn_marked_roce_packets": "700",
		"rp_cnp_handled": "450", "rp_cnp_ignored": "0", "rx_icrc_encapsulated": "3"}
	vport := func(scale int) map[string]string {
		m := map[string]string{"lifespan": "10"}
		for i, n := range q {
			m["vport_"+n] = strconv.Itoa(scale * i)
		}
		return m
	}
	for i, n := range q {
		devHW[n] = strconv.Itoa(100 + i)
	}
	port := func(num int, ndev string, hw map[string]string) RDMAPort {
		return RDMAPort{Num: num, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "400 Gb/sec (4X NDR)",
			Counters: ExtendedCounters(uint64(num)*1e9, uint64(num)*2e9, uint64(num)*1e6, uint64(num)*2e6), HW: hw,
			Ndevs: map[int]string{0: ndev, 1: ndev}}
	}
	return []RDMADevice{{
		Name: "mlx5_0", PCIPath: "pci0000:16/0000:16:02.0/0000:17:00.0", NUMA: "0", Driver: "mlx5_core",
		Attrs:    map[string]string{"fw_ver": "28.39.1002", "hca_type": "MT4129", "node_guid": "a088:c203:0030:7c10", "node_type": "1: CA"},
		DeviceHW: devHW,
		Ports:    []RDMAPort{port(1, "ens1f0np0", vport(0)), port(2, "ens1f0npf0vf0", vport(1)), port(3, "ens1f0npf0vf1", vport(2))},
		Netdevs: []RDMANetdev{{Name: "ens1f0np0", TX: 9e11, RX: 8e11}, {Name: "ens1f0npf0vf0", DevPort: 0, TX: 10, RX: 20},
			{Name: "ens1f0npf0vf1", DevPort: 0, TX: 30, RX: 40}},
	}}
}

// PCI IDs of the topology fleets (pci.ids): NVIDIA H100 SXM5 10de:2330 (3D controller), ConnectX-7
// 15b3:1021 (InfiniBand controller 0x020700, Ethernet controller 0x020000), Broadcom PEX89000 switch
// ports 1000:c030, Intel Sapphire Rapids root ports 8086:352a (all PCI bridges, 0x060400).
const (
	fleetBridge = 0x060400
	fleetGPU    = 0x030200
	fleetIB     = 0x020700
	fleetEth    = 0x020000
)

// FunctionAddress formats a PCI address on domain 0, as the kernel names function directories.
func FunctionAddress(bus, dev, fn int) string {
	return "0000:" + hex2(bus) + ":" + hex2(dev) + "." + strconv.Itoa(fn)
}

func hex2(v int) string {
	s := strconv.FormatInt(int64(v), 16)
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}

func fleetDrivers(n *PCINode) {
	n.Modules = []string{"nvidia_peermem", "mlx5_core", "mlx5_ib"}
	n.NVIDIAVersion = "550.54.15"
	n.NVIDIAProcVersion = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024"
	n.KernelRelease = "6.8.0-45-generic"
}

// DGXComputeNICs are a DGX H100's compute NICs: the RDMA device names (DGX H100 User Guide,
// "Network Modules": mlx5_0, 3, 4, 5, 6, 9, 10, 11) with the bus of each and its IPoIB netdev
// (ibp<bus>s0, the predictable name of the ConnectX-7 function).
var DGXComputeNICs = []struct {
	RDMA   string
	Bus    int
	Netdev string
}{
	{"mlx5_0", 0x18, "ibp24s0"}, {"mlx5_3", 0x40, "ibp64s0"}, {"mlx5_4", 0x4f, "ibp79s0"}, {"mlx5_5", 0x5e, "ibp94s0"},
	{"mlx5_6", 0x9a, "ibp154s0"}, {"mlx5_9", 0xaa, "ibp170s0"}, {"mlx5_10", 0xc0, "ibp192s0"}, {"mlx5_11", 0xce, "ibp206s0"},
}

// DGXH100Node is a DGX H100-like node: eight GPU-NIC pairs, each GPU and its NDR ConnectX-7
// behind one PCIe switch on its own host bridge (the PCIe hierarchy depth of the real board is not
// published; `nvidia-smi topo -m` shows these pairs as PIX), and two dual-port ConnectX-7 storage
// cards (functions .0 and .1, Ethernet) on root ports of each socket, named mlx5_1/2 and mlx5_7/8.
// No IOMMU (the DGX OS default): no ACS redirect on the switch ports.
func DGXH100Node() PCINode {
	n := PCINode{}
	numa := func(bus int) int { return bus / 0x80 }
	for _, c := range DGXComputeNICs {
		b := c.Bus - 3
		n.RootBuses = append(n.RootBuses, PCIRootBus{Name: "pci0000:" + hex2(b), NUMANode: numa(c.Bus), RootPorts: []PCIFunction{{
			Address: FunctionAddress(b, 1, 0), Vendor: 0x8086, DevID: 0x352a, Class: fleetBridge, IOMMUGroup: -1, Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
			Children: []PCIFunction{{
				Address: FunctionAddress(b+1, 0, 0), Vendor: 0x1000, DevID: 0xc030, Class: fleetBridge, IOMMUGroup: -1, Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
				Children: []PCIFunction{
					{Address: FunctionAddress(b+2, 0, 0), Vendor: 0x1000, DevID: 0xc030, Class: fleetBridge, IOMMUGroup: -1, ACSControl: U16(0), MaxSpeed: 32, MaxWidth: 16,
						Children: []PCIFunction{{Address: FunctionAddress(c.Bus, 0, 0), Vendor: 0x15b3, DevID: 0x1021, Class: fleetIB, IOMMUGroup: -1,
							RDMA: c.RDMA, Netdev: c.Netdev, Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}}},
					{Address: FunctionAddress(b+2, 1, 0), Vendor: 0x1000, DevID: 0xc030, Class: fleetBridge, IOMMUGroup: -1, ACSControl: U16(0), MaxSpeed: 32, MaxWidth: 16,
						Children: []PCIFunction{{Address: FunctionAddress(c.Bus+1, 0, 0), Vendor: 0x10de, DevID: 0x2330, Class: fleetGPU, IOMMUGroup: -1,
							Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}}},
				},
			}},
		}}})
	}
	storage := func(bus int, names [2]string) PCIRootBus {
		var fns []PCIFunction
		for f, name := range names {
			fns = append(fns, PCIFunction{Address: FunctionAddress(bus+1, 0, f), Vendor: 0x15b3, DevID: 0x1021, Class: fleetEth, IOMMUGroup: -1,
				RDMA: name, LinkLayer: "Ethernet", Netdev: "enp" + strconv.Itoa(bus+1) + "s0f" + strconv.Itoa(f) + "np" + strconv.Itoa(f),
				Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16})
		}
		return PCIRootBus{Name: "pci0000:" + hex2(bus), NUMANode: numa(bus), RootPorts: []PCIFunction{{
			Address: FunctionAddress(bus, 1, 0), Vendor: 0x8086, DevID: 0x352a, Class: fleetBridge, IOMMUGroup: -1, Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
			Children: fns,
		}}}
	}
	n.RootBuses = append(n.RootBuses, storage(0x28, [2]string{"mlx5_1", "mlx5_2"}), storage(0xd8, [2]string{"mlx5_7", "mlx5_8"}))
	fleetDrivers(&n)
	return n
}

// HGXNode is an HGX H100 8-GPU board with four PCIe switches, each holding two GPUs and two NICs
// (switch s: mlx5_<s> and mlx5_<s+8>), booted with an IOMMU driver in passthrough (iommu=pt):
// every endpoint in an "identity" IOMMU group, and the kernel's pci_enable_acs ->
// pci_std_enable_acs (drivers/pci/pci.c, called whenever an IOMMU driver requested ACS, identity
// domains included) set SV|RR|CR|UF = 0x1d on every ACS-capable switch downstream port: peer
// traffic goes up to the root complex, the classic HGX misconfiguration. unprivileged writes the
// 64-byte config an unprivileged reader gets (drivers/pci/pci-sysfs.c pci_read_config), where the
// ACS state cannot be seen.
func HGXNode(unprivileged bool) PCINode {
	n := PCINode{IOMMUGroupType: map[int]string{}, IOMMUs: []string{"dmar0", "dmar1", "dmar2", "dmar3"}}
	group := 20
	next := func() int {
		group++
		n.IOMMUGroupType[group] = "identity"
		return group
	}
	for s := range 4 {
		b := 0x10 + 0x40*s
		dsp := func(d int, child PCIFunction) PCIFunction {
			return PCIFunction{Address: FunctionAddress(b+2, d, 0), Vendor: 0x1000, DevID: 0xc030, Class: fleetBridge, IOMMUGroup: -1,
				ACSControl: U16(0x001d), ConfigHeaderOnly: unprivileged, MaxSpeed: 32, MaxWidth: 16, Children: []PCIFunction{child}}
		}
		gpu := func(bus int) PCIFunction {
			return PCIFunction{Address: FunctionAddress(bus, 0, 0), Vendor: 0x10de, DevID: 0x2330, Class: fleetGPU, IOMMUGroup: next(),
				ConfigHeaderOnly: unprivileged, Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}
		}
		nic := func(bus int, name string) PCIFunction {
			return PCIFunction{Address: FunctionAddress(bus, 0, 0), Vendor: 0x15b3, DevID: 0x1021, Class: fleetIB, IOMMUGroup: next(),
				ConfigHeaderOnly: unprivileged, RDMA: name, Netdev: "ibp" + strconv.Itoa(bus) + "s0", Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}
		}
		n.RootBuses = append(n.RootBuses, PCIRootBus{Name: "pci0000:" + hex2(b), NUMANode: s / 2, RootPorts: []PCIFunction{{
			Address: FunctionAddress(b, 1, 0), Vendor: 0x8086, DevID: 0x352a, Class: fleetBridge, IOMMUGroup: -1, ConfigHeaderOnly: unprivileged,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
			Children: []PCIFunction{{
				Address: FunctionAddress(b+1, 0, 0), Vendor: 0x1000, DevID: 0xc030, Class: fleetBridge, IOMMUGroup: -1, ConfigHeaderOnly: unprivileged,
				Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16,
				Children: []PCIFunction{
					dsp(0, gpu(b+3)), dsp(1, gpu(b+4)),
					dsp(2, nic(b+5, "mlx5_"+strconv.Itoa(s))), dsp(3, nic(b+6, "mlx5_"+strconv.Itoa(s+8))),
				},
			}},
		}}})
	}
	fleetDrivers(&n)
	return n
}
