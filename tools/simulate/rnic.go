package simulate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// Simulated node layout: socket 0 has the GPU behind a PCIe switch; the NIC sits on the same
// switch (PIX) or, when misplaced, under a root port of socket 1 (SYS). A third root port (socket
// 0, IIO stack 2, root bus 0x3a, port 0) has the second NIC and the storage controller.
const (
	ibDev     = scenario.NIC
	netdevNm  = scenario.Netdev
	ethtoolNm = netdevNm
	ibDev2    = scenario.NIC2
	netdev2Nm = scenario.Netdev2
)

// bridge is the class of a PCI-to-PCI bridge (root and switch ports).
const bridge = 0x060400

// pciFunction is a PCIe function with a link trained at its full width, no ACS capability and no
// IOMMU group.
func pciFunction(addr string, vendor, device uint16, class uint32, gts float64, width int, children ...testfs.PCIFunction) testfs.PCIFunction {
	return testfs.PCIFunction{Address: addr, Vendor: vendor, DevID: device, Class: class,
		Speed: gts, MaxSpeed: gts, Width: width, MaxWidth: width, IOMMUGroup: -1, Children: children}
}

// pciNode is the node's PCI hierarchy (the GPU, the NICs, the storage controller and the bridges
// above them) and the nic function's path below /sys/devices.
func pciNode(tr scenario.Traffic) (node testfs.PCINode, nicPath string) {
	// ConnectX-6 Dx (15b3:101d, Ethernet controller), trained to NICLinkWidth lanes if set.
	nic := pciFunction("0000:1b:00.0", 0x15b3, 0x101d, 0x020000, 16, 16)
	if tr.NICLinkWidth > 0 {
		nic.Width = tr.NICLinkWidth
	}
	// NVIDIA A100 80GB PCIe (10de:20b5, 3D controller) behind a PLX switch (10b5:9797).
	gpuPort := pciFunction("0000:19:00.0", 0x10b5, 0x9797, bridge, 16, 16,
		pciFunction("0000:1a:00.0", 0x10de, 0x20b5, 0x030200, 16, 16))
	upstream := pciFunction("0000:18:00.0", 0x10b5, 0x9797, bridge, 16, 16, gpuPort)
	socket0 := testfs.PCIRootBus{Name: "pci0000:17", NUMANode: 0}
	if tr.NICOnGPUSwitch {
		upstream.Children = append(upstream.Children, pciFunction("0000:19:01.0", 0x10b5, 0x9797, bridge, 16, 16, nic))
		nicPath = "pci0000:17/0000:17:00.0/0000:18:00.0/0000:19:01.0/" + nic.Address
	}
	socket0.RootPorts = []testfs.PCIFunction{pciFunction("0000:17:00.0", 0x8086, 0x2030, bridge, 8, 16, upstream)}
	node.RootBuses = []testfs.PCIRootBus{socket0}
	if !tr.NICOnGPUSwitch {
		nic.Address = "0000:86:00.0"
		node.RootBuses = append(node.RootBuses, testfs.PCIRootBus{Name: "pci0000:85", NUMANode: 1,
			RootPorts: []testfs.PCIFunction{pciFunction("0000:85:00.0", 0x8086, 0x2030, bridge, 16, 16, nic)}})
		nicPath = "pci0000:85/0000:85:00.0/" + nic.Address
	}
	if tr.SecondNIC || tr.Storage {
		other := pciFunction("0000:3a:00.0", 0x8086, 0x2032, bridge, 16, 16)
		if tr.SecondNIC {
			other.Children = append(other.Children, pciFunction("0000:3f:00.0", 0x15b3, 0x101d, 0x020000, 16, 16))
		}
		if tr.Storage {
			// Samsung PM1733 NVMe SSD (144d:a824, class 0x010802).
			other.Children = append(other.Children, pciFunction("0000:3e:00.0", 0x144d, 0xa824, 0x010802, 16, 4))
		}
		node.RootBuses = append(node.RootBuses, testfs.PCIRootBus{Name: "pci0000:3a", NUMANode: 0,
			RootPorts: []testfs.PCIFunction{other}})
	}
	return node, nicPath
}

// nic2Path is the second NIC's function below /sys/devices.
const nic2Path = "pci0000:3a/0000:3a:00.0/0000:3f:00.0"

// rnicTree is the static part of a node's rnic recording.
func rnicTree(tr scenario.Traffic) []recording.Entry {
	var t testfs.Tree
	t.Dir("sys/class/infiniband")
	node, nicPath := pciNode(tr)
	t.PCINode(node)
	nicNUMA := "0"
	if !tr.NICOnGPUSwitch {
		nicNUMA = "1"
	}
	devs := []testfs.RDMADevice{rdmaDevice(nicPath, nicNUMA, ibDev, netdevNm, rateString(tr))}
	if tr.SecondNIC {
		rate, lanes := tr.SecondRate()
		devs = append(devs, rdmaDevice(nic2Path, "0", ibDev2, netdev2Nm, fmt.Sprintf("%d Gb/sec (%dX EDR)", int(rate), lanes)))
	}
	if err := t.RDMANode(devs); err != nil {
		panic(err) // every device above has a name
	}

	// Drivers: NVIDIA R535 proprietary module (no DMA-BUF), nvidia-peermem when loaded.
	t.Attr("sys/module/nvidia/version", "535.161.08")
	if tr.PeerMem {
		t.Attr("sys/module/nvidia_peermem/initstate", "live")
	}
	t.Attr("proc/sys/kernel/osrelease", "5.15.0-105-generic")
	t.Attr("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build  (dvs-builder@U16-I2-C05-23-1)  Fri Mar  8 21:03:39 UTC 2024")
	return t.Entries()
}

