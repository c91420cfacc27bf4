package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"math"
	"strconv"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// nodeView is what one evaluation of a node reads: its state (nodestate: each quantity the sum
// of the irate of the counters it is made of, exactly as the generated Prometheus rules compute
// it) and the sums the verdicts compare.
type nodeView struct {
	*nodestate.State
	// hasLine: the node reports at least one RDMA port rate; the traffic verdicts are relative to
	// it and are not evaluated without.
	hasLine bool
	line    float64 // sum of the ports' line rates (one direction), By/s

	rdma, netdev, gpu, cpuPCIe, memory float64 // By/s, both directions
	cpuWrite                           float64 // device -> host PCIe writes on every root port
	gpuTx                              float64 // GPU PCIe transmit (device -> host)
	// peaks: each port's highest rate within port_rate_memory.
	peaks map[string]float64
	// unwatched: the GPUs and the host move a socket transport's bytes that no watched interface
	// carries (unwatchedSockets).
	unwatched bool
	// coll: the NCCL communicators' verdicts' inputs (collectives.go).
	coll collectiveView
	// peers: the peer each waits_on_peer names, and its fault (peers.go); stragglers: what makes
	// the node the straggler of each collective type it is one of (stragglers.go).
	peers      map[string]peerFault
	stragglers map[string]straggle
}

func transmitLineShare(p nodestate.Port) float64 { return p.Tx / p.Rate }
func marksPerPacket(p nodestate.Port) float64    { return p.Marks / p.Packets }
func framesPerGbps(p nodestate.Port) float64     { return p.PauseFrames / (p.Rate * 8 / 1e9) }

// burstShareLabel is the rnic receiver's burst.share attribute of a share, as the receiver writes
// it (a double, "0.9" as a string and as Prometheus's label).
func burstShareLabel(share float64) string { return strconv.FormatFloat(share, 'f', -1, 64) }

// congestedInBursts reports whether a port below the congestion line share on average ran at or
// above the burst share of its line rate long enough, its packets marked or its netdev paused
// more than a healthy fabric's stray CNP or pause: queues that fill in every step's bursts. False
// without the fast sampler's time_above.
func congestedInBursts(t Thresholds, p nodestate.Port) bool {
	at, ok := p.TimeAbove(nodestate.Transmit, burstShareLabel(t.CongestionBurstShare))
	return ok && transmitLineShare(p) < t.CongestionMaxLineShare && at >= t.CongestionMinBurstTimeShare &&
		(marksPerPacket(p) >= t.CongestionBurstMinMarksPerPacket || framesPerGbps(p) >= t.CongestionBurstMinPauseFramesPerGbps)
}

// congested is a port's congestion: sustained (marks per packet) or in bursts.
func congested(t Thresholds, p nodestate.Port) bool {
	return transmitLineShare(p) < t.CongestionMaxLineShare && marksPerPacket(p) >= t.CongestionMinMarksPerPacket || congestedInBursts(t, p)
}

func (v *nodeView) network() float64       { return v.rdma + v.netdev }
func (v *nodeView) rdmaShare() float64     { return v.rdma / v.network() }
func (v *nodeView) cpuPerNetwork() float64 { return v.cpuPCIe / v.network() }
func (v *nodeView) cpuWritePerNetwork() float64 {
	return v.cpuWrite / v.network()
}
func (v *nodeView) memoryPerNetwork() float64 {
	return v.memory / v.network()
}
func (v *nodeView) networkLineShare() float64 { return v.network() / (2 * v.line) }
func (v *nodeView) gpuLineShare() float64     { return v.gpu / (2 * v.line) }
func (v *nodeView) pathWritePerRDMA() float64 { return v.PathWrite / v.rdma }
func (v *nodeView) cpuWritePerGPU() float64   { return v.cpuWrite / v.gpu }
func (v *nodeView) memoryPerGPU() float64     { return v.memory / v.gpu }
func (v *nodeView) gpuTransmitShare() float64 { return v.gpuTx / v.gpu }

