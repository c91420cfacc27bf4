package rnicreceiver

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The synthetic fixture node (testdata/synthetic) is written by the code below, laid out the way
// the kernel lays out sysfs, because no public dump of a RoCE mlx5 tree exists
// (../shared/research/rnic.md §6):
//
//   - /sys/class/infiniband/<dev> is a symlink to the device under its parent:
//     ../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0 for a PCI device
//     (node_exporter issue #2846 shows this listing), ../../devices/virtual/infiniband/rxe0 for
//     Soft-RoCE, which has no parent (rxe_verbs.c registers it with a NULL dma device).
//   - <dev>/device links back to the PCI function, which holds numa_node ("-1" if unknown,
//     Documentation/ABI/testing/sysfs-bus-pci), and net/<netdev> for the function's netdevs with
//     dev_port (Documentation/ABI/testing/sysfs-class-net).
//   - <dev>/ports/<n>/{link_layer,state,phys_state,rate}, counters/ (the 21-file extended or
//     17-file basic PMA table, drivers/infiniband/core/sysfs.c), hw_counters/ (driver names),
//     gid_attrs/ndevs/<index> (Documentation/ABI/stable/sysfs-class-infiniband). Empty GID entries
//     fail with EINVAL on a real kernel; a file cannot, so they are left out here and tests inject
//     the errno through sysfs.Reader.OnOpen instead.
//   - /sys/class/net/<netdev> links to the netdev, whose statistics/{tx,rx}_bytes are the byte
//     counters; a bond is a virtual device (/sys/devices/virtual/net/bond0).
//
// Counter values of mlx5_bond_0 are the real ones of a RoCE LAG port printed in telegraf's
// infiniband README (influxdata/telegraf plugins/inputs/infiniband/README.md, device mlx5_bond_0).
//
// `go test -run TestSyntheticFixtureUpToDate -update` rewrites testdata/synthetic; without -update
// the test fails if the committed tree and this code disagree.

var update = flag.Bool("update", false, "rewrite testdata/synthetic and the golden files")

type fxNetdev struct {
	name    string
	devPort int
	tx, rx  uint64
}

type fxPort struct {
	num       int
	linkLayer string
	state     string
	physState string
	rate      string
	counters  map[string]string // nil: no counters/ directory (rxe, bnxt_re)
	hw        map[string]string // nil: no hw_counters/
	ndevs     map[int]string    // gid_attrs/ndevs/<index>
}

type fxDevice struct {
	name    string
	pciPath string // below /sys/devices; empty for a virtual device
	numa    string
	attrs   map[string]string // fw_ver, hca_type, node_guid, board_id, parent, ...
	ports   []fxPort
	netdevs []fxNetdev // the PCI function's netdevs
}

// extendedCounters returns the 21 files of the extended PMA table (pma_group_ext).
func extendedCounters(xmitData, rcvData, xmitPkts, rcvPkts uint64) map[string]string {
	return map[string]string{
		"VL15_dropped": "0", "excessive_buffer_overrun_errors": "0", "link_downed": "0",
		"link_error_recovery": "0", "local_link_integrity_errors": "0", "multicast_rcv_packets": "0",
		"multicast_xmit_packets": "0", "port_rcv_constraint_errors": "0", "port_rcv_data": u(rcvData),
		"port_rcv_errors": "0", "port_rcv_packets": u(rcvPkts), "port_rcv_remote_physical_errors": "0",
		"port_rcv_switch_relay_errors": "0", "port_xmit_constraint_errors": "0", "port_xmit_data": u(xmitData),
		"port_xmit_discards": "0", "port_xmit_packets": u(xmitPkts), "port_xmit_wait": "0",
		"symbol_error": "0", "unicast_rcv_packets": u(rcvPkts), "unicast_xmit_packets": u(xmitPkts),
	}
}

