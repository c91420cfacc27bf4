package testfs

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// RDMA fixture nodes, written the way the kernel lays out sysfs (no public dump of a RoCE mlx5
// tree exists; each part follows the kernel source or document named below). The rnic receiver's
// tests (testdata/synthetic), the simulator (tools/simulate) and the benchmark harness
// (tools/cmd/bench-compare, which points node_exporter at the same tree) share this writer, so it
// is not test-only code:
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

// RDMANetdev is a network device of a PCI function (or a virtual one).
type RDMANetdev struct {
	Name    string
	DevPort int
	TX, RX  uint64
}

// RDMAFunction is a further PCI function of the device's card that carries netdevs but no RDMA
// device of its own: the second port of a RoCE LAG, whose RDMA device the bond replaced.
type RDMAFunction struct {
	PCIPath string
	Netdevs []RDMANetdev
}

// RDMABond is a bonding netdev (/sys/devices/virtual/net/<name>) over physical netdevs of the
// node: the bonding driver links each slave as lower_<slave> and lists them in bonding/slaves
// (Documentation/networking/bonding.rst, "sysfs"; net/core/dev.c netdev_adjacent_sysfs_add).
type RDMABond struct {
	Name    string
	Members []string
	TX, RX  uint64
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	Num       int
	LinkLayer string
	State     string
	PhysState string
	Rate      string
	Counters  map[string]string // nil: no counters/ directory (rxe, bnxt_re)
	HW        map[string]string // nil: no hw_counters/
	// CountersExt is counters_ext/, the 64-bit copies mlx4 adds (nil: none).
	CountersExt map[string]string
	Ndevs       map[int]string // gid_attrs/ndevs/<index>
	// Types are gid_attrs/types/<index> where they are not the default: "IB/RoCE v1" at even
	// indexes, "RoCE v2" at odd ones (drivers/infiniband/core/roce_gid_mgmt.c adds one GID of each
	// type for every address of a RoCE device that supports both; cache.c names the types).
	Types map[int]string
}

// RDMADevice is one RDMA device with its PCI function.
type RDMADevice struct {
	Name    string
	PCIPath string // below /sys/devices; empty for a virtual device
	NUMA    string
	Attrs   map[string]string // fw_ver, hca_type, node_guid, board_id, parent, ...
	Ports   []RDMAPort
	Netdevs []RDMANetdev // the PCI function's netdevs
	// Driver is the PCI function's driver (its `driver` link: mlx5_core, bnxt_en, ice); empty
	// leaves the link out.
	Driver string
	// Vendor is the function's PCI vendor ID as sysfs prints it (pci.ids: 0x14e4 Broadcom, 0x8086
	// Intel, 0x1d0f Amazon); empty is Mellanox's 0x15b3.
	Vendor string
	// DeviceHW is the device-level hw_counters/ (mlx5 in switchdev mode); nil for none.
	DeviceHW map[string]string
	// Functions are the card's other PCI functions (same driver).
	Functions []RDMAFunction
	// Bond is the bond over netdevs of this card, written as a virtual netdev.
	Bond *RDMABond
	// PhysFn is, for an SR-IOV virtual function, the PCIPath of its physical function: the PCI
	// core links the VF to it as `physfn` and the PF to the VF as `virtfn<n>`
	// (drivers/pci/iov.c pci_iov_sysfs_link).
	PhysFn string
	// Modules are kernel modules the device's driver loads (/sys/module/<name>/initstate).
	Modules []string
	// InClass writes the device as a directory in /sys/class/infiniband instead of a link to
	// /sys/devices: what a dump copied with `cp -r` holds, node_exporter's and procfs's fixtures.
	InClass bool
}