// unwatchedSockets: the GPUs move data that no watched interface carries (the network seen below
// busy), and the host does for those bytes what a socket transport does (a device writes each
// into host memory, host memory is crossed several times), with the GPUs sending as well as
// receiving: NCCL on sockets over an interface no receiver reports (README.md#tcp-fallback).
func (v *nodeView) unwatchedSockets(t Thresholds) bool {
	return v.networkLineShare() < t.BusyLineShare && v.gpuLineShare() >= t.BusyLineShare &&
		v.cpuWritePerGPU() >= t.FallbackMinPCIeWritePerNetworkByte && v.memoryPerGPU() >= t.FallbackMinMemoryPerNetworkByte &&
		v.gpuTransmitShare() >= t.UnwatchedMinGPUTransmitShare
}

// pathWriteBeyondIP is the root ports' device-to-host writes the node's IP traffic does not
// explain, per RDMA byte: an IP byte received is written into host memory by its NIC, an IP byte
// sent was staged there first (a checkpoint copied out of the GPU and written over NFS), so
// bulk IP beside a GPUDirect AllReduce is not a bounce (README.md#gpudirect-bounce).
func (v *nodeView) pathWriteBeyondIP() float64 {
	return math.Max(v.PathWrite-v.netdev, 0) / v.rdma
}

// view reads a node's state at now.
func (n *node) view(cfg *Config, now int64) *nodeView {
	v := n.viewOf(cfg, n.At(now, cfg.Window, cfg.StaleAfter), now)
	// The node's communicators (an owner's share of the node has none of its own).
	n.observeCollectives(v, cfg)
	return v
}

// viewOf reads a state: the node's, or one owner's share of it (owners.go).
func (n *node) viewOf(cfg *Config, st *nodestate.State, now int64) *nodeView {
	v := &nodeView{State: st, peaks: map[string]float64{},
		rdma: st.IO(nodestate.RNIC), gpu: st.IO(nodestate.GPUPCIe), cpuPCIe: st.IO(nodestate.CPUPCIe),
		cpuWrite: st.IODirection(nodestate.CPUPCIe, nodestate.Receive), memory: st.IO(nodestate.CPUMemory),
		gpuTx: st.IODirection(nodestate.GPUPCIe, nodestate.Transmit)}
	// Only a port without an IP netdev (InfiniBand) counts as 0 IP bytes: without RDMA rates the
	// IP bytes are unknown too.
	switch {
	case !st.Has(nodestate.RNIC):
		v.netdev = math.NaN()
	case st.Has(nodestate.Netdev):
		v.netdev = st.IO(nodestate.Netdev)
	}
	v.line = math.NaN()
	for _, p := range st.Ports {
		if !v.hasLine {
			v.hasLine, v.line = true, 0
		}
		v.line += p.Rate
		v.peaks[p.Device] = n.rememberRate(p.Device, p.Rate, now, cfg.PortRateMemory.Nanoseconds())
	}
	v.unwatched = v.unwatchedSockets(cfg.Thresholds)
	return v
}

