package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

// The receivers' metrics a node's state is made of (receiver/rnicreceiver, cpuuncorereceiver and
// gpureceiver metadata.yaml).
const (
	MetricIO          = "interconnect.io"
	MetricPackets     = "rnic.packets"
	MetricCNP         = "rnic.roce.cnp"
	MetricECN         = "rnic.roce.ecn_marked"
	MetricPFCFrames   = "rnic.pfc.pause_frames"
	MetricPFCDuration = "rnic.pfc.pause_duration"
	MetricPauseFrames = "rnic.pause.frames"
	MetricXmitWait    = "rnic.port.xmit_wait"
	MetricPortRate    = "rnic.port.rate"
	MetricPortWidth   = "rnic.port.width"
	MetricPortState   = "rnic.port.state"
	MetricPortInfo    = "rnic.port.info"
	MetricSaturated   = "rnic.counter.saturated"
	MetricTopoReady   = "rnic.topology.gpudirect_ready"
	MetricTopoDist    = "rnic.topology.gpu_distance"
	MetricTopoNearest = "rnic.topology.nearest_rnic"
	MetricTopoACS     = "rnic.topology.acs_redirect"
	MetricTopoIOMMU   = "rnic.topology.iommu"
	MetricTopoPeerMem = "rnic.topology.peer_memory"
	MetricTopoDegrade = "rnic.topology.link.degraded"
	MetricGPUInfo     = "gpu.info"
	MetricGPUWidth    = "gpu.pcie.link.width"
	MetricGPUMaxWidth = "gpu.pcie.link.max_width"
	MetricGPUMaxGen   = "gpu.pcie.link.max_generation"
	MetricDRAMActive  = "gpu.dram.active"
	MetricPCIeDevice  = "cpuuncore.pcie.device"
	// The rnic receiver's fast sampler (bursts.period): a port's highest rate over one sampling
	// window of the collection interval, and the seconds it ran at or above a share of its line.
	MetricBurstPeak      = "rnic.burst.peak_rate"
	MetricBurstTimeAbove = "rnic.burst.time_above"
	// The cpuuncore receiver's fast sampler: a memory controller's or an IIO stack's highest
	// rate over one sampling window (no line rate, so no time above).
	MetricUncoreBurstPeak = "cpuuncore.burst.peak_rate"
	// The gpu receiver's fast sampler (NVML's cumulative PCIe counters): a GPU's PCIe link's
	// highest rate over one sampling window, per direction.
	MetricGPUBurstPeak = "gpu.burst.peak_rate"
)

// Attributes of those metrics.
const (
	AttrComponent = "component"
	AttrDirection = "direction"
	AttrDevice    = "device"
	AttrBusID     = "pci.bus_id"
	AttrGPUBusID  = "gpu.pci.bus_id"
	AttrNetdev    = "netdev"
	AttrHCAType   = "hca_type"
	AttrPath      = "pcie.path"
	AttrReason    = "gpudirect.reason"
	AttrIOMMUMode = "iommu.mode"
	AttrMechanism = "mechanism"
	AttrCounter   = "counter"
	AttrPriority  = "priority"
	// AttrBurstWindow is the fast sampler's window ("10ms"), AttrBurstShare the share of the line
	// rate a time_above series counts at ("0.9").
	AttrBurstWindow = "burst.window"
	AttrBurstShare  = "burst.share"
)

// The interconnect.io components (the interconnect components InterconnectLens draws) and
// directions.
const (
	RNIC      = "rnic"
	Netdev    = "netdev"
	GPUPCIe   = "gpu_pcie"
	CPUPCIe   = "cpu_pcie"
	CPUMemory = "cpu_memory"

	Transmit = "transmit"
	Receive  = "receive"
)

// HostNameKey is the resource attribute a node is keyed by (OpenTelemetry semantic conventions,
// host.name); a node agent's metrics without it are "this node" (key "").
const HostNameKey = "host.name"

// counters are the cumulative sums a rate is taken of; gauges are read as their newest value.
var counters = map[string]bool{
	MetricIO: true, MetricPackets: true, MetricCNP: true, MetricECN: true,
	MetricPFCFrames: true, MetricPFCDuration: true, MetricPauseFrames: true,
	MetricNVLinkLinkIO: true, MetricNVLinkLinkErrors: true, MetricBurstTimeAbove: true,
}

var gauges = map[string]bool{
	MetricPortRate: true, MetricPortWidth: true, MetricPortInfo: true,
	MetricTopoReady: true, MetricTopoDist: true, MetricTopoNearest: true, MetricTopoACS: true,
	MetricTopoIOMMU: true, MetricTopoPeerMem: true, MetricTopoDegrade: true,
	MetricGPUInfo: true, MetricGPUWidth: true, MetricGPUMaxWidth: true, MetricGPUMaxGen: true, MetricPCIeDevice: true,
	MetricOwner: true, MetricBurstPeak: true,
}

// Reads reports whether a metric is part of a node's state.
func Reads(metric string) bool { return counters[metric] || gauges[metric] }
