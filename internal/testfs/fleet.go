package testfs

import "strconv"

// Fleet nodes: one RDMA node per fleet people run, each laid out as its driver lays out sysfs.
// The rnic receiver's tests scrape them (receiver/rnicreceiver/testdata/fleet/<name>) and the
// distribution's end-to-end test serves them through the built collector. The PCIe-topology
// fleets (a DGX H100-like node, an HGX board) are PCINodes: see DGXH100Node and HGXNode.

// FleetRDMANodes returns the RDMA fleet nodes by name.
func FleetRDMANodes() map[string][]RDMADevice {
	return map[string][]RDMADevice{
		"broadcom":  BroadcomRDMANode(),
		"intel":     IntelE810RDMANode(),
		"lag":       LAGRDMANode(),
		"switchdev": SwitchdevRDMANode(),
	}
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
			Name: "bnxt_re0", PCIPath: "pci0000:40/0000:40:01.1/0000:41:00.0", NUMA: "0", Driver: "bnxt_en",
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
			Name: "bnxt_re1", PCIPath: "pci0000:40/0000:40:01.1/0000:41:00.1", NUMA: "0", Driver: "bnxt_en",
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
	}
}

// IntelE810RDMANode is a node with an E810 (ice + irdma) in RoCEv2 mode and a gen3 part. irdma
// has no process_mad, so no counters/ (prometheus/procfs PR #605); its hw_counters are the
// protocol engine's statistics (drivers/infiniband/hw/irdma/verbs.c, irdma_hw_stat_descs): IPv4
// and IPv6 octets and packets, TCP-style segments, RDMA operations, gen2 congestion (cnpSent,
// cnpHandled, cnpIgnored, RxECNMrkd) and, on gen3, names that contain spaces.
func IntelE810RDMANode() []RDMADevice {
	gen2 := map[string]string{
		"ip4InDiscards": "0", "ip4InTruncatedPkts": "0", "ip4OutNoRoutes": "0", "ip6InDiscards": "0",
		"ip6InTruncatedPkts": "0", "ip6OutNoRoutes": "0", "rxVlanErrors": "0",
		"ip4InOctets": "900000000000", "ip4InPkts": "219726562", "ip4InReasmRqd": "0", "ip4InMcastOctets": "0",
		"ip4InMcastPkts": "0", "ip4OutOctets": "800000000000", "ip4OutPkts": "195312500", "ip4OutSegRqd": "0",
		"ip4OutMcastOctets": "0", "ip4OutMcastPkts": "0",
		"ip6InOctets": "100000000000", "ip6InPkts": "24414062", "ip6InReasmRqd": "0", "ip6InMcastOctets": "0",
		"ip6InMcastPkts": "0", "ip6OutOctets": "50000000000", "ip6OutPkts": "12207031", "ip6OutSegRqd": "0",
		"ip6OutMcastOctets": "0", "ip6OutMcastPkts": "0",
		"InRdmaReads": "1000", "InRdmaSends": "2000", "InRdmaWrites": "3000", "OutRdmaReads": "1000",
		"OutRdmaSends": "2000", "OutRdmaWrites": "3000", "RdmaBnd": "0", "RdmaInv": "0",
		"RxUDP": "0", "TxUDP": "0", "RxECNMrkd": "77",
		"cnpHandled": "41", "cnpIgnored": "2", "cnpSent": "63",
		"RetransSegs": "11", "InOptErrors": "0", "InProtoErrors": "0", "InSegs": "0", "OutSegs": "0",
		"lifespan": "10",
	}
	gen3 := map[string]string{}
	for k, v := range gen2 {
		gen3[k] = v
	}
	for k, v := range map[string]string{"RTO": "6", "Nak Sequence Error": "8", "Rcvd Out of order packets": "12", "CRC errors": "1"} {
		gen3[k] = v
	}
	dev := func(name, path, netdev string, hw map[string]string) RDMADevice {
		return RDMADevice{
			Name: name, PCIPath: path, NUMA: "1", Driver: "ice",
			Attrs: map[string]string{"fw_ver": "1.7", "hca_type": "E810", "node_guid": "b49a:9503:00c8:7e10", "node_type": "1: CA"},
			Ports: []RDMAPort{{
				Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
				HW: hw, Ndevs: map[int]string{0: netdev, 1: netdev},
			}},
			Netdevs: []RDMANetdev{{Name: netdev, TX: 5000, RX: 6000}},
		}
	}
	return []RDMADevice{
		dev("irdma0", "pci0000:b0/0000:b0:02.0/0000:b1:00.0", "ens801f0", gen2),
		dev("irdma1", "pci0000:b0/0000:b0:03.0/0000:b2:00.0", "ens802f0", gen3),
	}
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