// conditions decides, for one view, which verdicts' conditions hold, per device: the definition
// that the Prometheus rules (prometheus.go) are generated from. Every comparison is false on NaN
// (0/0) as in PromQL, so a ratio without traffic under it decides nothing.
func conditions(t Thresholds, v *nodeView) map[verdictKey]bool {
	out := map[verdictKey]bool{}
	anyStorm, anyCongested := false, false
	for _, p := range v.Ports {
		storm := p.PauseTime >= t.StormMinPauseTimeShare || framesPerGbps(p) >= t.StormMinPauseFramesPerGbps
		out[verdictKey{verdict.PFCStorm, p.Device}] = storm
		anyStorm = anyStorm || storm
		anyCongested = anyCongested || congested(t, p)
		// Below the highest rate the port reached, or below a port of the same model on the same
		// node: one that trained down before it was first seen (at boot) has no higher rate of
		// its own to compare with, but its twin shows what it can reach.
		out[verdictKey{verdict.LinkDegraded, p.Device}] = p.Rate < v.peaks[p.Device] || p.Rate < p.PeerRate
	}
	for dev, d := range v.NICLinkDegraded {
		out[verdictKey{verdict.LinkDegraded, dev}] = out[verdictKey{verdict.LinkDegraded, dev}] || d
	}
	// A GPU's link is degraded when it trained to fewer lanes than it can use (nodestate.GPU,
	// README.md#link-degraded); its readiness is the best over its NICs.
	for _, g := range v.GPUs {
		if d, known := g.LinkDegraded(); known {
			out[verdictKey{verdict.LinkDegraded, g.Name}] = out[verdictKey{verdict.LinkDegraded, g.Name}] || d
		}
		nvlinkConditions(t, g, out)
		if g.Ready >= 0 {
			out[verdictKey{verdict.GPUDirectNotReady, g.Name}] = g.Ready == 0
		}
	}
	if !v.hasLine {
		collectiveConditions(t, v, out)
		return out
	}
	busyNet := v.networkLineShare() >= t.BusyLineShare
	busyGPU := v.gpuLineShare() >= t.BusyLineShare
	rdmaCarried := v.rdmaShare() >= t.MinRDMAShare
	quietPath := v.pathWriteBeyondIP() < t.HealthyMaxPathWritePerRDMAByte
	out[verdictKey{verdict.GPUDirectBounce, ""}] = busyNet && rdmaCarried &&
		v.pathWriteBeyondIP() >= t.BounceMinPathWritePerRDMAByte &&
		v.memoryPerNetwork() >= t.BounceMinHostMemoryPerNetworkByte
	out[verdictKey{verdict.TCPFallback, ""}] = busyNet && busyGPU && v.rdmaShare() < t.FallbackMaxRDMAShare &&
		v.cpuWritePerNetwork() >= t.FallbackMinPCIeWritePerNetworkByte && v.memoryPerNetwork() >= t.FallbackMinMemoryPerNetworkByte ||
		v.unwatchedSockets(t)
	out[verdictKey{verdict.FabricCongestion, ""}] = anyCongested && rdmaCarried && quietPath && !anyStorm
	out[verdictKey{verdict.HealthyGPUDirect, ""}] = busyNet && busyGPU && rdmaCarried && quietPath && !anyCongested && !anyStorm
	// Comparisons, not negations: "below busy" is false on NaN, as PromQL's filter is.
	out[verdictKey{verdict.Idle, ""}] = v.networkLineShare() < t.BusyLineShare && v.gpuLineShare() < t.BusyLineShare &&
		!anyStorm && !anyCongested
	collectiveConditions(t, v, out)
	return out
}

// evidence returns the ratios of a view, per device ("" for the node), finite ones only.
func evidence(t Thresholds, v *nodeView) map[verdictKey]float64 {
	out := map[verdictKey]float64{}
	put := func(ratio, dev string, x float64) {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out[verdictKey{ratio, dev}] = x
		}
	}
	for _, p := range v.Ports {
		put(verdict.TransmitLine, p.Device, transmitLineShare(p))
		put(verdict.Marks, p.Device, marksPerPacket(p))
		put(verdict.PauseTime, p.Device, p.PauseTime)
		put(verdict.PauseFrames, p.Device, framesPerGbps(p))
		if at, ok := p.TimeAbove(nodestate.Transmit, burstShareLabel(t.CongestionBurstShare)); ok {
			put(verdict.BurstTimeShare, p.Device, at)
		}
	}
	collectiveEvidence(v, put)
	if v.hasLine {
		put(verdict.RDMAShare, "", v.rdmaShare())
		put(verdict.CPUPerNetwork, "", v.cpuPerNetwork())
		put(verdict.CPUWrite, "", v.cpuWritePerNetwork())
		put(verdict.MemoryPerNetwork, "", v.memoryPerNetwork())
		put(verdict.NetworkLine, "", v.networkLineShare())
		put(verdict.GPULine, "", v.gpuLineShare())
		put(verdict.PathWrite, "", v.pathWritePerRDMA())
		put(verdict.PathWriteBeyondIP, "", v.pathWriteBeyondIP())
		put(verdict.CPUWritePerGPU, "", v.cpuWritePerGPU())
		put(verdict.MemoryPerGPU, "", v.memoryPerGPU())
		put(verdict.GPUTransmitShare, "", v.gpuTransmitShare())
	}
	return out
}
