package simulate

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// tree collects recording entries, the way the kernel lays sysfs out.
type tree struct{ entries []recording.Entry }

func (t *tree) file(p, content string) {
	t.entries = append(t.entries, recording.Entry{Path: p, Data: recording.Text(content + "\n")})
}
func (t *tree) binary(p string, b []byte) {
	t.entries = append(t.entries, recording.Entry{Path: p, B64: b})
}
func (t *tree) link(p, target string) {
	t.entries = append(t.entries, recording.Entry{Path: p, Link: target})
}

// pciFunction writes a PCI function's attributes (drivers/pci/pci-sysfs.c) and its
// /sys/bus/pci/devices link. rel is its directory below sys/devices.
func (t *tree) pciFunction(rel string, vendor, device uint16, class uint32, numa int, gts float64, width int) {
	t.pciFunctionTrained(rel, vendor, device, class, numa, gts, width, width)
}

// pciFunctionTrained is pciFunction for a link that trained to fewer lanes than it has.
func (t *tree) pciFunctionTrained(rel string, vendor, device uint16, class uint32, numa int, gts float64, width, maxWidth int) {
	dir := path.Join("sys/devices", rel)
	addr := path.Base(rel)
	t.file(dir+"/vendor", fmt.Sprintf("0x%04x", vendor))
	t.file(dir+"/device", fmt.Sprintf("0x%04x", device))
	t.file(dir+"/class", fmt.Sprintf("0x%06x", class))
	t.file(dir+"/numa_node", strconv.Itoa(numa))
	if width > 0 {
		speed := strconv.FormatFloat(gts, 'f', 1, 64) + " GT/s PCIe"
		t.file(dir+"/current_link_speed", speed)
		t.file(dir+"/max_link_speed", speed)
		t.file(dir+"/current_link_width", strconv.Itoa(width))
		t.file(dir+"/max_link_width", strconv.Itoa(maxWidth))
	}
	// The header as root reads it; no ACS capability in the extended space.
	cfg := make([]byte, 256)
	cfg[0], cfg[1], cfg[2], cfg[3] = byte(vendor), byte(vendor>>8), byte(device), byte(device>>8)
	cfg[9], cfg[10], cfg[11] = byte(class), byte(class>>8), byte(class>>16)
	t.binary(dir+"/config", cfg)
	t.link("sys/bus/pci/devices/"+addr, "../../../devices/"+rel)
}

// Simulated node layout: socket 0 has the GPU behind a PCIe switch; the NIC sits on the same
// switch (PIX) or, when misplaced, under a root port of socket 1 (SYS).
const (
	rootPort  = "pci0000:17/0000:17:00.0"
	gpuRel    = rootPort + "/0000:18:00.0/0000:19:00.0/0000:1a:00.0"
	nicNear   = rootPort + "/0000:18:00.0/0000:19:01.0/0000:1b:00.0"
	nicFar    = "pci0000:85/0000:85:00.0/0000:86:00.0"
	ibDev     = "mlx5_0"
	netdevNm  = "ens1f0np0"
	ethtoolNm = netdevNm
	// The other root port: socket 0, IIO stack 2 (root bus 0x3a), port 0. The second NIC and
	// the storage controller sit behind it.
	otherPort = "pci0000:3a/0000:3a:00.0"
	nic2Rel   = otherPort + "/0000:3f:00.0"
	nvmeRel   = otherPort + "/0000:3e:00.0"
	ibDev2    = "mlx5_1"
	netdev2Nm = "ens2f0np0"
)

func nicRel(t scenario.Traffic) string {
	if t.NICOnGPUSwitch {
		return nicNear
	}
	return nicFar
}

