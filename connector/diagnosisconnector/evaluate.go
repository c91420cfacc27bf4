package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"math"
	"sort"
)

// The verdicts, as the verdict attribute names them.
const (
	HealthyGPUDirect  = "healthy_gpudirect"
	TCPFallback       = "tcp_fallback"
	GPUDirectBounce   = "gpudirect_bounce"
	FabricCongestion  = "fabric_congestion"
	PFCStorm          = "pfc_storm"
	LinkDegraded      = "link_degraded"
	GPUDirectNotReady = "gpudirect_not_ready"
	Idle              = "idle"
)

// nodeVerdicts are the verdicts on a node's traffic (device ""); at most one holds at a time,
// because their bands do not overlap (Config.Validate keeps them apart).
var nodeVerdicts = []string{HealthyGPUDirect, TCPFallback, GPUDirectBounce, FabricCongestion, Idle}

// Verdicts returns every verdict's name.
func Verdicts() []string {
	return []string{HealthyGPUDirect, TCPFallback, GPUDirectBounce, FabricCongestion, PFCStorm, LinkDegraded, GPUDirectNotReady, Idle}
}

// Evidence ratios (the ratio attribute).
const (
	rRDMAShare        = "rdma_share_of_network"
	rCPUPerNetwork    = "cpu_pcie_per_network_byte"
	rCPUWrite         = "cpu_pcie_write_per_network_byte"
	rMemoryPerNetwork = "host_memory_per_network_byte"
	rTransmitLine     = "rdma_transmit_line_share"
	rNetworkLine      = "network_line_share"
	rGPULine          = "gpu_pcie_line_share"
	rPathWrite        = "path_pcie_write_per_rdma_byte"
	rMarks            = "congestion_marks_per_packet"
	rPauseTime        = "pause_time_share"
	rPauseFrames      = "pause_frames_per_gbps"
)

// portView is one RDMA port at one evaluation: rates in bytes (or packets, frames) per second.
type portView struct {
	device, netdev string
	rate, peak     float64 // line rate now, and the highest within port_rate_memory (By/s)
	tx, rx         float64
	packets, marks float64
	pauseFrames    float64 // PFC and global pause frames/s of the port's netdev, both directions
	pauseTime      float64 // share of time paused: the busier direction's pause µs/s over 1e6
}

func (p portView) transmitLineShare() float64 { return p.tx / p.rate }
func (p portView) marksPerPacket() float64    { return p.marks / p.packets }
func (p portView) framesPerGbps() float64     { return p.pauseFrames / (p.rate * 8 / 1e9) }

// nodeView is what one evaluation of a node reads: each quantity is the sum of the irate of the
// counters it is made of, exactly as the generated Prometheus rules compute it.
type nodeView struct {
	// hasLine: the node reports at least one RDMA port rate; the traffic verdicts are relative to
	// it and are not evaluated without.
	hasLine bool
	line    float64 // sum of the ports' line rates (one direction), By/s

	rdma, netdev, gpu, cpuPCIe, memory float64 // By/s, both directions
	cpuWrite                           float64 // device -> host PCIe writes on every root port
	// pathWrite: device -> host PCIe writes on the root ports (IIO stacks) the GPUs and RDMA NICs
	// sit behind, or on every root port when the receivers do not map them.
	pathWrite  float64
	pathMapped bool

	netdevs map[string]float64 // each netdev's bytes/s, for the operator's sentence
	ports   []portView

	// GPUs are joined by PCI address: the rnic receiver's topology names a GPU by
	// gpu.pci.bus_id, the gpu receiver by its device (DCGM id, NVML index) with the address on
	// gpu.info.
	gpuReady     map[string]float64    // GPU PCI address -> best gpudirect_ready over its NICs
	gpuByBus     map[string]string     // GPU PCI address -> the gpu receiver's device (gpu.info)
	topoDegraded map[string]bool       // NIC -> PCIe link trained below capability
	gpuWidth     map[string][2]float64 // GPU device -> trained and maximum PCIe width
}

