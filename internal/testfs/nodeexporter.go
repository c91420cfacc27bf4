package testfs

// NodeExporterRDMANode is the InfiniBand part of prometheus/node_exporter's published fixture
// (collector/fixtures/sys.ttar at a7dcc3a01545, the tree its end-to-end test reads and whose
// output is collector/fixtures/e2e-output.txt): the devices, files and values it holds, written
// by this package instead of copied. Its quirks are kept: the devices are directories in
// /sys/class/infiniband with no `device` link; i40iw0 (iWARP) prints "N/A (no PMA)" for every
// PMA counter (old core sysfs.c show_pma_counter) and an SDR rate without the speed name
// ("10 Gb/sec (4X)"); mlx4_0 has the extended PMA table (unicast_*) beside counters_ext/, whose
// packet counters read 0, and port 2's counters/ holds only some of the files.
func NodeExporterRDMANode() []RDMADevice {
	noPMA := map[string]string{}
	for _, n := range []string{"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
		"local_link_integrity_errors", "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors", "port_xmit_data",
		"port_xmit_discards", "port_xmit_packets", "port_xmit_wait", "symbol_error"} {
		noPMA[n] = "N/A (no PMA)"
	}
	mlx4Ext := map[string]string{
		"port_multicast_rcv_packets": "93", "port_multicast_xmit_packets": "16", "port_rcv_data_64": "4631917",
		"port_rcv_packets_64": "0", "port_unicast_rcv_packets": "61148", "port_unicast_xmit_packets": "61239",
		"port_xmit_data_64": "3733440", "port_xmit_packets_64": "0",
	}
	return []RDMADevice{
		{Name: "i40iw0", InClass: true, Attrs: map[string]string{"board_id": "I40IW Board ID", "fw_ver": "0.2", "hca_type": "I40IW"},
			Ports: []RDMAPort{{Num: 1, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "10 Gb/sec (4X)", Counters: noPMA}}},
		{Name: "mlx4_0", InClass: true, Attrs: map[string]string{"board_id": "SM_1141000001000", "fw_ver": "2.31.5050", "hca_type": "MT4099"},
			Ports: []RDMAPort{
				{Num: 1, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "40 Gb/sec (4X QDR)",
					Counters: map[string]string{
						"link_downed": "0", "link_error_recovery": "0", "multicast_rcv_packets": "93", "multicast_xmit_packets": "16",
						"port_rcv_constraint_errors": "0", "port_rcv_data": "4631917", "port_rcv_discards": "0", "port_rcv_errors": "0",
						"port_rcv_packets": "6825908347", "port_xmit_constraint_errors": "0", "port_xmit_data": "3733440",
						"port_xmit_discards": "5", "port_xmit_packets": "6235865", "port_xmit_wait": "4294967295",
						"unicast_rcv_packets": "61148", "unicast_xmit_packets": "61239",
					},
					CountersExt: mlx4Ext},
				{Num: 2, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "40 Gb/sec (4X QDR)",
					Counters: map[string]string{
						"link_downed": "0", "link_error_recovery": "0", "multicast_rcv_packets": "0", "multicast_xmit_packets": "0",
						"port_rcv_data": "0", "port_xmit_data": "0", "unicast_rcv_packets": "0", "unicast_xmit_packets": "0",
					},
					CountersExt: mlx4Ext},
			}},
	}
}