// pciEntries is the part of a node's tree under sys/devices/pci*: the GPU, the NICs, the storage
// controller and the bridges above them. The cpuuncore recording carries it too, so that its
// receiver finds the same devices behind the same root ports as the rnic receiver does.
func pciEntries(tr scenario.Traffic) []recording.Entry {
	var t testfs.Tree
	node, _ := pciNode(tr)
	t.PCINode(node)
	var out []recording.Entry
	for _, e := range t.Entries() {
		if strings.HasPrefix(e.Path, "sys/devices/pci") && e.Link == "" {
			out = append(out, e)
		}
	}
	return out
}

// rdmaDevice is an RDMA device of one Ethernet port (ConnectX-6 Dx firmware and board) on the PCI
// function at pciPath, with the port's netdev, every counter at zero (the samples set them).
func rdmaDevice(pciPath, numa, name, netdev, rate string) testfs.RDMADevice {
	hw := map[string]string{"lifespan": "10"}
	for _, c := range []string{"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent",
		"np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err", "rnr_nak_retry_err",
		"roce_adp_retrans", "rp_cnp_handled", "rp_cnp_ignored", "rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests"} {
		hw[c] = "0"
	}
	return testfs.RDMADevice{
		Name: name, PCIPath: pciPath, NUMA: numa,
		Attrs: map[string]string{"fw_ver": "22.39.1002", "hca_type": scenario.HCAType, "node_guid": "b83f:d203:00a1:b2c4", "board_id": "MT_0000000359"},
		Ports: []testfs.RDMAPort{{
			Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: rate,
			Counters: testfs.ExtendedCounters(0, 0, 0, 0),
			HW:       hw,
			Ndevs:    map[int]string{0: netdev},
			Types:    map[int]string{0: "RoCE v2"},
		}},
		Netdevs: []testfs.RDMANetdev{{Name: netdev}},
	}
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

	// bursts, for a case of scenario.BurstCases, shapes the RDMA bytes and makes every sample
	// carry the fast sampler's sub-interval samples (burstSubSamples); start and interval place
	// them on the recording's time axis.
	bursts   *scenario.Bursts
	start    time.Time
	interval time.Duration
}

// newRNICCounters returns the counters of case c, whose recording starts at start and samples
// every interval.
func newRNICCounters(c scenario.Case, start time.Time, interval time.Duration) rnicCounters {
	rc := rnicCounters{start: start, interval: interval}
	if b, ok := scenario.BurstsOf(c); ok {
		rc.bursts = &b
	}
	return rc
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
	if c.bursts != nil {
		ripple = 1 // the bursts are the shape; they do not wobble
	}
	c.tx += tr.RNICTx * ripple * dt
	c.rx += tr.RNICRx * ripple * dt
	c.ndTx += tr.NetdevTx * ripple * dt
	c.ndRx += tr.NetdevRx * ripple * dt
	var subs *recording.SubSamples
	if c.bursts != nil {
		subs = c.burstSubSamples(tr, i)
		c.tx = c.bursts.Bytes(time.Duration(i+1) * c.interval)
		c.rx = c.tx
	}
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
	b, _ := json.Marshal(recording.RNICSample{Ethtool: stats, Bursts: subs})
	return files, b
}

// burstSubSamples are the fast sampler's readings within sample i, every bursts.Sample up to and
// including the sample's own time: the port's PMA data counters (4-octet words, as the files
// count) in the burst shape, both directions alike (a ring AllReduce sends and receives its
// bucket at once), and the netdev's bytes at its steady rate.
func (c *rnicCounters) burstSubSamples(tr scenario.Traffic, i int) *recording.SubSamples {
	port := "sys/class/infiniband/" + ibDev + "/ports/1/counters/"
	nd := "sys/class/net/" + netdevNm + "/statistics/"
	subs := &recording.SubSamples{Period: recording.Duration(c.bursts.Sample)}
	from := time.Duration(i) * c.interval
	for e := from + c.bursts.Sample; e <= from+c.interval; e += c.bursts.Sample {
		words := uint64(c.bursts.Bytes(e) / 4)
		subs.Add(c.start.Add(e), map[string]uint64{
			port + "port_xmit_data": words,
			port + "port_rcv_data":  words,
			nd + "tx_bytes":         uint64(c.ndTx + tr.NetdevTx*(e-from-c.interval).Seconds()),
			nd + "rx_bytes":         uint64(c.ndRx + tr.NetdevRx*(e-from-c.interval).Seconds()),
		})
	}
	return subs
}
