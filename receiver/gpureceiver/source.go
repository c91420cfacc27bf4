package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"time"
)

// quantity is one thing the receiver measures on a GPU, independent of the library it comes from.
// Each source (DCGM, NVML) maps its own field identifiers onto these, so that the scrape logic
// (integration, counters, blanks) is written and tested once.
type quantity uint8

const (
	// Rates in bytes per second, each averaged by the source over the period that ends at the
	// sample's timestamp (DCGM's profiling fields). Integrated into interconnect.io.
	qPCIeTxRate quantity = iota
	qPCIeRxRate
	qNVLinkTxRate
	qNVLinkRxRate
	qC2CTxRate
	qC2CRxRate
	// qPCIeBothRate is an AMD GPU's PCIe bytes/s, both directions as one figure: amdgpu's
	// gpu_metrics counts no direction (amdgpu_source.go amdPCIeRate).
	qPCIeBothRate

	// Cumulative byte counters kept by the driver. Preferred over the rates for the same link.
	qPCIeTxBytes
	qPCIeRxBytes
	qNVLinkTxBytes
	qNVLinkRxBytes
	// AMD XGMI, the GPU-to-GPU links of the Instinct series (amdgpu gpu_metrics).
	qXGMITxBytes
	qXGMIRxBytes

	// Ratios, 0 to 1.
	qDRAMActive
	qMemCopyUtil
	qSMActive
	qGREngineActive
	qGPUUtil

	// PCIe link health.
	qPCIeReplays // cumulative count
	qPCIeLinkGen
	qPCIeLinkWidth
	qPCIeMaxLinkGen
	qPCIeMaxLinkWidth

	// qXID: every sample is one XID event; its value is the XID number.
	qXID

	// Per NVLink link (sample.entity is the link): DCGM's rates in bytes/s (integrated), NVML's
	// cumulative bytes, and data-link error counts.
	qNVLinkLinkTxRate
	qNVLinkLinkRxRate
	qNVLinkLinkTxBytes
	qNVLinkLinkRxBytes
	qNVLinkLinkCRCErrors
	qNVLinkLinkReplays
	qNVLinkLinkRecoveries
	// Per AMD XGMI link (sample.entity is the index into gpu_metrics' xgmi_*_data_acc arrays):
	// cumulative bytes.
	qXGMILinkTxBytes
	qXGMILinkRxBytes

	// Link health per GPU, one quantity per family, the kind in sample.entity (an index into
	// nvlinkErrorKinds, nvlinkBERKinds, c2cErrorKinds): DCGM's NVLink5 error counters over all
	// links, their bit error rates, and the C2C link's error counters.
	qNVLinkErrors
	qNVLinkBER
	qC2CErrors

	numQuantities
)

// quantitySet holds every quantity in one uint64: this fails to compile when there are more.
var _ [64 - numQuantities]struct{}

var quantityNames = [numQuantities]string{
	qPCIeTxRate: "pcie_tx_rate", qPCIeRxRate: "pcie_rx_rate",
	qNVLinkTxRate: "nvlink_tx_rate", qNVLinkRxRate: "nvlink_rx_rate",
	qC2CTxRate: "c2c_tx_rate", qC2CRxRate: "c2c_rx_rate", qPCIeBothRate: "pcie_both_rate",
	qPCIeTxBytes: "pcie_tx_bytes", qPCIeRxBytes: "pcie_rx_bytes",
	qNVLinkTxBytes: "nvlink_tx_bytes", qNVLinkRxBytes: "nvlink_rx_bytes",
	qXGMITxBytes: "xgmi_tx_bytes", qXGMIRxBytes: "xgmi_rx_bytes",
	qDRAMActive: "dram_active", qMemCopyUtil: "mem_copy_util", qSMActive: "sm_active",
	qGREngineActive: "gr_engine_active", qGPUUtil: "gpu_util",
	qPCIeReplays: "pcie_replays", qPCIeLinkGen: "pcie_link_gen", qPCIeLinkWidth: "pcie_link_width",
	qPCIeMaxLinkGen: "pcie_max_link_gen", qPCIeMaxLinkWidth: "pcie_max_link_width",
	qXID:              "xid",
	qNVLinkLinkTxRate: "nvlink_link_tx_rate", qNVLinkLinkRxRate: "nvlink_link_rx_rate",
	qNVLinkLinkTxBytes: "nvlink_link_tx_bytes", qNVLinkLinkRxBytes: "nvlink_link_rx_bytes",
	qNVLinkLinkCRCErrors: "nvlink_link_crc_errors", qNVLinkLinkReplays: "nvlink_link_replays",
	qNVLinkLinkRecoveries: "nvlink_link_recoveries",
	qXGMILinkTxBytes:      "xgmi_link_tx_bytes", qXGMILinkRxBytes: "xgmi_link_rx_bytes",
	qNVLinkErrors: "nvlink_errors", qNVLinkBER: "nvlink_ber", qC2CErrors: "c2c_errors",
}

func (q quantity) String() string {
	if q < numQuantities {
		return quantityNames[q]
	}
	return fmt.Sprintf("quantity(%d)", uint8(q))
}