// rnicTree is the static part of a node's rnic recording.
func rnicTree(tr scenario.Traffic) []recording.Entry {
	t := &tree{}
	t.entries = append(t.entries, recording.Entry{Path: "sys/class/infiniband", Dir: true})
	bridge := uint32(0x060400)
	t.pciFunction(rootPort, 0x8086, 0x2030, bridge, 0, 8, 16)
	t.pciFunction(rootPort+"/0000:18:00.0", 0x10b5, 0x9797, bridge, 0, 16, 16)
	t.pciFunction(rootPort+"/0000:18:00.0/0000:19:00.0", 0x10b5, 0x9797, bridge, 0, 16, 16)
	// NVIDIA A100 80GB PCIe (10de:20b5, 3D controller).
	t.pciFunction(gpuRel, 0x10de, 0x20b5, 0x030200, 0, 16, 16)
	nicNUMA := 0
	if tr.NICOnGPUSwitch {
		t.pciFunction(rootPort+"/0000:18:00.0/0000:19:01.0", 0x10b5, 0x9797, bridge, 0, 16, 16)
	} else {
		nicNUMA = 1
		t.pciFunction("pci0000:85/0000:85:00.0", 0x8086, 0x2030, bridge, 1, 16, 16)
	}
	// ConnectX-6 Dx (15b3:101d, Ethernet controller).
	nic := nicRel(tr)
	width := 16
	if tr.NICLinkWidth > 0 {
		width = tr.NICLinkWidth
	}
	t.pciFunctionTrained(nic, 0x15b3, 0x101d, 0x020000, nicNUMA, 16, width, 16)
	t.rdmaDevice(nic, ibDev, netdevNm, rateString(tr))
	if tr.SecondNIC || tr.Storage {
		t.pciFunction(otherPort, 0x8086, 0x2032, bridge, 0, 16, 16)
	}
	if tr.SecondNIC {
		t.pciFunction(nic2Rel, 0x15b3, 0x101d, 0x020000, 0, 16, 16)
		t.rdmaDevice(nic2Rel, ibDev2, netdev2Nm, rateString(tr))
	}
	if tr.Storage {
		// Samsung PM1733 NVMe SSD (144d:a824, class 0x010802).
		t.pciFunction(nvmeRel, 0x144d, 0xa824, 0x010802, 0, 16, 4)
	}

	// Drivers: NVIDIA R535 proprietary module (no DMA-BUF), nvidia-peermem when loaded.
	t.file("sys/module/nvidia/version", "535.161.08")
	if tr.PeerMem {
		t.file("sys/module/nvidia_peermem/initstate", "live")
	}
	t.file("proc/sys/kernel/osrelease", "5.15.0-105-generic")
	t.file("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build  (dvs-builder@U16-I2-C05-23-1)  Fri Mar  8 21:03:39 UTC 2024")
	return t.entries
}

// pciEntries is the part of a node's tree under sys/devices/pci*: the GPU, the NICs, the storage
// controller and the bridges above them. The cpuuncore recording carries it too, so that its
// receiver finds the same devices behind the same root ports as the rnic receiver does.
func pciEntries(tr scenario.Traffic) []recording.Entry {
	var out []recording.Entry
	for _, e := range rnicTree(tr) {
		if strings.HasPrefix(e.Path, "sys/devices/pci") && e.Link == "" && !strings.Contains(e.Path, "/infiniband/") && !strings.Contains(e.Path, "/net/") {
			out = append(out, e)
		}
	}
	return out
}

// rdmaDevice writes an RDMA device of one Ethernet port on the PCI function at nic, and the
// port's netdev, as drivers/infiniband/core/sysfs.c and net/core/net-sysfs.c lay them out.
func (t *tree) rdmaDevice(nic, ibDev, netdevNm, rate string) {
	ib := path.Join("sys/devices", nic, "infiniband", ibDev)
	t.link(ib+"/device", "../../../"+path.Base(nic))
	t.file(ib+"/fw_ver", "22.39.1002")
	t.file(ib+"/hca_type", "MT4125")
	t.file(ib+"/node_guid", "b83f:d203:00a1:b2c4")
	t.file(ib+"/board_id", "MT_0000000359")
	port := ib + "/ports/1"
	t.file(port+"/link_layer", "Ethernet")
	t.file(port+"/state", "4: ACTIVE")
	t.file(port+"/phys_state", "5: LinkUp")
	t.file(port+"/rate", rate)
	for _, c := range []string{"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
		"local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets", "port_rcv_constraint_errors",
		"port_rcv_data", "port_rcv_errors", "port_rcv_packets", "port_rcv_remote_physical_errors",
		"port_rcv_switch_relay_errors", "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards",
		"port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets"} {
		t.file(port+"/counters/"+c, "0")
	}
	for _, c := range []string{"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent",
		"np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err", "rnr_nak_retry_err",
		"roce_adp_retrans", "rp_cnp_handled", "rp_cnp_ignored", "rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests"} {
		t.file(port+"/hw_counters/"+c, "0")
	}
	t.file(port+"/hw_counters/lifespan", "10")
	t.file(port+"/gid_attrs/ndevs/0", netdevNm)
	t.file(port+"/gid_attrs/types/0", "RoCE v2")
	t.link("sys/class/infiniband/"+ibDev, "../../devices/"+nic+"/infiniband/"+ibDev)

	nd := path.Join("sys/devices", nic, "net", netdevNm)
	t.file(nd+"/dev_port", "0")
	t.file(nd+"/statistics/tx_bytes", "0")
	t.file(nd+"/statistics/rx_bytes", "0")
	t.link("sys/class/net/"+netdevNm, "../../devices/"+nic+"/net/"+netdevNm)
}

func rateString(tr scenario.Traffic) string {
	// The kernel prints the IB speed name of the per-lane rate (25 Gb/s lanes: EDR).
	return fmt.Sprintf("%d Gb/sec (%dX EDR)", int(tr.RateGbps), tr.Lanes)
}