// basicCounters returns the 17 files of the basic PMA table (pma_group): no unicast/multicast.
func basicCounters(xmitData, rcvData, xmitPkts, rcvPkts uint64) map[string]string {
	m := extendedCounters(xmitData, rcvData, xmitPkts, rcvPkts)
	for _, k := range []string{"unicast_rcv_packets", "unicast_xmit_packets", "multicast_rcv_packets", "multicast_xmit_packets"} {
		delete(m, k)
	}
	return m
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// syntheticNode is the node of testdata/synthetic.
func syntheticNode() []fxDevice {
	bondHW := map[string]string{ // telegraf README, mlx5_bond_0 port 1
		"duplicate_request": "0", "implied_nak_seq_err": "0", "lifespan": "10", "local_ack_timeout_err": "0",
		"np_cnp_sent": "0", "np_ecn_marked_roce_packets": "0", "out_of_buffer": "0", "out_of_sequence": "0",
		"packet_seq_err": "0", "req_cqe_error": "0", "req_cqe_flush_error": "0", "req_remote_access_errors": "0",
		"req_remote_invalid_request": "0", "resp_cqe_error": "0", "resp_cqe_flush_error": "0",
		"resp_local_length_error": "0", "resp_remote_access_errors": "0", "rnr_nak_retry_err": "0",
		"roce_adp_retrans": "0", "roce_adp_retrans_to": "0", "roce_slow_restart": "0", "roce_slow_restart_cnps": "0",
		"roce_slow_restart_trans": "0", "rp_cnp_handled": "0", "rp_cnp_ignored": "0", "rx_atomic_requests": "0",
		"rx_icrc_encapsulated": "0", "rx_read_requests": "6000", "rx_write_requests": "19000",
	}
	bondCounters := extendedCounters(85378896588, 34600185253, 82002535, 34914071)

	var cx8Ports []fxPort
	for n := 1; n <= 12; n++ {
		// ConnectX-8 multi-plane: 12 ports per device, the data path on ports 3/6/9/12
		// (scitix/sichek PR #98).
		state, phys := "1: DOWN", "3: Disabled"
		if n%3 == 0 {
			state, phys = "4: ACTIVE", "5: LinkUp"
		}
		cx8Ports = append(cx8Ports, fxPort{
			num: n, linkLayer: "InfiniBand", state: state, physState: phys, rate: "200 Gb/sec (2X NDR)",
			counters: extendedCounters(uint64(n)*1000, uint64(n)*2000, uint64(n), uint64(n)),
		})
	}

	rxeHW := map[string]string{ // rxe_hw_counters.c: the 14 software counters + lifespan
		"sent_pkts": "1200", "rcvd_pkts": "1100", "duplicate_request": "0", "out_of_seq_request": "2",
		"rcvd_rnr_err": "0", "send_rnr_err": "0", "rcvd_seq_err": "1", "retry_exceeded_err": "0",
		"retry_rnr_exceeded_err": "0", "completer_retry_err": "0", "send_err": "0", "link_downed": "0",
		"rdma_sends": "600", "rdma_recvs": "550", "lifespan": "10",
	}

	return []fxDevice{
		{
			name: "mlx5_bond_0", pciPath: "pci0000:3a/0000:3a:00.0/0000:3b:00.0", numa: "0",
			attrs: map[string]string{"fw_ver": "22.39.1002", "hca_type": "MT4125", "node_guid": "b83f:d203:00a1:b2c4", "board_id": "MT_0000000359", "node_type": "1: CA"},
			ports: []fxPort{{
				num: 1, linkLayer: "Ethernet", state: "4: ACTIVE", physState: "5: LinkUp", rate: "100 Gb/sec (4X EDR)",
				counters: bondCounters, hw: bondHW, ndevs: map[int]string{0: "bond0", 1: "bond0"},
			}},
			netdevs: []fxNetdev{{name: "ens1f0np0", devPort: 0, tx: 10, rx: 20}},
		},
		{
			// A 2-port function whose netdevs are told apart by dev_port; basic (32-bit) PMA table,
			// port 2's port_xmit_data stuck at all ones; no netdev in the GID tables.
			name: "mlx4_1", pciPath: "pci0000:00/0000:00:03.0/0000:05:00.0", numa: "1",
			attrs: map[string]string{"fw_ver": "2.42.5000", "hca_type": "MT4099", "node_guid": "0002:c903:0010:1a20", "board_id": "MT_1090120019"},
			ports: []fxPort{
				{num: 1, linkLayer: "Ethernet", state: "4: ACTIVE", physState: "5: LinkUp", rate: "40 Gb/sec (4X QDR)",
					counters: basicCounters(1000, 2000, 10, 20)},
				{num: 2, linkLayer: "Ethernet", state: "4: ACTIVE", physState: "5: LinkUp", rate: "10 Gb/sec (1X QDR)",
					counters: basicCounters(4294967295, 3000, 30, 40)},
			},
			netdevs: []fxNetdev{{name: "eth4", devPort: 0, tx: 100, rx: 200}, {name: "eth5", devPort: 1, tx: 300, rx: 400}},
		},
		{
			name: "mlx5_4", pciPath: "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0", numa: "1",
			attrs:   map[string]string{"fw_ver": "40.44.1036", "hca_type": "MT4131", "node_guid": "a088:c203:0050:6e70"},
			ports:   cx8Ports,
			netdevs: []fxNetdev{{name: "ibp131s0", devPort: 0, tx: 5, rx: 6}},
		},
		{
			name: "rxe0", numa: "",
			attrs: map[string]string{"parent": "eth0", "node_type": "1: CA", "fw_ver": "0.0.0", "node_guid": "5254:00ff:fe12:3456"},
			ports: []fxPort{{num: 1, linkLayer: "Ethernet", state: "4: ACTIVE", physState: "5: LinkUp", rate: "100 Gb/sec (4X EDR)",
				hw: rxeHW, ndevs: map[int]string{0: "eth0", 1: "eth0"}}},
		},
		{
			// Broadcom: no counters/ directory (procfs #687); byte counters in hw_counters (procfs PR #675).
			name: "bnxt_re0", pciPath: "pci0000:00/0000:00:02.0/0000:04:00.0", numa: "0",
			attrs: map[string]string{"fw_ver": "227.0.130.0", "hca_type": "bnxt_re", "node_guid": "0a0b:0cff:fe0d:0e0f"},
			ports: []fxPort{{num: 1, linkLayer: "Ethernet", state: "4: ACTIVE", physState: "5: LinkUp", rate: "25 Gb/sec (1X EDR)",
				hw:    map[string]string{"rx_bytes": "5000", "tx_bytes": "7000", "rx_pkts": "50", "tx_pkts": "70", "lifespan": "10"},
				ndevs: map[int]string{0: "ens2f0np0"}}},
			netdevs: []fxNetdev{{name: "ens2f0np0", devPort: 0, tx: 1, rx: 2}},
		},
		{
			// A device whose files fail: symbol_error holds garbage; the tests make reads of
			// port_rcv_data, port_xmit_packets and rate fail with errnos through sysfs.Reader.OnOpen.
			name: "mlx5_bad", pciPath: "pci0000:00/0000:00:01.0/0000:02:00.0", numa: "0",
			attrs: map[string]string{"fw_ver": "16.35.2000", "hca_type": "MT4119", "node_guid": "1c34:da03:0055:aa10"},
			ports: []fxPort{{num: 1, linkLayer: "InfiniBand", state: "4: ACTIVE", physState: "5: LinkUp", rate: "56 Gb/sec (4X FDR)",
				counters: func() map[string]string {
					m := extendedCounters(400, 800, 4, 8)
					m["symbol_error"] = "12abc"
					return m
				}()}},
		},
	}
}

// writeNode lays the devices out under root (root/sys/...).
func writeNode(t testing.TB, root string, devs []fxDevice) {
	t.Helper()
	sys := filepath.Join(root, "sys")
	file := func(p, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content+"\n"), 0o644))
	}
	link := func(p, target string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	netdev := func(parentDir, relFromClass string, nd fxNetdev) {
		dir := filepath.Join(parentDir, "net", nd.name)
		file(filepath.Join(dir, "dev_port"), strconv.Itoa(nd.devPort))
		file(filepath.Join(dir, "statistics", "tx_bytes"), u(nd.tx))
		file(filepath.Join(dir, "statistics", "rx_bytes"), u(nd.rx))
		link(filepath.Join(sys, "class", "net", nd.name), filepath.Join("..", "..", relFromClass, "net", nd.name))
	}
	virtualNetdevs := map[string]bool{}
	for _, d := range devs {
		var devDir, rel string
		if d.pciPath != "" {
			fn := filepath.Join(sys, "devices", d.pciPath)
			file(filepath.Join(fn, "numa_node"), d.numa)
			file(filepath.Join(fn, "vendor"), "0x15b3")
			file(filepath.Join(fn, "class"), "0x020000")
			for _, nd := range d.netdevs {
				netdev(fn, filepath.Join("devices", d.pciPath), nd)
			}
			rel = filepath.Join("devices", d.pciPath, "infiniband", d.name)
			devDir = filepath.Join(sys, rel)
			// As the kernel links it: device -> ../../../0000:3b:00.0
			link(filepath.Join(devDir, "device"), "../../../"+filepath.Base(d.pciPath))
		} else {
			rel = filepath.Join("devices", "virtual", "infiniband", d.name)
			devDir = filepath.Join(sys, rel)
		}
		link(filepath.Join(sys, "class", "infiniband", d.name), filepath.Join("..", "..", rel))
		for k, v := range d.attrs {
			file(filepath.Join(devDir, k), v)
		}
		for _, p := range d.ports {
			pd := filepath.Join(devDir, "ports", strconv.Itoa(p.num))
			file(filepath.Join(pd, "link_layer"), p.linkLayer)
			file(filepath.Join(pd, "state"), p.state)
			file(filepath.Join(pd, "phys_state"), p.physState)
			file(filepath.Join(pd, "rate"), p.rate)
			for k, v := range p.counters {
				file(filepath.Join(pd, "counters", k), v)
			}
			for k, v := range p.hw {
				file(filepath.Join(pd, "hw_counters", k), v)
			}
			for i, v := range p.ndevs {
				file(filepath.Join(pd, "gid_attrs", "ndevs", strconv.Itoa(i)), v)
				file(filepath.Join(pd, "gid_attrs", "types", strconv.Itoa(i)), map[bool]string{true: "IB/RoCE v1", false: "RoCE v2"}[i%2 == 0])
				if v == "bond0" || v == "eth0" {
					virtualNetdevs[v] = true
				}
			}
		}
	}
	// The bond is a virtual netdev; eth0 (rxe's parent) is a plain on-board NIC.
	if virtualNetdevs["bond0"] {
		netdev(filepath.Join(sys, "devices", "virtual"), filepath.Join("devices", "virtual"), fxNetdev{name: "bond0", tx: 4000, rx: 3000})
	}
	if virtualNetdevs["eth0"] {
		fn := filepath.Join(sys, "devices", "pci0000:00", "0000:00:1f.6")
		file(filepath.Join(fn, "numa_node"), "-1")
		netdev(fn, filepath.Join("devices", "pci0000:00", "0000:00:1f.6"), fxNetdev{name: "eth0", tx: 9000, rx: 8000})
	}
}

// TestSyntheticFixtureUpToDate keeps testdata/synthetic equal to what writeNode produces.
func TestSyntheticFixtureUpToDate(t *testing.T) {
	dir := filepath.Join("testdata", "synthetic")
	if *update {
		require.NoError(t, os.RemoveAll(dir))
		writeNode(t, dir, syntheticNode())
		return
	}
	fresh := t.TempDir()
	writeNode(t, fresh, syntheticNode())
	want, got := snapshotTree(t, fresh), snapshotTree(t, dir)
	require.Equal(t, want, got, "testdata/synthetic is stale: run go test -run TestSyntheticFixtureUpToDate -update")
}

// snapshotTree maps every path below root to its content, "-> target" for links, "dir" for directories.
func snapshotTree(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(bytes.TrimSpace(b))
		}
		return nil
	}))
	return out
}
