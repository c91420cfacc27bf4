package simulate

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The two-job node as recordings (issue #21): one 8-GPU node shared by two batch jobs, replayed
// through the real rnic, cpuuncore and gpu receivers beside the real owner receiver, which reads a
// root_path laid out from the same PCI definition (TwoJobPCINode) and the Slurm mapping directory
// WriteSlurmMapping writes. Job slot 0 (job 4711) carries node1 of healthy_allreduce, slot 1 (job
// 4712, 4713 from the switch) node1 of gdr_bounce, as scenario.TwoJobStream does: each slot's GPU
// bytes split evenly over its four GPUs, host memory the node's.
//
// The topology, DGX-like: per socket one root port (IIO stack 1, port 0 of the skx fixture's
// mapping: root bus 0x17 on socket 0, 0x85 on socket 1) -> a PCIe switch -> the slot's four GPUs
// and its NIC, each on a downstream port of its own, so that each NIC is PIX-nearest to its four
// GPUs and nothing else (nvidia-smi topo -m: PIX within the switch, SYS across the sockets). The
// owner receiver gives each NIC the single owner of those GPUs, and each root port the single
// owner of every GPU and NIC below it.
//
// Fidelity: gdr_bounce's rates are kept, but its NIC sits on its GPUs' switch here (the node
// needs it for the NIC rule) and nvidia-peermem is loaded for the whole node (slot 0 needs it), so
// the bounce is the job's own doing, as NCCL_NET_GDR_LEVEL=LOC makes it (transition_gdr_bounce's
// staging): both the GPUs' staging copies (CPUPCIeRx) and the NIC's DMA (NICRootRx) cross the
// slot's one root port. The CPUs stay the skx fixture's Skylake-SP (PCIe Gen3 root ports) under
// Gen5 switches and H100 SXM GPUs: the switch's uplink trains at the root port's 8 GT/s, the GPUs'
// links at 32 GT/s, as a Gen5 switch behind a Gen3 host does.

// TwoJobCase is the directory the two-job recordings go to, and TwoJobNode their host.
const (
	TwoJobCase = "two_jobs"
	TwoJobNode = "node1"
)

// TwoJobCases are the cases job slots 0 and 1 carry (node1 of each).
func TwoJobCases() [2]scenario.Case {
	a, _ := scenario.Named("healthy_allreduce")
	b, _ := scenario.Named("gdr_bounce")
	return [2]scenario.Case{a, b}
}

// twoJobRootBus is slot j's host bridge: the skx fixture's uncore_iio_1 die0 (0000:17) and die1
// (0000:85) mapping, so that the cpuuncore receiver maps IIO stack 1 of socket j to it.
func twoJobRootBus(j int) int { return 0x17 + j*(0x85-0x17) }

// TwoJobRootPort is slot j's root port: device 0 on its root bus, IIO part 0 of stack 1
// (cpuuncorereceiver's SKX part -> root port device mapping, port = device).
func TwoJobRootPort(j int) string { return testfs.FunctionAddress(twoJobRootBus(j), 0, 0) }

// TwoJobGPUBus is the PCI address of GPU k (0-3) of slot j: below the switch's downstream port k,
// buses root+3 .. root+6 (root port -> root+1 switch upstream -> root+2 downstream ports).
func TwoJobGPUBus(j, k int) string { return testfs.FunctionAddress(twoJobRootBus(j)+3+k, 0, 0) }

// TwoJobNICBus is slot j's NIC: below downstream port 4 of the same switch.
func TwoJobNICBus(j int) string {
	return testfs.FunctionAddress(twoJobRootBus(j)+3+scenario.JobGPUs, 0, 0)
}

// twoJobStackDevice is how the cpuuncore receiver names slot j's IIO part at port granularity.
func twoJobStackDevice(j int) string {
	return fmt.Sprintf("socket%d/iio%d/port%d", j, gpuStack, gpuPort)
}

// h100 is an NVIDIA H100 SXM5 80GB (10de:2330, 3D controller) as the driver names it, PCIe Gen5 x16.
const (
	h100Model  = "NVIDIA H100 80GB HBM3"
	h100Device = 0x2330
	h100GTs    = 32
	h100Gen    = 5
)

// TwoJobGPUUUID is GPU g's (0-7) UUID, the same in DCGM's facts and the driver's procfs.
func TwoJobGPUUUID(g int) string { return fmt.Sprintf("GPU-7a3c%04d-5b2e-4c1d-8e0f-0123456789ab", g) }

// TwoJobPCINode is the node's PCI hierarchy: per slot a root port, a Broadcom PEX89xxx Gen5
// switch (1000:c030) with five downstream ports, four H100s and a ConnectX-6 Dx.
func TwoJobPCINode() testfs.PCINode {
	var node testfs.PCINode
	for j := range 2 {
		root := twoJobRootBus(j)
		var down []testfs.PCIFunction
		for k := range scenario.JobGPUs + 1 {
			// The endpoint below downstream port k: a GPU, or (k = 4) the slot's NIC.
			ep := pciFunction(TwoJobGPUBus(j, k), 0x10de, h100Device, 0x030200, h100GTs, 16)
			if k == scenario.JobGPUs {
				// ConnectX-6 Dx (15b3:101d, Ethernet controller), PCIe Gen4 x16.
				ep = pciFunction(TwoJobNICBus(j), 0x15b3, 0x101d, 0x020000, 16, 16)
			}
			down = append(down, pciFunction(testfs.FunctionAddress(root+2, k, 0), 0x1000, 0xc030, bridge, ep.Speed, 16, ep))
		}
		upstream := pciFunction(testfs.FunctionAddress(root+1, 0, 0), 0x1000, 0xc030, bridge, 8, 16, down...)
		// Skylake-SP root port (8086:2030), PCIe Gen3 x16.
		port := pciFunction(TwoJobRootPort(j), 0x8086, 0x2030, bridge, 8, 16, upstream)
		node.RootBuses = append(node.RootBuses, testfs.PCIRootBus{Name: fmt.Sprintf("pci0000:%02x", root), NUMANode: j,
			RootPorts: []testfs.PCIFunction{port}})
	}
	return node
}

// twoJobTree is the node's static tree: the PCI hierarchy, the RDMA devices and netdevs, the
// NVIDIA driver (R535 with nvidia-peermem) and its per-GPU procfs files. It is the rnic recording's
// tree and, written out (WriteTwoJobRoot), the owner receiver's root_path.
func twoJobTree() *testfs.Tree {
	t := &testfs.Tree{}
	t.Dir("sys/class/infiniband")
	node := TwoJobPCINode()
	t.PCINode(node)
	var devs []testfs.RDMADevice
	for j := range 2 {
		rel := strings.TrimPrefix(testfs.FunctionRel(node, TwoJobNICBus(j)), "devices/")
		devs = append(devs, rdmaDevice(rel, strconv.Itoa(j), scenario.JobNIC(j), scenario.JobNetdev(j), rateString(TwoJobCases()[j].At(0, 0))))
	}
	if err := t.RDMANode(devs); err != nil {
		panic(err) // every device above has a name
	}
	t.Attr("sys/module/nvidia/version", "535.161.08")
	t.Attr("sys/module/nvidia_peermem/initstate", "live")
	t.Attr("proc/sys/kernel/osrelease", "5.15.0-105-generic")
	t.Attr("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build  (dvs-builder@U16-I2-C05-23-1)  Fri Mar  8 21:03:39 UTC 2024")
	// /proc/driver/nvidia/gpus/<address>/information (nv-procfs.c), minor = index as on a DGX.
	var gpus []testfs.NvidiaGPU
	for j := range 2 {
		for k := range scenario.JobGPUs {
			g := scenario.JobGPUs*j + k
			gpus = append(gpus, testfs.NvidiaGPU{BusID: TwoJobGPUBus(j, k), UUID: TwoJobGPUUUID(g), Model: h100Model, Minor: g})
		}
	}
	t.NvidiaGPUs(gpus)
	return t
}

// WriteTwoJobRoot writes the two-job node's sysfs and procfs under root, for the owner receiver's
// root_path: the same tree the rnic recording carries.
func WriteTwoJobRoot(root string) error { return twoJobTree().Write(root) }

// TwoJobSeries is one interconnect.io series of the two-job node as the receivers key it, with
// whose it is by the model: Slot 0 or 1 for a device of that job slot, -1 for one of nobody alone
// (Kind "shared": an IIO part with no root port of a slot; "node": host memory).
type TwoJobSeries struct {
	Component, Direction, Device, BusID string
	Slot                                int
	Kind                                string
}

// Key is the series' identity: component, direction, device and pci.bus_id.
func (s TwoJobSeries) Key() string {
	return s.Component + " " + s.Direction + " " + s.Device + " " + s.BusID
}

// TwoJobBytes returns the bytes each interconnect.io series of the node carries in sample i (the
// model's rates over one interval of dt seconds, the ripple included) as the recordings hold
// them; the series of zero traffic (the IIO parts of no root port, the stacks of no slot) are
// left out.
func TwoJobBytes(i int, dt float64) map[TwoJobSeries]float64 {
	out := map[TwoJobSeries]float64{}
	w := scenario.Wobble(i, 0)
	for j, c := range TwoJobCases() {
		tr := c.At(i, 0)
		ripple := rnicRipple(tr, w)
		nic, port, nd := TwoJobNICBus(j), scenario.JobPort(j), scenario.JobNetdev(j)
		add := func(comp, dir, dev, bus string, rate float64) {
			out[TwoJobSeries{Component: comp, Direction: dir, Device: dev, BusID: bus, Slot: j, Kind: "job"}] += rate * dt
		}
		add("rnic", "transmit", port, nic, tr.RNICTx*ripple)
		add("rnic", "receive", port, nic, tr.RNICRx*ripple)
		add("netdev", "transmit", nd, nic, tr.NetdevTx*ripple)
		add("netdev", "receive", nd, nic, tr.NetdevRx*ripple)
		for k := range scenario.JobGPUs {
			add("gpu_pcie", "transmit", scenario.JobGPU(j, k), TwoJobGPUBus(j, k), tr.GPUPCIeTx*w/scenario.JobGPUs)
			add("gpu_pcie", "receive", scenario.JobGPU(j, k), TwoJobGPUBus(j, k), tr.GPUPCIeRx*w/scenario.JobGPUs)
		}
		rx, tx := slotRootPort(tr)
		add("cpu_pcie", "receive", twoJobStackDevice(j), TwoJobRootPort(j), rx*w)
		add("cpu_pcie", "transmit", twoJobStackDevice(j), TwoJobRootPort(j), tx*w)
		for s := range 2 {
			read, write := slotMemory(tr, j, s)
			mem := func(dir string, rate float64) {
				out[TwoJobSeries{Component: "cpu_memory", Direction: dir, Device: fmt.Sprintf("socket%d/imc", s), Slot: -1, Kind: "node"}] += rate * w * dt
			}
			mem("read", read)
			mem("write", write)
		}
	}
	return out
}

// rnicRipple is the ripple of the port's bytes (rnicCounters.step): none on a congested port.
func rnicRipple(tr scenario.Traffic, w float64) float64 {
	if tr.XmitWaitPerSec > 0 && tr.CNPSentPerSec > 0 {
		return 1
	}
	return w
}

// slotRootPort is what a slot's root port carries each way (bytes/s, before the ripple): the
// GPUs' and, as the NIC sits on their switch, the NIC's device -> host writes and host -> device
// reads.
func slotRootPort(tr scenario.Traffic) (rx, tx float64) {
	return tr.CPUPCIeRx + tr.NICRootRx + tr.OtherRootRx, tr.CPUPCIeTx + tr.NICRootTx + tr.OtherRootTx
}

// slotMemory is slot j's host memory traffic on socket s (bytes/s, before the ripple): its own
// socket carries its buffers (NCCL allocates its host buffers on the NIC's NUMA node), the other
// socket the background share the single-node model gives the idle socket (socket1Share).
func slotMemory(tr scenario.Traffic, j, s int) (read, write float64) {
	share := 1.0
	if s != j {
		share = socket1Share
	}
	return tr.MemRead * share, tr.MemWrite * share
}

// WriteTwoJob writes the two-job node's recordings to o.Dir/two_jobs/node1-{rnic,cpuuncore,gpu}.jsonl
// and returns their paths. The recordings do not depend on the job switch: a job's bytes are its
// slot's, and who holds a slot is the mapping directory's (WriteSlurmMapping).
func WriteTwoJob(o Options) ([]string, error) {
	if o.Interval <= 0 || o.Samples < 2 {
		return nil, fmt.Errorf("simulate: need an interval and at least 2 samples")
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	}
	host, err := loadTwoJobUncoreHost(o.UncoreFixture)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.Dir, TwoJobCase)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cases := TwoJobCases()
	note := fmt.Sprintf("simulated two-job node: gpu0-3 and %s job %s (%s), gpu4-7 and %s job %s then %s (%s)",
		scenario.JobNIC(0), scenario.JobA, cases[0].Name, scenario.JobNIC(1), scenario.JobB, scenario.JobC, cases[1].Name)
	var ws []*recording.Writer
	var paths []string
	open := func(receiver string) (*recording.Writer, error) {
		p := filepath.Join(dir, TwoJobNode+"-"+receiver+".jsonl")
		w, err := recording.Create(p, recording.Header{Receiver: receiver, Host: TwoJobNode, Created: o.Start,
			Interval: recording.Duration(o.Interval), Note: note})
		if err == nil {
			ws, paths = append(ws, w), append(paths, p)
		}
		return w, err
	}
	err = func() error {
		rw, err := open("rnic")
		if err != nil {
			return err
		}
		uw, err := open("cpuuncore")
		if err != nil {
			return err
		}
		gw, err := open("gpu")
		if err != nil {
			return err
		}
		if err := rw.Write(recording.Record{Time: o.Start, Tree: twoJobTree().Entries()}); err != nil {
			return err
		}
		if err := uw.Write(recording.Record{Time: o.Start, Tree: host.tree}); err != nil {
			return err
		}
		if err := gw.Write(recording.Record{Time: o.Start, Facts: twoJobGPUFacts(o.Interval)}); err != nil {
			return err
		}
		var rc [2]rnicCounters
		var uc twoJobUncoreCounters
		dt := o.Interval.Seconds()
		for i := range o.Samples {
			at := o.Start.Add(time.Duration(i+1) * o.Interval)
			files, eth := map[string]string{}, map[string]map[string]uint64{}
			for j := range 2 {
				rc[j].stepSlot(cases[j].At(i, 0), j, i, dt, files, eth)
			}
			b, _ := json.Marshal(recording.RNICSample{Ethtool: eth})
			if err := rw.Write(recording.Record{Time: at, Files: files, Sample: b}); err != nil {
				return err
			}
			if err := uw.Write(recording.Record{Time: at, Sample: uc.step(host, i, dt)}); err != nil {
				return err
			}
			if err := gw.Write(recording.Record{Time: at, Sample: twoJobGPUSample(i, at)}); err != nil {
				return err
			}
		}
		return nil
	}()
	for _, w := range ws {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	return paths, err
}

// stepSlot advances slot j's port and netdev counters by one interval and adds the files the rnic
// receiver reads (sysfs: PMA counters in 4-octet words, drivers/infiniband/core/sysfs.c; netdev
// statistics in bytes) and the netdev's ethtool statistics (mlx5 en_stats.c names) to files and eth.
func (c *rnicCounters) stepSlot(tr scenario.Traffic, j, i int, dt float64, files map[string]string, eth map[string]map[string]uint64) {
	ripple := rnicRipple(tr, scenario.Wobble(i, 0))
	c.tx += tr.RNICTx * ripple * dt
	c.rx += tr.RNICRx * ripple * dt
	c.ndTx += tr.NetdevTx * ripple * dt
	c.ndRx += tr.NetdevRx * ripple * dt
	c.wait = min(c.wait+tr.XmitWaitPerSec*dt, 1<<32-1) // 32 bits, stops at all ones (IBA 16.1.3.5)
	c.cnpSent += tr.CNPSentPerSec * dt
	c.cnpHandled += tr.CNPHandledPerSec * dt
	c.ecn += tr.ECNMarkedPerSec * dt
	c.rxPause += tr.PFCRxPausePerSec * dt
	c.txPause += tr.PFCTxPausePerSec * dt
	c.rxPauseUs += tr.PFCRxPauseUsPerSec * dt
	u := func(v float64) string { return strconv.FormatUint(uint64(v), 10) + "\n" }
	port := "sys/class/infiniband/" + scenario.JobNIC(j) + "/ports/1/"
	nd := "sys/class/net/" + scenario.JobNetdev(j) + "/statistics/"
	for k, v := range map[string]string{
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
		port + "rate":   rateString(tr) + "\n",
		nd + "tx_bytes": u(c.ndTx),
		nd + "rx_bytes": u(c.ndRx),
	} {
		files[k] = v
	}
	// The physical port counts everything with Ethernet headers and FCS (about 1.5 % more).
	eth[scenario.JobNetdev(j)] = map[string]uint64{
		"rx_prio3_pause": uint64(c.rxPause), "tx_prio3_pause": uint64(c.txPause),
		"rx_prio3_pause_duration": uint64(c.rxPauseUs), "tx_prio3_pause_duration": 0,
		"rx_pause_ctrl_phy": 0, "tx_pause_ctrl_phy": 0,
		"tx_pause_storm_warning_events": 0, "tx_pause_storm_error_events": 0,
		"tx_bytes_phy": uint64((c.tx + c.ndTx) * 1.015), "rx_bytes_phy": uint64((c.rx + c.ndRx) * 1.015),
		"rx_discards_phy": 0, "tx_discards_phy": 0,
	}
}

// twoJobGPUFacts is the gpu receiver's Facts payload: the node's eight H100s as DCGM lists them
// (DCGM entity ids in PCI order, gpu<id>), with the driver's UUIDs and the slots' NUMA nodes.
func twoJobGPUFacts(sample time.Duration) []byte {
	var devs []recording.GPUDevice
	for j := range 2 {
		for k := range scenario.JobGPUs {
			g := scenario.JobGPUs*j + k
			devs = append(devs, recording.GPUDevice{ID: uint(g), Name: scenario.JobGPU(j, k), UUID: TwoJobGPUUUID(g),
				Model: h100Model, BusID: TwoJobGPUBus(j, k), NUMANode: int64(j)})
		}
	}
	b, _ := json.Marshal(recording.GPUFacts{Source: "dcgm", SampleIntervalUs: sample.Microseconds(), Devices: devs})
	return b
}

// twoJobGPUSample is one DCGM poll of the eight GPUs (gpuSample's quantities per GPU): each slot's
// GPU bytes split evenly over its four GPUs (DCGM_FI_PROF_PCIE_TX/RX_BYTES, bytes/s over the
// sample period), the activity ratios the slot's GPU has, the links at Gen5 x16.
func twoJobGPUSample(i int, at time.Time) []byte {
	w := scenario.Wobble(i, 0)
	ts := at.UnixMicro()
	var vals []recording.GPUValue
	for j, c := range TwoJobCases() {
		tr := c.At(i, 0)
		for k := range scenario.JobGPUs {
			g := scenario.JobGPUs*j + k
			f := func(q string, v float64) recording.GPUValue {
				return recording.GPUValue{GPU: g, Q: q, TS: ts, Valid: true, F: v}
			}
			u := func(q string, v uint64) recording.GPUValue {
				return recording.GPUValue{GPU: g, Q: q, TS: ts, Valid: true, U: v}
			}
			linkGen := uint64(h100Gen)
			if tr.SMActive == 0 {
				linkGen = 1 // an idle GPU runs its link at Gen1 (nvidia-smi -q "PCIe Generation Current")
			}
			vals = append(vals,
				f("pcie_tx_rate", tr.GPUPCIeTx*w/scenario.JobGPUs),
				f("pcie_rx_rate", tr.GPUPCIeRx*w/scenario.JobGPUs),
				f("dram_active", tr.DRAMActive*w),
				f("mem_copy_util", tr.DRAMActive*w*0.8),
				f("sm_active", tr.SMActive*w),
				f("gr_engine_active", min(1, tr.SMActive*w*1.3)),
				f("gpu_util", min(1, tr.SMActive*w*1.5)),
				u("pcie_link_gen", linkGen), u("pcie_max_link_gen", h100Gen),
				u("pcie_link_width", tr.LinkWidthOfGPU()), u("pcie_max_link_width", 16),
				u("pcie_replays", 0))
		}
	}
	b, _ := json.Marshal(recording.GPUSample{Samples: vals})
	return b
}

// loadTwoJobUncoreHost is the skx fixture's host with the two-job node's PCI tree instead of the
// fixture's own devices (so that the cpuuncore receiver finds the very root ports the owner
// receiver does), and the programmable transmit events also per IIO part (ch_mask 1<<part:
// perfmon skylakex UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PARTn and DATA_REQ_BY_CPU.MEM_WRITE.PARTn),
// which the receiver opens at pcie granularity port.
func loadTwoJobUncoreHost(fixture string) (*uncoreHost, error) {
	h, err := loadUncoreHost(fixture)
	if err != nil {
		return nil, err
	}
	var tree []recording.Entry
	for _, e := range h.tree {
		if !strings.HasPrefix(e.Path, "sys/devices/pci") {
			tree = append(tree, e)
		}
	}
	var t testfs.Tree
	t.PCINode(TwoJobPCINode())
	for _, e := range t.Entries() {
		if strings.HasPrefix(e.Path, "sys/devices/pci") && e.Link == "" {
			tree = append(tree, e)
		}
	}
	h.tree = tree
	var r sysfs.Reader
	devices := filepath.Join(fixture, "sys", "bus", "event_source", "devices")
	var parts []uncoreEvent
	for _, e := range h.events {
		if e.kind != "out_stack" && e.kind != "mmio" {
			continue
		}
		pmu, err := perf.LoadPMU(&r, path.Join(devices, e.pmu))
		if err != nil {
			return nil, err
		}
		code := "event=0x83,umask=0x04"
		kind := "out_part"
		if e.kind == "mmio" {
			code, kind = "event=0xc0,umask=0x01", "mmio_part"
		}
		for p := range 4 {
			attr, err := pmu.EncodeString(fmt.Sprintf("%s,ch_mask=%#x,fc_mask=0x7", code, 1<<p))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.pmu, err)
			}
			parts = append(parts, uncoreEvent{cpu: e.cpu, pmu: e.pmu, attr: attr, bytes: e.bytes, socket: e.socket, kind: kind, stack: e.stack, port: p})
		}
	}
	h.events = append(h.events, parts...)
	return h, nil
}