// rnicCounters is the running state of a node's port counters.
type rnicCounters struct {
	tx, rx, ndTx, ndRx, wait, cnpSent, cnpHandled, ecn float64
	rxPause, txPause, rxPauseUs, stormWarn, stormErr   float64
	nd2Tx, nd2Rx                                       float64
}

// step advances the counters by one interval of dt seconds and returns the files the receiver
// reads that changed, and the ethtool statistics.
func (c *rnicCounters) step(tr scenario.Traffic, i, node int, dt float64) (map[string]string, []byte) {
	w := scenario.Wobble(i, node)
	pinned := 1.0
	if tr.XmitWaitPerSec > 0 && tr.CNPSentPerSec > 0 {
		pinned = 0 // congested: the port runs at the limit, not at the loop's ripple
	}
	ripple := 1 + (w-1)*pinned
	c.tx += tr.RNICTx * ripple * dt
	c.rx += tr.RNICRx * ripple * dt
	c.ndTx += tr.NetdevTx * ripple * dt
	c.ndRx += tr.NetdevRx * ripple * dt
	// port_xmit_wait is 32 bits wide and stops at all ones (IBA 16.1.3.5): a storm saturates it.
	c.wait = math.Min(c.wait+tr.XmitWaitPerSec*dt, math.MaxUint32)
	c.cnpSent += tr.CNPSentPerSec * dt
	c.cnpHandled += tr.CNPHandledPerSec * dt
	c.ecn += tr.ECNMarkedPerSec * dt
	c.rxPause += tr.PFCRxPausePerSec * dt
	c.txPause += tr.PFCTxPausePerSec * dt
	c.rxPauseUs += tr.PFCRxPauseUsPerSec * dt
	c.stormWarn += tr.StormWarningsPerMin * dt / 60
	c.stormErr += tr.StormErrorsPerMin * dt / 60

	u := func(v float64) string { return strconv.FormatUint(uint64(v), 10) }
	port := "sys/class/infiniband/" + ibDev + "/ports/1/"
	files := map[string]string{
		port + "counters/port_xmit_data":                u(c.tx / 4),
		port + "counters/port_rcv_data":                 u(c.rx / 4),
		port + "counters/port_xmit_packets":             u(c.tx / scenario.MTU),
		port + "counters/port_rcv_packets":              u(c.rx / scenario.MTU),
		port + "counters/unicast_xmit_packets":          u(c.tx / scenario.MTU),
		port + "counters/unicast_rcv_packets":           u(c.rx / scenario.MTU),
		port + "counters/port_xmit_wait":                u(c.wait),
		port + "hw_counters/np_cnp_sent":                u(c.cnpSent),
		port + "hw_counters/rp_cnp_handled":             u(c.cnpHandled),
		port + "hw_counters/np_ecn_marked_roce_packets": u(c.ecn),
		port + "rate": rateString(tr),
		"sys/class/net/" + netdevNm + "/statistics/tx_bytes": u(c.ndTx),
		"sys/class/net/" + netdevNm + "/statistics/rx_bytes": u(c.ndRx),
	}
	if tr.SecondNIC {
		c.nd2Tx += tr.SecondNetdevTx * ripple * dt
		c.nd2Rx += tr.SecondNetdevRx * ripple * dt
		files["sys/class/net/"+netdev2Nm+"/statistics/tx_bytes"] = u(c.nd2Tx)
		files["sys/class/net/"+netdev2Nm+"/statistics/rx_bytes"] = u(c.nd2Rx)
	}
	for k, v := range files {
		files[k] = v + "\n"
	}
	// The physical port counts everything with Ethernet headers and FCS (about 1.5 % more).
	eth := map[string]uint64{
		"rx_prio3_pause":                uint64(c.rxPause),
		"tx_prio3_pause":                uint64(c.txPause),
		"rx_prio3_pause_duration":       uint64(c.rxPauseUs),
		"tx_prio3_pause_duration":       0,
		"rx_pause_ctrl_phy":             0,
		"tx_pause_ctrl_phy":             0,
		"tx_pause_storm_warning_events": uint64(c.stormWarn),
		"tx_pause_storm_error_events":   uint64(c.stormErr),
		"tx_bytes_phy":                  uint64((c.tx + c.ndTx) * 1.015),
		"rx_bytes_phy":                  uint64((c.rx + c.ndRx) * 1.015),
		"rx_discards_phy":               0,
		"tx_discards_phy":               0,
	}
	stats := map[string]map[string]uint64{ethtoolNm: eth}
	if tr.SecondNIC {
		eth2 := map[string]uint64{}
		for k := range eth {
			eth2[k] = 0
		}
		eth2["tx_bytes_phy"] = uint64(c.nd2Tx * 1.015)
		eth2["rx_bytes_phy"] = uint64(c.nd2Rx * 1.015)
		stats[netdev2Nm] = eth2
	}
	b, _ := json.Marshal(recording.RNICSample{Ethtool: stats})
	return files, b
}
