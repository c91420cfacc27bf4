// Package scenario is the model of a simulated 2-node, 1-GPU-per-node training cluster (as in
// the InterconnectLens paper: ConnectX-6 Dx 100 Gb/s RoCE and one GPU per node) in the cases the
// paper tells apart: healthy GPUDirect RDMA AllReduce and Broadcast, NCCL's fallback to TCP,
// GPUDirect RDMA bouncing through host memory, a switch port limited to 20 Gb/s, a link trained
// down, and a PFC pause storm. It holds the cases, their phases, the verdicts each phase expects,
// the points the receivers report (Stream) and the judge of a verdict sequence: the shared test
// vocabulary of the diagnosis connector, the lensview exporter and the end-to-end tests. The
// recordings that replay a case through the real receivers are written by tools/simulate.
package scenario // import "github.com/otelcol-iclens/otelcol-iclens/internal/scenario"

import (
	"math"

	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// Workload constants of the simulated job.
const (
	// Params is the model size: 1.3 B fp32 gradients, 4 bytes each.
	Params = 1.3e9
	// GPUs is the number of ranks in the ring (one per node).
	GPUs = 2
	// lineRate is the ConnectX-6 Dx port's 100 Gb/s in bytes/s.
	lineRate = 100e9 / 8
	// rdmaEfficiency is the share of line rate RDMA WRITEs reach with 4 KiB MTU.
	rdmaEfficiency = 0.92
	// tcpRate is what NCCL's socket transport reaches when it has to copy through the host.
	tcpRate = 2.8e9
	// computeSeconds is the compute part of one training step.
	computeSeconds = 0.55
	// mtu is the RoCE path MTU: packets = bytes / mtu.
	mtu = 4096
)

// AllReduceBytes is what each GPU sends (and receives) per step in a ring AllReduce of Params
// fp32 values: 2(N-1)/N x 4P bytes (as in the JANOG55 InterconnectLens talk).
func AllReduceBytes() float64 { return 2 * float64(GPUs-1) / float64(GPUs) * 4 * Params }

// CongestedRate is the RNIC transmit rate behind a switch port limited to 20 Gb/s: RoCEv2 with
// a 4096-byte MTU carries 4096-58 bytes of payload per 4096 on the wire, so the port counters see
// (4096-58)/4096 x 20 Gb/s = 2.4646 GB/s (the paper: 2.47 GB/s).
const CongestedRate = (4096.0 - 58.0) / 4096.0 * 20e9 / 8

// Traffic is what one node's components carry per second during a case, plus the counters that
// tell congestion and pauses apart.
type Traffic struct {
	RNICTx, RNICRx       float64 // RDMA bytes/s on the port (port_xmit_data x 4)
	NetdevTx, NetdevRx   float64 // IP bytes/s of the port's netdev
	CPUPCIeRx, CPUPCIeTx float64 // at the GPU's root port: device -> CPU (DMA writes) and CPU -> device (DMA reads), bytes/s
	// NICRootRx/Tx are added at the NIC's root port (the GPU's own when the NIC shares its
	// switch, socket 1's when it is misplaced); OtherRootRx/Tx at a root port that is neither
	// (socket 0, IIO stack 2, port 0: a storage controller, or the second NIC).
	NICRootRx, NICRootTx     float64
	OtherRootRx, OtherRootTx float64
	MemRead, MemWrite        float64 // host memory bytes/s
	GPUPCIeTx, GPUPCIeRx     float64 // the GPU's PCIe link, bytes/s
	DRAMActive, SMActive     float64 // GPU activity ratios

	XmitWaitPerSec   float64 // port_xmit_wait ticks/s
	CNPSentPerSec    float64 // np_cnp_sent/s (this node's notification point saw ECN marks)
	CNPHandledPerSec float64 // rp_cnp_handled/s (this node throttled its transmit)
	ECNMarkedPerSec  float64 // np_ecn_marked_roce_packets/s

	PFCRxPausePerSec    float64 // rx_prio3_pause frames/s (the peer pauses us)
	PFCTxPausePerSec    float64 // tx_prio3_pause frames/s (we pause the peer)
	PFCRxPauseUsPerSec  float64 // rx_prio3_pause_duration µs/s
	StormWarningsPerMin float64 // tx_pause_storm_warning_events per minute
	StormErrorsPerMin   float64 // tx_pause_storm_error_events per minute

	// RateGbps and Lanes are the port's trained link (the rate file).
	RateGbps float64
	Lanes    int
	// NICLinkWidth is the lane count the NIC's PCIe link trained to (0: its full x16).
	NICLinkWidth int
	// GPULinkWidth is the lane count the GPU's PCIe link trained to (0: its full x16).
	GPULinkWidth int
	// SecondNIC adds a second RDMA NIC (mlx5_1, netdev ens2f0np0) behind the other root port,
	// whose netdev carries SecondNetdevTx/Rx bytes/s of IP traffic and no RDMA.
	SecondNIC                      bool
	SecondNetdevTx, SecondNetdevRx float64
	// SecondRateGbps and SecondLanes are the second NIC's port link (0: the same as the first).
	SecondRateGbps float64
	SecondLanes    int
	// Storage adds an NVMe controller behind the other root port.
	Storage bool
	// Topology: the NIC sits on the GPU's PCIe switch (false: under the other socket's root
	// complex); peer memory loaded.
	NICOnGPUSwitch bool
	PeerMem        bool
	// XID is a GPU error the node reports once a minute (0: none).
	XID uint64
	// NCCL is what the node's NCCL job reports (nccl.go); the zero value reports nothing.
	NCCL NCCLJob
}

// Host-side background of a training node: the OS, the data loader and the logging.
const (
	baseMemRead  = 1.0e9
	baseMemWrite = 0.6e9
	dataLoader   = 0.1e9 // host -> GPU input batches, bytes/s
	controlIP    = 1.0e6 // NCCL bootstrap, monitoring and ssh over IP, bytes/s
)

// healthy returns the traffic of a node whose GPU sends tx and receives rx bytes/s over
// GPUDirect RDMA.
func healthy(tx, rx float64) Traffic {
	return Traffic{
		RNICTx: tx, RNICRx: rx,
		NetdevTx: controlIP, NetdevRx: controlIP,
		// Peer traffic turns inside the PCIe switch: the root complex only sees the data loader
		// (the GPU reading host memory) and doorbells.
		CPUPCIeRx: 0.02e9, CPUPCIeTx: dataLoader,
		MemRead: baseMemRead + dataLoader, MemWrite: baseMemWrite,
		GPUPCIeTx: tx, GPUPCIeRx: rx + dataLoader,
		DRAMActive: 0.55, SMActive: 0.62,
		RateGbps: 100, Lanes: 4, NICOnGPUSwitch: true, PeerMem: true,
	}
}

// stagedAt is a node whose NCCL stages every byte in host memory at rate bytes/s each way
// (NCCL_NET_GDR_LEVEL=LOC): the NIC beside the GPU, both directions copied through host memory.
func stagedAt(rate float64) Traffic {
	t := healthy(rate, rate)
	t.CPUPCIeRx, t.CPUPCIeTx = 2*rate, 2*rate+dataLoader
	t.MemRead, t.MemWrite = baseMemRead+dataLoader+rate, baseMemWrite+rate
	return t
}

// stepRate is the average bytes/s a GPU sends when each step moves AllReduceBytes at rate.
func stepRate(rate float64) float64 {
	b := AllReduceBytes()
	return b / (computeSeconds + b/rate)
}

// TransferSeconds inverts stepRate: how long the AllReduce of a step takes when its GPU sends
// avg bytes/s on average over the step (the compute part and the transfer); 0 for no transfer.
func TransferSeconds(avg float64) float64 {
	if avg <= 0 {
		return 0
	}
	return AllReduceBytes()/avg - computeSeconds
}

// Verdicts a diagnosis names (the connector's contract, internal/verdict); a case's phases say
// which must hold.
const (
	HealthyGPUDirect  = verdict.HealthyGPUDirect
	TCPFallback       = verdict.TCPFallback
	GPUDirectBounce   = verdict.GPUDirectBounce
	FabricCongestion  = verdict.FabricCongestion
	PFCStorm          = verdict.PFCStorm
	LinkDegraded      = verdict.LinkDegraded
	GPUDirectNotReady = verdict.GPUDirectNotReady
	Idle              = verdict.Idle
	WaitsOnPeer       = verdict.WaitsOnPeer
	Straggler         = verdict.Straggler
)

// HCAType is the simulated NICs' model as the kernel's ib_device hca_type attribute names it
// (ConnectX-6 Dx: MT4125), which the rnic receiver reports on rnic.port.info.
const HCAType = "MT4125"

// SecondRate is the second NIC's port rate in Gb/s and its lanes.
func (t Traffic) SecondRate() (float64, int) {
	if t.SecondRateGbps > 0 {
		return t.SecondRateGbps, t.SecondLanes
	}
	return t.RateGbps, t.Lanes
}

// On names a verdict that applies to one device (verdict@device).
func On(verdict, device string) string { return verdict + "@" + device }

// LinkWidthOfGPU is the lane count of the GPU's link.
func (t Traffic) LinkWidthOfGPU() uint64 {
	if t.GPULinkWidth > 0 {
		return uint64(t.GPULinkWidth)
	}
	return 16
}

// Devices of the simulated node, as the receivers name them.
const (
	// Port is the RDMA port (rnic receiver: <ibdev>/<port>).
	Port = NIC + "/1"
	// NIC is the RDMA device whose PCIe link and GPU pairing the rnic receiver's topology reports.
	NIC = "mlx5_0"
	// GPU is the node's GPU.
	GPU = "gpu0"
)

// Case is one simulated situation: what each node does, phase by phase.
type Case struct {
	Name string
	// Note says what the case shows (written into the recordings' headers).
	Note string
	// Phases in order; the first starts at sample 0. A case of one phase is steady.
	Phases []Phase
}

// Phase is what the nodes do from sample From on, and what a diagnosis must say about it.
type Phase struct {
	From  int
	Nodes [2]Traffic
	// Expect is, per node, every verdict that must hold during the phase: the node's own
	// ("healthy_gpudirect"; none where the node's traffic has no name, as while a pause storm
	// stalls it) and each device's (On(LinkDegraded, Port)). No other verdict may hold.
	Expect [2][]string
	// ClearWithin is how many intervals the previous phase's verdicts may take to clear (0:
	// Grace). A device that stops reporting is told apart from a late scrape only once its newest
	// sample has left the evaluators' window (3 intervals), so its verdicts end then.
	ClearWithin int
}

// Named returns the case of StreamCases called name.
func Named(name string) (Case, bool) {
	for _, c := range StreamCases() {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// StreamCases are Cases, the NCCL and the bursty cases, and the cases only a stream of points can
// show (Case.Stream, the diagnosis connector's and the promtool tests): a device that vanishes
// mid-case, which a recording cannot replay (internal/recording writes a sample's files, it never
// deletes one).
func StreamCases() []Case {
	cases := append(append(Cases(), NCCLCases()...), BurstCases()...)
	// node1's second port (mlx5_1, trained to 50 Gb/s beside mlx5_0's 100: link_degraded) goes
	// away at sample 60 (its driver unbound, the card hot-removed): its metrics end, and so must
	// its verdict and evidence.
	gdr := stepRate(lineRate * rdmaEfficiency)
	with := func(rate float64, lanes int) Traffic {
		t := healthy(gdr, gdr)
		t.SecondNIC, t.SecondRateGbps, t.SecondLanes = true, rate, lanes
		return t
	}
	without := healthy(gdr, gdr)
	cases = append(cases, Case{Name: "port_vanishes",
		Note: "node1's second port, trained down to 50 Gb/s, goes away at sample 60: its verdict and evidence end with its metrics",
		Phases: []Phase{
			{From: 0, Nodes: [2]Traffic{with(50, 2), with(100, 4)}, Expect: [2][]string{{HealthyGPUDirect, On(LinkDegraded, NIC2+"/1")}, {HealthyGPUDirect}}},
			{From: TransitionFault, Nodes: [2]Traffic{without, without}, Expect: both(HealthyGPUDirect), ClearWithin: Grace + 1},
		}})
	return cases
}

// At returns what node n does at sample i.
func (c Case) At(i, n int) Traffic { return c.Phases[c.PhaseAt(i)].Nodes[n] }

// PhaseAt returns the index of the phase sample i belongs to.
func (c Case) PhaseAt(i int) int {
	p := 0
	for k, ph := range c.Phases {
		if i >= ph.From {
			p = k
		}
	}
	return p
}

// Transition phases: healthy for a minute, the fault for 40 s, healthy again (in samples).
const (
	TransitionFault = 60
	TransitionClear = 100
	// TransitionSamples is how long a recording must be to hold a whole transition and 30 s of
	// healthy traffic after it.
	TransitionSamples = 130
)

func steady(name, note string, nodes [2]Traffic, expect [2][]string) Case {
	return Case{Name: name, Note: note, Phases: []Phase{{Nodes: nodes, Expect: expect}}}
}

func both(v ...string) [2][]string { return [2][]string{v, v} }

// transition is a case that is healthy for a minute, then shows the fault, then heals.
func transition(name, note string, healthy, fault [2]Traffic, expectFault [2][]string) Case {
	ok := both(HealthyGPUDirect)
	return Case{Name: name, Note: note, Phases: []Phase{
		{From: 0, Nodes: healthy, Expect: ok},
		{From: TransitionFault, Nodes: fault, Expect: expectFault},
		{From: TransitionClear, Nodes: healthy, Expect: ok},
	}}
}

// Cases returns the simulated cases.
func Cases() []Case {
	gdr := stepRate(lineRate * rdmaEfficiency)
	tcp := stepRate(tcpRate)
	bounce := stepRate(lineRate * rdmaEfficiency * 0.7)
	half := stepRate(lineRate / 2 * rdmaEfficiency)
	ack := 0.015 // RoCE ACKs on the reverse path, as a share of the data

	var cases []Case
	ok := both(HealthyGPUDirect)
	pair := func(t Traffic) [2]Traffic { return [2]Traffic{t, t} }

	// Healthy AllReduce: both directions busy on every node, the host idle.
	// node2's GPU logs XID 63 (a row-remapping event, benign on A100) now and then: background
	// noise an operator sees on real fleets, which must not disturb the case's signature.
	remap := healthy(gdr, gdr)
	remap.XID = 63
	cases = append(cases, steady("healthy_allreduce",
		"GPUDirect RDMA ring AllReduce: RNIC and GPU PCIe busy both ways, CPU PCIe and host memory idle",
		[2]Traffic{healthy(gdr, gdr), remap}, ok))

	// Broadcast from node1: one direction only.
	cases = append(cases, steady("healthy_broadcast",
		"GPUDirect RDMA broadcast from node1: node1 transmits, node2 receives, the host idle",
		[2]Traffic{healthy(gdr, gdr*ack), healthy(gdr*ack, gdr)}, ok))

	// TCP fallback: the RDMA port is idle; the bytes go GPU -> host memory -> socket -> NIC, so the
	// netdev, the root complex (twice per byte) and host memory (three copies) carry them.
	fallback := func() Traffic {
		t := healthy(0, 0)
		t.RNICTx, t.RNICRx = 0, 0
		t.NetdevTx, t.NetdevRx = tcp, tcp
		t.CPUPCIeRx, t.CPUPCIeTx = 2*tcp, 2*tcp+dataLoader
		t.MemRead, t.MemWrite = baseMemRead+dataLoader+3*tcp, baseMemWrite+3*tcp
		t.GPUPCIeTx, t.GPUPCIeRx = tcp, tcp+dataLoader
		t.SMActive = 0.31
		return t
	}
	cases = append(cases, steady("tcp_fallback",
		"NCCL fell back to TCP (NCCL_IB_DISABLE=1): RNIC idle, netdev, CPU PCIe and host memory busy",
		pair(fallback()), both(TCPFallback)))

	// GPUDirect RDMA bouncing through host memory: the NIC sits under the other socket and
	// nvidia-peermem is missing; every byte is staged in host memory. The GPU's root port carries
	// the GPU's staging copies, the NIC's root port (socket 1) the NIC's DMA.
	bouncing := func() Traffic {
		t := healthy(bounce, bounce)
		t.CPUPCIeRx, t.CPUPCIeTx = bounce, bounce+dataLoader
		t.NICRootRx, t.NICRootTx = bounce, bounce
		t.MemRead, t.MemWrite = baseMemRead+dataLoader+bounce, baseMemWrite+bounce
		t.NICOnGPUSwitch, t.PeerMem = false, false
		t.SMActive = 0.48
		return t
	}
	cases = append(cases, steady("gdr_bounce",
		"GPUDirect RDMA misconfigured (NIC under the other socket, nvidia-peermem missing): RNIC busy and CPU PCIe / host memory busy",
		pair(bouncing()), both(GPUDirectBounce, On(GPUDirectNotReady, GPU))))

	// A switch port limited to 20 Gb/s: the RNIC transmits at the limit, congestion control
	// works hard, the host is idle.
	congested := func() Traffic {
		t := healthy(CongestedRate, CongestedRate)
		t.XmitWaitPerSec = 4.1e7
		t.CNPSentPerSec, t.CNPHandledPerSec, t.ECNMarkedPerSec = 1.8e4, 1.7e4, 2.2e4
		t.SMActive = 0.35
		return t
	}
	cases = append(cases, steady("congestion_20g",
		"switch port limited to 20 Gb/s: RNIC TX at (4096-58)/4096 x 20 Gb/s = 2.46 GB/s, CNPs and ECN marks rising, host idle",
		pair(congested()), both(FabricCongestion)))

	// node1's port retrains to 2 of 4 lanes after a few seconds: both directions of the ring run
	// at half rate from then on.
	down := healthy(half, half)
	down1 := down
	down1.RateGbps, down1.Lanes = 50, 2
	cases = append(cases, Case{Name: "link_downgrade",
		Note: "node1's port retrains down to 50 Gb/s (2 lanes) after 3 s: the ring runs at half rate",
		Phases: []Phase{
			{From: 0, Nodes: pair(healthy(gdr, gdr)), Expect: ok},
			{From: 3, Nodes: [2]Traffic{down1, down}, Expect: [2][]string{{HealthyGPUDirect, On(LinkDegraded, Port)}, {HealthyGPUDirect}}},
		}})

	// node1's first port trained to 2 of its 4 lanes before the collector started, and stays
	// there: no higher rate is ever seen on it, but its twin on the same node (the same
	// ConnectX model, hca_type MT4125) runs at 100 Gb/s, which is what the first one can reach.
	atBoot := func(rate float64, lanes int) Traffic {
		t := healthy(half, half)
		t.RateGbps, t.Lanes = rate, lanes
		t.SecondNIC, t.SecondRateGbps, t.SecondLanes = true, 100, 4
		return t
	}
	cases = append(cases, steady("trained_down_at_boot",
		"node1's port came up at 50 Gb/s (2 lanes) before the collector started, beside a second port of the same model at 100 Gb/s: the ring runs at half rate",
		[2]Traffic{atBoot(50, 2), atBoot(100, 4)}, [2][]string{{HealthyGPUDirect, On(LinkDegraded, Port)}, {HealthyGPUDirect}}))

	// Mixed traffic, the normal state of a training node: while the AllReduce runs over
	// GPUDirect RDMA on three quarters of the port, rank 0 writes a checkpoint over NFS on the
	// same port's netdev at 3 GB/s: the GPU copies it into host memory (device-to-host writes on
	// its root port, which a bounce would also show), the NIC reads it from there and sends it
	// as IP. The root-port writes are the IP bytes, not the RDMA ones: healthy.
	checkpoint := func() Traffic {
		t := healthy(stepRate(lineRate*rdmaEfficiency*0.75), stepRate(lineRate*rdmaEfficiency*0.75))
		const ckpt = 3e9
		t.NetdevTx += ckpt
		t.GPUPCIeTx += ckpt
		t.CPUPCIeRx += ckpt
		t.NICRootTx += ckpt
		t.MemWrite += ckpt
		t.MemRead += ckpt
		return t
	}
	cases = append(cases, steady("checkpoint_over_nfs",
		"healthy GPUDirect RDMA AllReduce on 3/4 of the port while rank 0 writes a checkpoint over NFS at 3 GB/s on the same port's netdev (staged through host memory)",
		[2]Traffic{checkpoint(), healthy(stepRate(lineRate*rdmaEfficiency*0.75), stepRate(lineRate*rdmaEfficiency*0.75))}, ok))

	// node2's NIC storms PFC pauses on priority 3: node1 can barely transmit.
	storm1 := healthy(0.3e9, 0.25e9)
	storm1.PFCRxPausePerSec, storm1.PFCRxPauseUsPerSec, storm1.XmitWaitPerSec = 9.5e4, 9.2e5, 4.1e8
	storm2 := healthy(0.25e9, 0.3e9)
	storm2.PFCTxPausePerSec, storm2.StormWarningsPerMin, storm2.StormErrorsPerMin = 9.5e4, 6, 1
	// While the storm stalls the traffic, the nodes' own verdict has no name: neither idle nor
	// congested; the port's verdict says what happens.
	stormExpect := both(On(PFCStorm, Port))
	cases = append(cases, steady("pfc_storm",
		"node2's NIC storms PFC pauses on priority 3: node1's RX pause frames and xmit_wait soar, traffic collapses",
		[2]Traffic{storm1, storm2}, stormExpect))

	// What a naive detector gets wrong.

	// Storage: an NVMe controller behind a root port that is neither the GPU's nor the NIC's
	// reads the next batches into host memory at 6 GB/s and the GPU copies them in, while the
	// AllReduce runs healthy over GPUDirect RDMA. CPU PCIe and host memory are busy, but not on
	// the RDMA path: not a bounce.
	storage := func() Traffic {
		t := healthy(gdr, gdr)
		const nvme = 6e9
		t.Storage = true
		t.OtherRootRx, t.OtherRootTx = nvme, 0.01e9
		t.CPUPCIeTx += nvme
		t.GPUPCIeRx += nvme
		t.MemWrite += nvme
		t.MemRead += nvme
		return t
	}
	cases = append(cases, steady("storage_with_gpudirect",
		"healthy GPUDirect RDMA AllReduce while an NVMe controller on another root port streams 6 GB/s through host memory into the GPU",
		pair(storage()), ok))

	// TCP fallback over another interface: NCCL_IB_DISABLE=1 and NCCL_SOCKET_IFNAME names the
	// second NIC's netdev; the RDMA port and its own netdev stay idle.
	otherIf := func() Traffic {
		t := fallback()
		t.NetdevTx, t.NetdevRx = controlIP, controlIP
		t.SecondNIC = true
		t.SecondNetdevTx, t.SecondNetdevRx = tcp, tcp
		// The GPU's root port carries the GPU's copies, the second NIC's root port the socket's.
		t.CPUPCIeRx, t.CPUPCIeTx = tcp, tcp+dataLoader
		t.OtherRootRx, t.OtherRootTx = tcp, tcp
		return t
	}
	cases = append(cases, steady("fallback_other_interface",
		"NCCL fell back to TCP over the second NIC's netdev (NCCL_SOCKET_IFNAME=ens2f0np0): the RDMA port and its netdev idle",
		pair(otherIf()), both(TCPFallback)))

	// TCP fallback over an interface no receiver reports (a front-end NIC without an RDMA
	// driver, NCCL_SOCKET_IFNAME=eno1): RDMA idle and the watched netdev quiet, while the GPU and
	// the host move the same bytes a socket transport moves.
	unwatched := func() Traffic {
		t := otherIf()
		t.SecondNIC = false
		t.SecondNetdevTx, t.SecondNetdevRx = 0, 0
		return t
	}
	cases = append(cases, steady("fallback_unwatched_interface",
		"NCCL fell back to TCP over an interface no receiver watches: RDMA idle, the watched netdev quiet, the GPU and the host busy with a socket transport's bytes",
		pair(unwatched()), both(TCPFallback)))

	// Compute only: the GPUs compute between two collectives; the RDMA port is quiet and there is
	// no congestion evidence: idle, not congestion.
	compute := healthy(controlIP, controlIP)
	compute.SMActive, compute.DRAMActive = 0.92, 0.7
	cases = append(cases, steady("compute_only",
		"compute phase: GPUs busy computing, RDMA port quiet, no congestion evidence",
		pair(compute), both(Idle)))

	// A 40 Gb/s limit on the path with ECN marking at the switch but few CNPs (the notification
	// point rate-limits them): the marks alone must name the congestion.
	limited := func() Traffic {
		r := (4096.0 - 58.0) / 4096.0 * 40e9 / 8
		t := healthy(r, r)
		t.XmitWaitPerSec = 1.2e7
		t.CNPSentPerSec, t.CNPHandledPerSec, t.ECNMarkedPerSec = 60, 40, 1.4e4
		t.SMActive = 0.41
		return t
	}
	cases = append(cases, steady("congestion_40g_ecn",
		"a 40 Gb/s limit with ECN marks and few CNPs: RNIC TX at 4.93 GB/s, 1.4e4 marks/s, 60 CNPs/s",
		pair(limited()), both(FabricCongestion)))

	// A bounce in one direction: NCCL_NET_GDR_READ=0 makes the sender stage its data in host
	// memory (GPU -> host, NIC reads host), while receives still land in GPU memory directly.
	// The topology is fine, so GPUDirect is ready; the bytes still cross the root port.
	sendBounce := func() Traffic {
		t := healthy(bounce, bounce)
		t.CPUPCIeRx += bounce // the GPU writes its send buffer to host memory
		t.CPUPCIeTx += bounce // the NIC reads it from there (same root port)
		t.MemWrite += bounce
		t.MemRead += bounce
		return t
	}
	cases = append(cases, steady("bounce_send_only",
		"sends staged through host memory (NCCL_NET_GDR_READ=0), receives direct: a bounce in one direction",
		pair(sendBounce()), both(GPUDirectBounce)))

	// A NIC whose PCIe link trained to x8 of x16, on an idle node: the link is degraded before
	// any traffic shows it.
	narrow := healthy(controlIP, controlIP)
	narrow.GPUPCIeRx = dataLoader
	narrow.NICLinkWidth = 8
	cases = append(cases, steady("link_degraded_idle",
		"idle node whose NIC's PCIe link trained to x8 of x16",
		pair(narrow), both(Idle, On(LinkDegraded, NIC))))

	// A GPU whose PCIe link trained to x8 of x16, on an idle node whose GPU also runs its link at
	// Gen1 to save power (gpuSample): the lanes are the fault, the generation is not.
	narrowGPU := healthy(controlIP, controlIP)
	narrowGPU.GPUPCIeRx = dataLoader
	narrowGPU.SMActive, narrowGPU.DRAMActive = 0, 0
	narrowGPU.GPULinkWidth = 8
	cases = append(cases, steady("gpu_link_degraded_idle",
		"idle node whose GPU's PCIe link trained to x8 of x16 (and idles at Gen1, which is no fault)",
		pair(narrowGPU), both(Idle, On(LinkDegraded, GPU))))

	// Transitions: a minute healthy, 40 s of the fault, healthy again.
	h := pair(healthy(gdr, gdr))
	cases = append(cases, transition("transition_tcp_fallback",
		"healthy, then NCCL falls back to TCP (job restarted with NCCL_IB_DISABLE=1), then healthy",
		h, pair(fallback()), both(TCPFallback)))
	staged := func() Traffic { return stagedAt(bounce) }
	cases = append(cases, transition("transition_gdr_bounce",
		"healthy, then GPUDirect RDMA disabled (NCCL_NET_GDR_LEVEL=LOC): every byte bounces through host memory, then healthy",
		h, pair(staged()), both(GPUDirectBounce)))
	cases = append(cases, transition("transition_congestion",
		"healthy, then the switch port is limited to 20 Gb/s, then healthy",
		h, pair(congested()), both(FabricCongestion)))
	cases = append(cases, transition("transition_pfc_storm",
		"healthy, then node2's NIC storms PFC pauses, then healthy",
		h, [2]Traffic{storm1, storm2}, stormExpect))
	cases = append(cases, transition("transition_link_degraded",
		"healthy, then node1's port retrains to 50 Gb/s (2 lanes) and the ring halves, then back to 100 Gb/s",
		h, [2]Traffic{down1, down}, [2][]string{{HealthyGPUDirect, On(LinkDegraded, Port)}, {HealthyGPUDirect}}))
	return cases
}

// wobble is the deterministic ripple of a training loop's phases around the average (±8 %), so
// that graphs look alive and runs are reproducible. Rates pinned by hardware (a congested port)
// do not wobble.
func wobble(i int, node int) float64 {
	return 1 + 0.08*math.Sin(float64(i)*0.9+float64(node)*1.7)
}