// ExtendedCounters returns the 21 files of the extended PMA table (pma_group_ext).
func ExtendedCounters(xmitData, rcvData, xmitPkts, rcvPkts uint64) map[string]string {
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

// BasicCounters returns the 17 files of the basic PMA table (pma_group): no unicast/multicast.
func BasicCounters(xmitData, rcvData, xmitPkts, rcvPkts uint64) map[string]string {
	m := ExtendedCounters(xmitData, rcvData, xmitPkts, rcvPkts)
	for _, k := range []string{"unicast_rcv_packets", "unicast_xmit_packets", "multicast_rcv_packets", "multicast_xmit_packets"} {
		delete(m, k)
	}
	return m
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// SyntheticRDMANode is the node of receiver/rnicreceiver/testdata/synthetic: a RoCE LAG port, a
// 2-port mlx4 function, a 12-port ConnectX-8, Soft-RoCE, Broadcom and a device whose files fail.
func SyntheticRDMANode() []RDMADevice {
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
	bondCounters := ExtendedCounters(85378896588, 34600185253, 82002535, 34914071)

	var cx8Ports []RDMAPort
	for n := 1; n <= 12; n++ {
		// ConnectX-8 multi-plane: 12 ports per device, the data path on ports 3/6/9/12
		// (scitix/sichek PR #98).
		state, phys := "1: DOWN", "3: Disabled"
		if n%3 == 0 {
			state, phys = "4: ACTIVE", "5: LinkUp"
		}
		cx8Ports = append(cx8Ports, RDMAPort{
			Num: n, LinkLayer: "InfiniBand", State: state, PhysState: phys, Rate: "200 Gb/sec (2X NDR)",
			Counters: ExtendedCounters(uint64(n)*1000, uint64(n)*2000, uint64(n), uint64(n)),
		})
	}

	rxeHW := map[string]string{ // rxe_hw_counters.c: the 14 software counters + lifespan
		"sent_pkts": "1200", "rcvd_pkts": "1100", "duplicate_request": "0", "out_of_seq_request": "2",
		"rcvd_rnr_err": "0", "send_rnr_err": "0", "rcvd_seq_err": "1", "retry_exceeded_err": "0",
		"retry_rnr_exceeded_err": "0", "completer_retry_err": "0", "send_err": "0", "link_downed": "0",
		"rdma_sends": "600", "rdma_recvs": "550", "lifespan": "10",
	}

	return []RDMADevice{
		{
			Name: "mlx5_bond_0", PCIPath: "pci0000:3a/0000:3a:00.0/0000:3b:00.0", NUMA: "0",
			Attrs: map[string]string{"fw_ver": "22.39.1002", "hca_type": "MT4125", "node_guid": "b83f:d203:00a1:b2c4", "board_id": "MT_0000000359", "node_type": "1: CA"},
			Ports: []RDMAPort{{
				Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
				Counters: bondCounters, HW: bondHW, Ndevs: map[int]string{0: "bond0", 1: "bond0"},
			}},
			Netdevs: []RDMANetdev{{Name: "ens1f0np0", DevPort: 0, TX: 10, RX: 20}},
			// The bond the GID table names, over the function's netdev (a real bond always has
			// bonding/slaves; testfs.LAGRDMANode has both ports).
			Bond: &RDMABond{Name: "bond0", Members: []string{"ens1f0np0"}, TX: 4000, RX: 3000},
		},
		{
			// A 2-port function whose netdevs are told apart by dev_port; basic (32-bit) PMA table,
			// port 2's port_xmit_data stuck at all ones; no netdev in the GID tables.
			Name: "mlx4_1", PCIPath: "pci0000:00/0000:00:03.0/0000:05:00.0", NUMA: "1",
			Attrs: map[string]string{"fw_ver": "2.42.5000", "hca_type": "MT4099", "node_guid": "0002:c903:0010:1a20", "board_id": "MT_1090120019"},
			Ports: []RDMAPort{
				{Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "40 Gb/sec (4X QDR)",
					Counters: BasicCounters(1000, 2000, 10, 20)},
				{Num: 2, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "10 Gb/sec (1X QDR)",
					Counters: BasicCounters(4294967295, 3000, 30, 40)},
			},
			Netdevs: []RDMANetdev{{Name: "eth4", DevPort: 0, TX: 100, RX: 200}, {Name: "eth5", DevPort: 1, TX: 300, RX: 400}},
		},
		{
			Name: "mlx5_4", PCIPath: "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0", NUMA: "1",
			Attrs:   map[string]string{"fw_ver": "40.44.1036", "hca_type": "MT4131", "node_guid": "a088:c203:0050:6e70"},
			Ports:   cx8Ports,
			Netdevs: []RDMANetdev{{Name: "ibp131s0", DevPort: 0, TX: 5, RX: 6}},
		},
		{
			Name: "rxe0", NUMA: "",
			Attrs: map[string]string{"parent": "eth0", "node_type": "1: CA", "fw_ver": "0.0.0", "node_guid": "5254:00ff:fe12:3456"},
			Ports: []RDMAPort{{Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
				HW: rxeHW, Ndevs: map[int]string{0: "eth0", 1: "eth0"}}},
		},
		{
			// Broadcom: no counters/ directory (procfs #687); byte counters in hw_counters (procfs PR #675).
			Name: "bnxt_re0", PCIPath: "pci0000:00/0000:00:02.0/0000:04:00.0", NUMA: "0",
			Attrs: map[string]string{"fw_ver": "227.0.130.0", "hca_type": "bnxt_re", "node_guid": "0a0b:0cff:fe0d:0e0f"},
			Ports: []RDMAPort{{Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "25 Gb/sec (1X EDR)",
				HW:    map[string]string{"rx_bytes": "5000", "tx_bytes": "7000", "rx_pkts": "50", "tx_pkts": "70", "lifespan": "10"},
				Ndevs: map[int]string{0: "ens2f0np0"}}},
			Netdevs: []RDMANetdev{{Name: "ens2f0np0", DevPort: 0, TX: 1, RX: 2}},
		},
		{
			// A device whose files fail: symbol_error holds garbage; the tests make reads of
			// port_rcv_data, port_xmit_packets and rate fail with errnos through sysfs.Reader.OnOpen.
			Name: "mlx5_bad", PCIPath: "pci0000:00/0000:00:01.0/0000:02:00.0", NUMA: "0",
			Attrs: map[string]string{"fw_ver": "16.35.2000", "hca_type": "MT4119", "node_guid": "1c34:da03:0055:aa10"},
			Ports: []RDMAPort{{Num: 1, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "56 Gb/sec (4X FDR)",
				Counters: func() map[string]string {
					m := ExtendedCounters(400, 800, 4, 8)
					m["symbol_error"] = "12abc"
					return m
				}()}},
		},
	}
}

// BenchRDMANode is the benchmark node: 8 mlx5 RoCE devices of one port each, laid out like
// mlx5_bond_0 of the synthetic node (21 PMA counters, telegraf's 28 hw_counters + lifespan), each
// with its own netdev, on two sockets. It has every file node_exporter's infiniband collector reads.
func BenchRDMANode() []RDMADevice {
	tmpl := SyntheticRDMANode()[0]
	var devs []RDMADevice
	for i := range 8 {
		d := tmpl
		d.Name = fmt.Sprintf("mlx5_%d", i)
		d.PCIPath = fmt.Sprintf("pci0000:%02x/0000:%02x:00.0/0000:%02x:00.0", 0x10*i, 0x10*i, 0x10*i+1)
		d.NUMA = fmt.Sprint(i / 4)
		nd := fmt.Sprintf("ens%dnp0", i)
		p := tmpl.Ports[0]
		p.Ndevs = map[int]string{0: nd}
		d.Ports = []RDMAPort{p}
		d.Netdevs = []RDMANetdev{{Name: nd, TX: 1, RX: 2}}
		d.Bond = nil
		devs = append(devs, d)
	}
	return devs
}

// ScaleRDMANode is BenchRDMANode's mlx5 RoCE device (one port, one netdev) n times, each on a
// PCI function of its own: the node of the scaling benchmark and of the many-ports fault test.
func ScaleRDMANode(n int) []RDMADevice {
	tmpl := BenchRDMANode()[0]
	devs := make([]RDMADevice, 0, n)
	for i := range n {
		d := tmpl
		d.Name = fmt.Sprintf("mlx5_%d", i)
		d.PCIPath = fmt.Sprintf("pci%04x:00/%04x:00:00.0/%04x:01:00.0", i, i, i)
		nd := fmt.Sprintf("ens%dnp0", i)
		p := tmpl.Ports[0]
		p.Ndevs = map[int]string{0: nd}
		d.Ports = []RDMAPort{p}
		d.Netdevs = []RDMANetdev{{Name: nd, TX: 1, RX: 2}}
		devs = append(devs, d)
	}
	return devs
}

// WriteRDMANode lays the devices out under root (root/sys/...). It returns the first error (a
// fixture half written is of no use), naming the path.
func WriteRDMANode(root string, devs []RDMADevice) error {
	var t Tree
	if err := t.RDMANode(devs); err != nil {
		return err
	}
	return t.Write(root)
}

func (t *Tree) rdmaNetdev(parentDir, relFromClass string, nd RDMANetdev) {
	dir := path.Join(parentDir, "net", nd.Name)
	t.Attr(path.Join(dir, "dev_port"), strconv.Itoa(nd.DevPort))
	t.Attr(path.Join(dir, "statistics", "tx_bytes"), u(nd.TX))
	t.Attr(path.Join(dir, "statistics", "rx_bytes"), u(nd.RX))
	t.Link(path.Join("sys", "class", "net", nd.Name), path.Join("..", "..", relFromClass, "net", nd.Name))
}

// rdmaFunction adds a PCI function's identity: numa_node, vendor, class, and the driver link
// (../../../bus/pci/drivers/<name> from a function two levels below /sys/devices/pciD:B).
//
// An empty numa leaves numa_node out, as a kernel without CONFIG_NUMA does
// (drivers/pci/pci-sysfs.c creates it only #ifdef CONFIG_NUMA).
func (t *Tree) rdmaFunction(fn, rel, numa, driver, vendor string) {
	if numa != "" {
		t.Attr(path.Join(fn, "numa_node"), numa)
	}
	if vendor == "" {
		vendor = "0x15b3"
	}
	t.Attr(path.Join(fn, "vendor"), vendor)
	t.Attr(path.Join(fn, "class"), "0x020000")
	if driver != "" {
		t.Link(path.Join(fn, "driver"), strings.Repeat("../", strings.Count(rel, "/")+1)+"bus/pci/drivers/"+driver)
	}
}

// rdmaBond adds a bonding netdev with its lower_<slave> links and bonding/slaves.
func (t *Tree) rdmaBond(b RDMABond) {
	virt := path.Join("sys", "devices", "virtual")
	t.rdmaNetdev(virt, path.Join("devices", "virtual"), RDMANetdev{Name: b.Name, TX: b.TX, RX: b.RX})
	dir := path.Join(virt, "net", b.Name)
	t.Attr(path.Join(dir, "bonding", "slaves"), strings.Join(b.Members, " "))
	for _, m := range b.Members {
		// The kernel links lower_<dev> to the slave's directory under its PCI function; the
		// class link leads to the same directory.
		t.Link(path.Join(dir, "lower_"+m), path.Join("..", "..", "..", "..", "class", "net", m))
	}
}

// RDMANode adds the devices (sys/...).
func (t *Tree) RDMANode(devs []RDMADevice) error {
	virtualNetdevs := map[string]bool{}
	for _, d := range devs {
		if d.Name == "" {
			return errors.New("testfs: RDMA device without a name")
		}
		var devDir, rel string
		for _, f := range d.Functions {
			fn := path.Join("sys", "devices", f.PCIPath)
			t.rdmaFunction(fn, path.Join("devices", f.PCIPath), d.NUMA, d.Driver, d.Vendor)
			for _, nd := range f.Netdevs {
				t.rdmaNetdev(fn, path.Join("devices", f.PCIPath), nd)
			}
		}
		if d.Bond != nil {
			t.rdmaBond(*d.Bond)
		}
		if d.PCIPath != "" {
			fn := path.Join("sys", "devices", d.PCIPath)
			t.rdmaFunction(fn, path.Join("devices", d.PCIPath), d.NUMA, d.Driver, d.Vendor)
			for _, nd := range d.Netdevs {
				t.rdmaNetdev(fn, path.Join("devices", d.PCIPath), nd)
			}
			rel = path.Join("devices", d.PCIPath, "infiniband", d.Name)
			devDir = path.Join("sys", rel)
			// As the kernel links it: device -> ../../../0000:3b:00.0
			t.Link(path.Join(devDir, "device"), "../../../"+path.Base(d.PCIPath))
			if d.PhysFn != "" {
				t.Link(path.Join(fn, "physfn"), "../"+path.Base(d.PhysFn))
				t.Link(path.Join("sys", "devices", d.PhysFn, "virtfn0"), "../"+path.Base(d.PCIPath))
			}
		} else {
			rel = path.Join("devices", "virtual", "infiniband", d.Name)
			devDir = path.Join("sys", rel)
		}
		if d.InClass {
			devDir = path.Join("sys", "class", "infiniband", d.Name)
		} else {
			t.Link(path.Join("sys", "class", "infiniband", d.Name), path.Join("..", "..", rel))
		}
		for _, m := range d.Modules {
			t.Attr(path.Join("sys", "module", m, "initstate"), "live")
		}
		for _, k := range slices.Sorted(maps.Keys(d.Attrs)) {
			t.Attr(path.Join(devDir, k), d.Attrs[k])
		}
		for _, k := range slices.Sorted(maps.Keys(d.DeviceHW)) {
			t.Attr(path.Join(devDir, "hw_counters", k), d.DeviceHW[k])
		}
		for _, p := range d.Ports {
			pd := path.Join(devDir, "ports", strconv.Itoa(p.Num))
			// An empty attribute is left out: a partial dump, or a port reported without it.
			for name, v := range map[string]string{"link_layer": p.LinkLayer, "state": p.State, "phys_state": p.PhysState, "rate": p.Rate} {
				if v != "" {
					t.Attr(path.Join(pd, name), v)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(p.Counters)) {
				t.Attr(path.Join(pd, "counters", k), p.Counters[k])
			}
			for _, k := range slices.Sorted(maps.Keys(p.CountersExt)) {
				t.Attr(path.Join(pd, "counters_ext", k), p.CountersExt[k])
			}
			for _, k := range slices.Sorted(maps.Keys(p.HW)) {
				t.Attr(path.Join(pd, "hw_counters", k), p.HW[k])
			}
			for _, i := range slices.Sorted(maps.Keys(p.Ndevs)) {
				v := p.Ndevs[i]
				t.Attr(path.Join(pd, "gid_attrs", "ndevs", strconv.Itoa(i)), v)
				typ, ok := p.Types[i]
				if !ok {
					typ = map[bool]string{true: "IB/RoCE v1", false: "RoCE v2"}[i%2 == 0]
				}
				t.Attr(path.Join(pd, "gid_attrs", "types", strconv.Itoa(i)), typ)
				if (v == "bond0" && d.Bond == nil) || v == "eth0" {
					virtualNetdevs[v] = true
				}
			}
		}
	}
	// The bond is a virtual netdev; eth0 (rxe's parent) is a plain on-board NIC.
	if virtualNetdevs["bond0"] {
		t.rdmaNetdev(path.Join("sys", "devices", "virtual"), path.Join("devices", "virtual"), RDMANetdev{Name: "bond0", TX: 4000, RX: 3000})
	}
	if virtualNetdevs["eth0"] {
		fn := path.Join("sys", "devices", "pci0000:00", "0000:00:1f.6")
		t.Attr(path.Join(fn, "numa_node"), "-1")
		t.rdmaNetdev(fn, path.Join("devices", "pci0000:00", "0000:00:1f.6"), RDMANetdev{Name: "eth0", TX: 9000, RX: 8000})
	}
	return nil
}