// isRate reports whether the quantity is a bytes/s rate to integrate.
func (q quantity) isRate() bool { return q <= qPCIeBothRate }

// isCounter reports whether the quantity is a cumulative counter kept by the driver.
func (q quantity) isCounter() bool {
	return (q >= qPCIeTxBytes && q <= qXGMIRxBytes) || q == qPCIeReplays || (q.isPerLink() && !q.isLinkRate()) ||
		q == qNVLinkErrors || q == qC2CErrors
}

// isHealthKind reports whether the quantity is a per-GPU link-health family whose samples name
// their kind in sample.entity.
func (q quantity) isHealthKind() bool { return q >= qNVLinkErrors && q <= qC2CErrors }

// isLinkRate reports whether the quantity is one NVLink link's rate in bytes/s, to integrate.
func (q quantity) isLinkRate() bool { return q == qNVLinkLinkTxRate || q == qNVLinkLinkRxRate }

// isPerLink reports whether the quantity is one NVLink or XGMI link's (sample.entity names the link).
func (q quantity) isPerLink() bool { return q >= qNVLinkLinkTxRate && q <= qXGMILinkRxBytes }

// isInteger reports whether the quantity's value is a whole number kept in sample.u: a counter,
// an XID number, a PCIe link generation or width.
func (q quantity) isInteger() bool {
	return q.isCounter() || q == qXID || (q >= qPCIeLinkGen && q <= qPCIeMaxLinkWidth)
}

// quantitySet is a set of quantities.
type quantitySet uint64

func (s quantitySet) has(q quantity) bool { return s&(1<<q) != 0 }
func (s *quantitySet) add(q quantity)     { *s |= 1 << q }
func (s quantitySet) with(qs ...quantity) quantitySet {
	for _, q := range qs {
		s.add(q)
	}
	return s
}

// sample is one value of one quantity of one GPU.
type sample struct {
	// gpu is the index of the GPU in the source's device list.
	gpu int
	q   quantity
	// ts is the source's own timestamp in microseconds since the Unix epoch.
	ts int64
	// valid is false for a sample the source marked blank, unsupported or failed: it carries no
	// value, but it still tells the integrator that the period up to ts is unaccounted for.
	valid bool
	// f holds rates and ratios, u counters and integer gauges (a 64-bit byte counter does not fit
	// a float64 exactly).
	f float64
	u uint64
	// entity is 0 for the GPU itself, else the MIG instance the sample belongs to (an XID raised
	// inside it): group<<24 | id; for a per-link quantity, the NVLink link.
	entity uint32
	// wrapBits is, for a counter that wraps, its width (an NVML field whose value type is 32
	// bits); 0 for 64-bit counters, where a decrease is a reset.
	wrapBits uint8
}

// gpuDevice is the identity of one GPU, resolved once when the source discovers it.
type gpuDevice struct {
	// id is the library's own GPU id (DCGM gpu id, NVML index), used in log messages.
	id uint
	// name is the stable instance name used in the device attribute: gpu<id>.
	name  string
	uuid  string
	model string
	// busID is the kernel's form of the PCI address (0000:3b:00.0), empty where unknown.
	busID string
	// numaNode is the kernel's numa_node of the PCI function, -1 where unknown.
	numaNode int64
}

// key names the GPU across rediscoveries and reconnections: its UUID, else its name.
func (d gpuDevice) key() string {
	if d.uuid != "" {
		return d.uuid
	}
	return d.name
}

// source is a library that can tell what GPUs there are and what they did.
type source interface {
	// kind names the library in logs and in the gpu.info metric's source attribute.
	kind() string
	// devices lists the GPUs discovered; the sample.gpu index refers to this slice.
	devices() []gpuDevice
	// poll appends to buf every sample produced since the previous poll; now is the scrape's
	// time. Per-field and per-GPU failures cost only those samples and come back as a partial
	// scrape error (scrapererror) with the points they cost, on every poll they happen. When the
	// source as a whole has failed (connection lost) the error is a lostError: the scraper
	// closes the source and opens it again later.
	poll(now time.Time, buf []sample) ([]sample, error)
	// refresh re-runs discovery (new GPUs, fields whose support changed) without losing the
	// integration state, which lives in the scraper.
	refresh() error
	close() error
}

// errBuiltWithoutGPU is returned by sources compiled without cgo (go-dcgm and go-nvml both need it).
var errBuiltWithoutGPU = errors.New("this collector was built without cgo (CGO_ENABLED=0), so it has no GPU support: build it with cgo enabled to read DCGM or NVML")

// errUnsupportedPlatform is returned by the sources of a collector built for another OS than
// Linux: go-dcgm exists for Linux only, and the receiver reads NUMA nodes from Linux sysfs.
var errUnsupportedPlatform = errors.New("unsupported platform: the gpu receiver reads GPUs on Linux only")

// noGPUSupport says why a build without go-dcgm and go-nvml (dcgm_nocgo.go) has no GPU: errors.Is
// errBuiltWithoutGPU either way, so that the receiver stops looking for a library.
func noGPUSupport(goos string) error {
	if goos != "linux" {
		return fmt.Errorf("%w (%w)", errUnsupportedPlatform, errBuiltWithoutGPU)
	}
	return errBuiltWithoutGPU
}