// twoJobUncoreCounters is the running state of every event of the two-job host.
type twoJobUncoreCounters struct {
	counts  []float64
	elapsed float64
}

// step advances every event by one interval: host memory per socket (slotMemory), over its IMCs;
// slot j's root port (stack 1, part 0 of socket j) its slotRootPort bytes, in the free-running
// bw_in/bw_out counters and the programmable transmit events, stack-wide and of part 0 alike; the
// CPU's MMIO writes none.
func (c *twoJobUncoreCounters) step(h *uncoreHost, i int, dt float64) []byte {
	if c.counts == nil {
		c.counts = make([]float64, len(h.events))
	}
	c.elapsed += dt
	w := scenario.Wobble(i, 0)
	cases := TwoJobCases()
	out := make([]recording.PerfReading, len(h.events))
	for k, e := range h.events {
		var bytes float64
		for j, cs := range cases {
			tr := cs.At(i, 0)
			read, write := slotMemory(tr, j, e.socket)
			rx, tx := slotRootPort(tr)
			onPort := e.socket == j && e.stack == gpuStack && e.port == gpuPort
			switch e.kind {
			case "read":
				bytes += read * w / float64(h.imcs)
			case "write":
				bytes += write * w / float64(h.imcs)
			case "in":
				if onPort {
					bytes += rx * w
				}
			case "out", "out_stack", "out_part":
				if onPort {
					bytes += tx * w
				}
			}
		}
		c.counts[k] += bytes * dt / e.bytes
		out[k] = e.reading(c.counts[k], c.elapsed)
	}
	b, _ := json.Marshal(recording.PerfSample{Perf: out})
	return b
}

