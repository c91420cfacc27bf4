// Package verdict is the contract of what the diagnosis connector emits and the lensview
// exporter reads: the names of its metrics and their attributes, its verdicts and evidence ratios,
// and the attributes of its verdict-change log records. The connector's metadata.yaml enums are
// checked against it (connector/diagnosisconnector, TestContractIsTheMetadata), and the view's
// tests read the real connector's output with it.
package verdict // import "github.com/otelcol-iclens/otelcol-iclens/internal/verdict"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The connector's metrics, one point per node (resource host.name) and device.
const (
	// MetricVerdict is a gauge, 1 while the verdict holds and 0 for every other evaluated one.
	MetricVerdict = "diagnosis.verdict"
	// MetricEvidence is a gauge of the ratios the verdicts are decided on.
	MetricEvidence = "diagnosis.evidence"
)

// Attributes of the metrics' points and of the log records.
const (
	AttrVerdict = "verdict"
	AttrDevice  = "device" // "" for the node
	AttrRatio   = "ratio"  // diagnosis.evidence only
	// AttrPrevious is a log record's previous verdict: the node's verdict before the change, or
	// the device verdict that cleared (AttrVerdict "" then).
	AttrPrevious = "previous_verdict"
)

// The owner attributes of the metrics' points and the log records (the owner receiver's names,
// receiver/ownerreceiver): a device verdict carries its device's owner, and with the connector's
// per_owner each pod or job of a node has node-level verdicts of its own (device ""), its
// traffic evaluated alone. All empty on the node's own points and for a device no pod or job owns:
// a consumer that knows no owners reads the points whose AttrOwnerKind is empty.
const (
	AttrOwnerKind    = "owner.kind" // "pod", "job" or ""
	AttrJobID        = "job.id"
	AttrK8sNamespace = "k8s.namespace.name"
	AttrK8sPod       = "k8s.pod.name"
)

// OwnerAttrs are the owner attributes, in the order the connector's metrics carry them.
func OwnerAttrs() []string { return []string{AttrOwnerKind, AttrJobID, AttrK8sNamespace, AttrK8sPod} }

// The verdicts.
const (
	HealthyGPUDirect  = "healthy_gpudirect"
	TCPFallback       = "tcp_fallback"
	GPUDirectBounce   = "gpudirect_bounce"
	FabricCongestion  = "fabric_congestion"
	PFCStorm          = "pfc_storm"
	LinkDegraded      = "link_degraded"
	GPUDirectNotReady = "gpudirect_not_ready"
	Idle              = "idle"
	// CollectiveSlow and CollectiveStalled are verdicts on an NCCL communicator: device is
	// CollectiveDevice(comm, collective) for a slow collective type, the communicator's id for a
	// stalled one.
	CollectiveSlow    = "collective_slow"
	CollectiveStalled = "collective_stalled"
	// Straggler is a cross-node verdict on an NCCL communicator's collective type (device
	// CollectiveDevice(comm, collective)): the node's ranks are the ones the communicator's other
	// nodes wait for in it.
	Straggler = "straggler"
	// WaitsOnPeer is a cross-node verdict: the node has no fault of its own, and a peer of its
	// job or NCCL communicator has one, which its collectives wait on; device is the peer's node
	// (its host.name). Only a collector that receives the peer's metrics too (a gateway) raises it.
	WaitsOnPeer = "waits_on_peer"
)

// CollectiveDevice is the device attribute of a communicator's collective type: 0x7f8c/AllReduce.
func CollectiveDevice(comm, collective string) string { return comm + "/" + collective }

// Names are every verdict, node verdicts first.
func Names() []string {
	return []string{HealthyGPUDirect, TCPFallback, GPUDirectBounce, FabricCongestion, PFCStorm, LinkDegraded, GPUDirectNotReady, Idle,
		CollectiveSlow, CollectiveStalled, Straggler, WaitsOnPeer}
}

// PeerFaults are the verdicts of a node that its peers wait on (WaitsOnPeer): its traffic's faults
// and its ports' and links', in the order a sentence names the first that holds.
func PeerFaults() []string {
	return []string{TCPFallback, GPUDirectBounce, FabricCongestion, PFCStorm, LinkDegraded, Straggler}
}

// NodeVerdicts are the verdicts on a node's traffic (device ""): at most one holds at a time.
func NodeVerdicts() []string {
	return []string{HealthyGPUDirect, TCPFallback, GPUDirectBounce, FabricCongestion, Idle}
}

// The evidence ratios: the values of AttrRatio, and the names of a log record's evidence
// attributes (one double attribute per ratio).
const (
	RDMAShare        = "rdma_share_of_network"
	CPUPerNetwork    = "cpu_pcie_per_network_byte"
	CPUWrite         = "cpu_pcie_write_per_network_byte"
	MemoryPerNetwork = "host_memory_per_network_byte"
	TransmitLine     = "rdma_transmit_line_share"
	NetworkLine      = "network_line_share"
	GPULine          = "gpu_pcie_line_share"
	PathWrite        = "path_pcie_write_per_rdma_byte"
	// PathWriteBeyondIP is PathWrite less the IP netdev bytes, which explain as many
	// device-to-host writes (a NIC writes what it receives; what it sends was staged there).
	PathWriteBeyondIP = "path_pcie_write_beyond_ip_per_rdma_byte"
	Marks             = "congestion_marks_per_packet"
	PauseTime         = "pause_time_share"
	PauseFrames       = "pause_frames_per_gbps"
	// CollectivePathShare is a collective type's bus bandwidth over what its communicator's path
	// carries (its GPUs' nearest NICs, capped by their PCIe links), per CollectiveDevice.
	CollectivePathShare = "collective_bus_bandwidth_path_share"
	// BurstTimeShare is a port's share of the time it transmitted at or above the connector's
	// congestion_burst_share of its line rate (the rnic receiver's fast sampler), per port.
	BurstTimeShare = "port_burst_time_share"
)

// The ratios per GPU byte, for a socket transport on an interface no receiver watches.
const (
	CPUWritePerGPU   = "cpu_pcie_write_per_gpu_byte"
	MemoryPerGPU     = "host_memory_per_gpu_byte"
	GPUTransmitShare = "gpu_pcie_transmit_share"
)

// Ratios are every evidence ratio.
func Ratios() []string {
	return []string{RDMAShare, CPUPerNetwork, CPUWrite, MemoryPerNetwork, TransmitLine, NetworkLine, GPULine, PathWrite,
		PathWriteBeyondIP, CPUWritePerGPU, MemoryPerGPU, GPUTransmitShare, Marks, PauseTime, PauseFrames, CollectivePathShare,
		BurstTimeShare}
}

var ratios = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range Ratios() {
		m[r] = true
	}
	return m
}()

// IsRatio reports whether name is an evidence ratio.
func IsRatio(name string) bool { return ratios[name] }

// Evidence is a log record's evidence: its ratio attributes.
func Evidence(attrs pcommon.Map) map[string]float64 {
	out := map[string]float64{}
	attrs.Range(func(k string, v pcommon.Value) bool {
		if ratios[k] && v.Type() == pcommon.ValueTypeDouble {
			out[k] = v.Double()
		}
		return true
	})
	return out
}
