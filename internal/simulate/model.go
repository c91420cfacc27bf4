// Package simulate writes recordings of a simulated 2-node, 1-GPU-per-node training cluster (as in
// the InterconnectLens paper: ConnectX-6 Dx 100 Gb/s RoCE and one GPU per node) for the cases the
// paper and DESIGN §1 tell apart: healthy GPUDirect RDMA AllReduce and Broadcast, NCCL's fallback
// to TCP, GPUDirect RDMA bouncing through host memory, a switch port limited to 20 Gb/s, a link
// trained down, and a PFC pause storm. The recordings replay through the real receivers
// (internal/recording), so the simulated numbers go through every line of code that real ones do.
package simulate // import "github.com/otelcol-iclens/otelcol-iclens/internal/simulate"

import (
	"math"
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
// fp32 values: 2(N-1)/N x 4P bytes (seed 001, the JANOG55 talk's formula).
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
	CPUPCIeRx, CPUPCIeTx float64 // device -> CPU (DMA writes) and CPU -> device (DMA reads), bytes/s
	MemRead, MemWrite    float64 // host memory bytes/s
	GPUPCIeTx, GPUPCIeRx float64 // the GPU's PCIe link, bytes/s
	DRAMActive, SMActive float64 // GPU activity ratios

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
	// Topology: the NIC sits on the GPU's PCIe switch (false: under the other socket's root
	// complex); peer memory loaded.
	NICOnGPUSwitch bool
	PeerMem        bool
	// XID is a GPU error the node reports once a minute (0: none).
	XID uint64
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

// stepRate is the average bytes/s a GPU sends when each step moves AllReduceBytes at rate.
func stepRate(rate float64) float64 {
	b := AllReduceBytes()
	return b / (computeSeconds + b/rate)
}

// Case is one simulated situation: what each node does.
type Case struct {
	Name string
	// Note says what the case shows (written into the recordings' headers).
	Note  string
	Nodes [2]Traffic
}

// Cases returns the simulated cases.
func Cases() []Case {
	gdr := stepRate(lineRate * rdmaEfficiency)
	tcp := stepRate(tcpRate)
	bounce := stepRate(lineRate * rdmaEfficiency * 0.7)
	half := stepRate(lineRate / 2 * rdmaEfficiency)
	ack := 0.015 // RoCE ACKs on the reverse path, as a share of the data

	var cases []Case

	// Healthy AllReduce: both directions busy on every node, the host idle.
	// node2's GPU logs XID 63 (a row-remapping event, benign on A100) now and then: background
	// noise an operator sees on real fleets, which must not disturb the case's signature.
	remap := healthy(gdr, gdr)
	remap.XID = 63
	cases = append(cases, Case{Name: "healthy_allreduce",
		Note:  "GPUDirect RDMA ring AllReduce: RNIC and GPU PCIe busy both ways, CPU PCIe and host memory idle",
		Nodes: [2]Traffic{healthy(gdr, gdr), remap}})

	// Broadcast from node1: one direction only.
	cases = append(cases, Case{Name: "healthy_broadcast",
		Note:  "GPUDirect RDMA broadcast from node1: node1 transmits, node2 receives, the host idle",
		Nodes: [2]Traffic{healthy(gdr, gdr*ack), healthy(gdr*ack, gdr)}})

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
	cases = append(cases, Case{Name: "tcp_fallback",
		Note:  "NCCL fell back to TCP (NCCL_IB_DISABLE=1): RNIC idle, netdev, CPU PCIe and host memory busy",
		Nodes: [2]Traffic{fallback(), fallback()}})

	// GPUDirect RDMA bouncing through host memory: the NIC sits under the other socket and
	// nvidia-peermem is missing; every byte is staged in host memory.
	bouncing := func() Traffic {
		t := healthy(bounce, bounce)
		t.CPUPCIeRx, t.CPUPCIeTx = 2*bounce, 2*bounce+dataLoader
		t.MemRead, t.MemWrite = baseMemRead+dataLoader+bounce, baseMemWrite+bounce
		t.NICOnGPUSwitch, t.PeerMem = false, false
		t.SMActive = 0.48
		return t
	}
	cases = append(cases, Case{Name: "gdr_bounce",
		Note:  "GPUDirect RDMA misconfigured (NIC under the other socket, nvidia-peermem missing): RNIC busy and CPU PCIe / host memory busy",
		Nodes: [2]Traffic{bouncing(), bouncing()}})

	// A switch port limited to 20 Gb/s: the RNIC transmits at the limit, congestion control
	// works hard, the host is idle.
	congested := func() Traffic {
		t := healthy(CongestedRate, CongestedRate)
		t.XmitWaitPerSec = 4.1e7
		t.CNPSentPerSec, t.CNPHandledPerSec, t.ECNMarkedPerSec = 1.8e4, 1.7e4, 2.2e4
		t.SMActive = 0.35
		return t
	}
	cases = append(cases, Case{Name: "congestion_20g",
		Note:  "switch port limited to 20 Gb/s: RNIC TX at (4096-58)/4096 x 20 Gb/s = 2.46 GB/s, CNPs and ECN marks rising, host idle",
		Nodes: [2]Traffic{congested(), congested()}})

	// node1's port trained to 2 of 4 lanes: both directions of the ring run at half rate.
	down := healthy(half, half)
	down1 := down
	down1.RateGbps, down1.Lanes = 50, 2
	cases = append(cases, Case{Name: "link_downgrade",
		Note:  "node1's port trained down to 50 Gb/s (2 lanes): the ring runs at half rate",
		Nodes: [2]Traffic{down1, down}})

	// node2's NIC storms PFC pauses on priority 3: node1 can barely transmit.
	storm1 := healthy(0.3e9, 0.25e9)
	storm1.PFCRxPausePerSec, storm1.PFCRxPauseUsPerSec, storm1.XmitWaitPerSec = 9.5e4, 9.2e5, 4.1e8
	storm2 := healthy(0.25e9, 0.3e9)
	storm2.PFCTxPausePerSec, storm2.StormWarningsPerMin, storm2.StormErrorsPerMin = 9.5e4, 6, 1
	cases = append(cases, Case{Name: "pfc_storm",
		Note:  "node2's NIC storms PFC pauses on priority 3: node1's RX pause frames and xmit_wait soar, traffic collapses",
		Nodes: [2]Traffic{storm1, storm2}})
	return cases
}

// wobble is the deterministic ripple of a training loop's phases around the average (±8 %), so
// that graphs look alive and runs are reproducible. Rates pinned by hardware (a congested port)
// do not wobble.
func wobble(i int, node int) float64 {
	return 1 + 0.08*math.Sin(float64(i)*0.9+float64(node)*1.7)
}