// TwoJobFirstCounted is the first sample whose bytes a receiver's interconnect.io counter holds:
// the rnic and gpu receivers take their first reading as the counter's start (the port counters'
// value then; the first DCGM poll only opens the integral), while the cpuuncore receiver counts
// from the perf events' opening, so its first reading carries that sample's bytes
// (TestTwoJobRecordingsThroughReceivers checks both).
func TwoJobFirstCounted(component string) int {
	if component == "cpu_pcie" || component == "cpu_memory" {
		return 0
	}
	return 1
}

// TwoJobCounters returns, for the samples 0..samples-1, each series' interconnect.io counter as
// its receiver reports it after that sample (TwoJobBytes summed from TwoJobFirstCounted on).
func TwoJobCounters(samples int, dt float64) []map[TwoJobSeries]float64 {
	out := make([]map[TwoJobSeries]float64, samples)
	cum := map[TwoJobSeries]float64{}
	for i := range samples {
		for s, b := range TwoJobBytes(i, dt) {
			if i >= TwoJobFirstCounted(s.Component) {
				cum[s] += b
			} else if _, ok := cum[s]; !ok {
				cum[s] = 0
			}
		}
		out[i] = make(map[TwoJobSeries]float64, len(cum))
		for s, v := range cum {
			out[i][s] = v
		}
	}
	return out
}

// TwoJobOwner is who the model says owns the series' bytes at sample i of a run whose job switch
// is at switchAt, as the README's join names it: "job <id>" for a device of a job slot (its GPUs,
// NIC, netdev and root port, scenario.JobOwner), "shared" or "node" otherwise.
func TwoJobOwner(s TwoJobSeries, i, switchAt int) string {
	if s.Slot < 0 {
		return s.Kind
	}
	return "job " + scenario.JobOwner(s.Slot, i, switchAt)
}