// gpuName is the device a GPU's verdict is reported on: the gpu receiver's name for the GPU at
// bus, or the address itself on a node without the gpu receiver.
func (v *nodeView) gpuName(bus string) string {
	if dev, ok := v.gpuByBus[bus]; ok {
		return dev
	}
	return bus
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
func (v *nodeView) pathWritePerRDMA() float64 { return v.pathWrite / v.rdma }

// view reads a node's series at now.
func (n *node) view(cfg *Config, now int64) *nodeView {
	v := &nodeView{netdevs: map[string]float64{}, gpuReady: map[string]float64{}, gpuByBus: map[string]string{},
		topoDegraded: map[string]bool{}, gpuWidth: map[string][2]float64{}}
	ports := map[string]*portView{}
	port := func(dev string) *portView {
		p := ports[dev]
		if p == nil {
			p = &portView{device: dev}
			ports[dev] = p
		}
		return p
	}
	netdevFrames := map[string]float64{}
	netdevPause := map[string]map[string]float64{} // netdev -> direction -> µs/s
	stackWrite := map[string]float64{}
	stacksOf := map[string][]string{} // pci.bus_id -> IIO stacks (root ports) it sits behind
	busIDs := map[string]bool{}       // the GPUs' and RDMA NICs' PCI addresses
	haveRate := map[string]bool{}
	has := map[string]bool{} // components with at least one rate
	lookback := cfg.StaleAfter

	for _, s := range n.series {
		a := s.attrs
		if counterMetrics[s.metric] {
			if s.metric == mInterconnectIO && (a["component"] == "gpu_pcie" || a["component"] == "rnic") && a["pci.bus_id"] != "" {
				if _, ok := s.value(now, lookback); ok {
					busIDs[a["pci.bus_id"]] = true
				}
			}
			r, ok := s.rate(now, cfg.Window)
			if !ok {
				continue
			}
			switch s.metric {
			case mInterconnectIO:
				has[a["component"]] = true
				switch a["component"] {
				case "rnic":
					v.rdma += r
					if a["direction"] == "transmit" {
						port(a["device"]).tx += r
					} else {
						port(a["device"]).rx += r
					}
				case "netdev":
					v.netdev += r
					v.netdevs[a["device"]] += r
				case "gpu_pcie":
					v.gpu += r
				case "cpu_pcie":
					v.cpuPCIe += r
					if a["direction"] == "receive" {
						v.cpuWrite += r
						stackWrite[a["device"]] += r
					}
				case "cpu_memory":
					v.memory += r
				}
			case mPackets:
				port(a["device"]).packets += r
			case mCNP, mECN:
				port(a["device"]).marks += r
			case mPFCFrames, mPauseFrames:
				netdevFrames[a["device"]] += r
			case mPFCDuration:
				d := netdevPause[a["device"]]
				if d == nil {
					d = map[string]float64{}
					netdevPause[a["device"]] = d
				}
				d[a["direction"]] += r
			}
			continue
		}
		val, ok := s.value(now, lookback)
		if !ok {
			continue
		}
		switch s.metric {
		case mPortRate:
			p := port(a["device"])
			p.rate = math.Max(p.rate, val)
			haveRate[a["device"]] = true
		case mPortInfo:
			port(a["device"]).netdev = a["netdev"]
		case mGPUDirectReady:
			if old, ok := v.gpuReady[a["gpu.pci.bus_id"]]; !ok || val > old {
				v.gpuReady[a["gpu.pci.bus_id"]] = val
			}
		case mGPUInfo:
			if a["pci.bus_id"] != "" {
				v.gpuByBus[a["pci.bus_id"]] = a["device"]
			}
		case mTopoDegraded:
			v.topoDegraded[a["device"]] = v.topoDegraded[a["device"]] || val == 1
		case mGPULinkWidth:
			w := v.gpuWidth[a["device"]]
			w[0] = val
			v.gpuWidth[a["device"]] = w
		case mGPULinkMaxWidth:
			w := v.gpuWidth[a["device"]]
			w[1] = val
			v.gpuWidth[a["device"]] = w
		case mPCIeDevice:
			stacksOf[a["pci.bus_id"]] = append(stacksOf[a["pci.bus_id"]], a["device"])
		}
	}

	// A quantity no series has a rate for is unknown (NaN), as a PromQL sum over no series is
	// absent: a node whose receiver has not reported twice yet decides nothing from it. Only a
	// port without an IP netdev (InfiniBand) counts as 0 IP bytes.
	unknown := func(x *float64, component string) {
		if !has[component] {
			*x = math.NaN()
		}
	}
	unknown(&v.rdma, "rnic")
	unknown(&v.gpu, "gpu_pcie")
	unknown(&v.cpuPCIe, "cpu_pcie")
	unknown(&v.cpuWrite, "cpu_pcie")
	unknown(&v.memory, "cpu_memory")
	if !has["rnic"] {
		v.netdev = math.NaN()
	}

	// The root ports on the RDMA path: those the GPUs and NICs sit behind.
	path := map[string]bool{}
	for id := range busIDs {
		for _, st := range stacksOf[id] {
			path[st] = true
		}
	}
	v.pathMapped = len(path) > 0
	for st, w := range stackWrite {
		if !v.pathMapped || path[st] {
			v.pathWrite += w
		}
	}
	unknown(&v.pathWrite, "cpu_pcie")

	if len(haveRate) == 0 {
		v.line = math.NaN()
	}
	for dev := range haveRate {
		p := ports[dev]
		v.hasLine = true
		v.line += p.rate
		p.peak = n.rememberRate(dev, p.rate, now, cfg.PortRateMemory.Nanoseconds())
		if p.netdev != "" {
			p.pauseFrames = netdevFrames[p.netdev]
			for _, us := range netdevPause[p.netdev] {
				p.pauseTime = math.Max(p.pauseTime, us/1e6)
			}
		}
		v.ports = append(v.ports, *p)
	}
	sort.Slice(v.ports, func(i, j int) bool { return v.ports[i].device < v.ports[j].device })
	return v
}

// conditions decides, for one view, which verdicts' conditions hold, per device: the definition
// that the Prometheus rules (prometheus.go) are generated from. Every comparison is false on NaN
// (0/0) as in PromQL, so a ratio without traffic under it decides nothing.
func conditions(t Thresholds, v *nodeView) map[verdictKey]bool {
	out := map[verdictKey]bool{}
	anyStorm, anyCongested := false, false
	for _, p := range v.ports {
		storm := p.pauseTime >= t.StormMinPauseTimeShare || p.framesPerGbps() >= t.StormMinPauseFramesPerGbps
		out[verdictKey{PFCStorm, p.device}] = storm
		anyStorm = anyStorm || storm
		anyCongested = anyCongested || (p.transmitLineShare() < t.CongestionMaxLineShare && p.marksPerPacket() >= t.CongestionMinMarksPerPacket)
		out[verdictKey{LinkDegraded, p.device}] = p.rate < p.peak
	}
	for dev, d := range v.topoDegraded {
		out[verdictKey{LinkDegraded, dev}] = out[verdictKey{LinkDegraded, dev}] || d
	}
	// A GPU's link is degraded when it trained to fewer lanes than it can use; a generation below
	// the maximum is not a fault (the driver lowers it on an idle GPU, README.md#link-degraded).
	for dev, w := range v.gpuWidth {
		out[verdictKey{LinkDegraded, dev}] = out[verdictKey{LinkDegraded, dev}] || w[0] < w[1]
	}
	for bus, ready := range v.gpuReady {
		out[verdictKey{GPUDirectNotReady, v.gpuName(bus)}] = ready == 0
	}
	if !v.hasLine {
		return out
	}
	busyNet := v.networkLineShare() >= t.BusyLineShare
	busyGPU := v.gpuLineShare() >= t.BusyLineShare
	rdmaCarried := v.rdmaShare() >= t.MinRDMAShare
	quietPath := v.pathWritePerRDMA() < t.HealthyMaxPathWritePerRDMAByte
	out[verdictKey{GPUDirectBounce, ""}] = busyNet && rdmaCarried &&
		v.pathWritePerRDMA() >= t.BounceMinPathWritePerRDMAByte &&
		v.memoryPerNetwork() >= t.BounceMinHostMemoryPerNetworkByte
	out[verdictKey{TCPFallback, ""}] = busyNet && busyGPU && v.rdmaShare() < t.FallbackMaxRDMAShare &&
		v.cpuWritePerNetwork() >= t.FallbackMinPCIeWritePerNetworkByte && v.memoryPerNetwork() >= t.FallbackMinMemoryPerNetworkByte
	out[verdictKey{FabricCongestion, ""}] = anyCongested && rdmaCarried && quietPath && !anyStorm
	out[verdictKey{HealthyGPUDirect, ""}] = busyNet && busyGPU && rdmaCarried && quietPath && !anyCongested && !anyStorm
	// Comparisons, not negations: "below busy" is false on NaN, as PromQL's filter is.
	out[verdictKey{Idle, ""}] = v.networkLineShare() < t.BusyLineShare && v.gpuLineShare() < t.BusyLineShare &&
		!anyStorm && !anyCongested
	return out
}

// evidence returns the ratios of a view, per device ("" for the node), finite ones only.
func evidence(v *nodeView) map[verdictKey]float64 {
	out := map[verdictKey]float64{}
	put := func(ratio, dev string, x float64) {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out[verdictKey{ratio, dev}] = x
		}
	}
	for _, p := range v.ports {
		put(rTransmitLine, p.device, p.transmitLineShare())
		put(rMarks, p.device, p.marksPerPacket())
		put(rPauseTime, p.device, p.pauseTime)
		put(rPauseFrames, p.device, p.framesPerGbps())
	}
	if v.hasLine {
		put(rRDMAShare, "", v.rdmaShare())
		put(rCPUPerNetwork, "", v.cpuPerNetwork())
		put(rCPUWrite, "", v.cpuWritePerNetwork())
		put(rMemoryPerNetwork, "", v.memoryPerNetwork())
		put(rNetworkLine, "", v.networkLineShare())
		put(rGPULine, "", v.gpuLineShare())
		put(rPathWrite, "", v.pathWritePerRDMA())
	}
	return out
}
