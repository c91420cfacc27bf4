package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// DCGM field identifiers, from dcgm_fields.h as shipped in go-dcgm v1.4611.0
// (pkg/dcgm/dcgm_fields.h; DCGM 4.6 renamed many fields but kept every numeric ID, and the IDs are
// used here so that a hostengine of either naming works). Units and semantics are those of the
// field's entry in dcgm_fields.h and of DCGM's documentation of the profiling metrics
// (docs.nvidia.com/datacenter/dcgm, "Profiling Metrics").
const (
	dcgmFieldGPUName  uint16 = 50 // DCGM_FI_DEV_GPU_NAME, string
	dcgmFieldGPUUUID  uint16 = 54 // DCGM_FI_DEV_GPU_UUID, string
	dcgmFieldPCIBusID uint16 = 57 // DCGM_FI_DEV_PCI_BUS_ID, string "00000000:3B:00.0"

	dcgmFieldC2CLinkCount uint16 = 285 // DCGM_FI_DEV_C2C_LINK_QUANTITY (alias C2C_LINK_COUNT), int64

	dcgmFieldPCIeReplay   uint16 = 202 // DCGM_FI_DEV_PCIE_REPLAY_COUNTER / _TOTAL, cumulative count
	dcgmFieldGPUUtil      uint16 = 203 // DCGM_FI_DEV_GPU_UTIL(_RATIO), int64 percent (NVML utilization.gpu)
	dcgmFieldMemCopyUtil  uint16 = 204 // DCGM_FI_DEV_MEM_COPY_UTIL, int64 percent
	dcgmFieldXID          uint16 = 230 // DCGM_FI_DEV_XID_ERRORS / XID_ERROR, the last XID
	dcgmFieldPCIeMaxGen   uint16 = 235 // DCGM_FI_DEV_PCIE_MAX_LINK_GEN
	dcgmFieldPCIeMaxWidth uint16 = 236 // DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH
	dcgmFieldPCIeGen      uint16 = 237 // DCGM_FI_DEV_PCIE_LINK_GEN
	dcgmFieldPCIeWidth    uint16 = 238 // DCGM_FI_DEV_PCIE_LINK_WIDTH

	dcgmFieldGREngineActive uint16 = 1001 // DCGM_FI_PROF_GR_ENGINE_ACTIVE, double ratio
	dcgmFieldSMActive       uint16 = 1002 // DCGM_FI_PROF_SM_ACTIVE, double ratio
	dcgmFieldDRAMActive     uint16 = 1005 // DCGM_FI_PROF_DRAM_ACTIVE, double ratio
	dcgmFieldPCIeTxRate     uint16 = 1009 // DCGM_FI_PROF_PCIE_TX_BYTES, bytes/s (a rate, despite the name)
	dcgmFieldPCIeRxRate     uint16 = 1010 // DCGM_FI_PROF_PCIE_RX_BYTES, bytes/s
	dcgmFieldNVLinkTxRate   uint16 = 1011 // DCGM_FI_PROF_NVLINK_TX_BYTES, bytes/s
	dcgmFieldNVLinkRxRate   uint16 = 1012 // DCGM_FI_PROF_NVLINK_RX_BYTES, bytes/s
	dcgmFieldC2CTxRate      uint16 = 1076 // DCGM_FI_PROF_C2C_TX_ALL_BYTES, bytes/s (GPM MiB/s x 2^20)
	dcgmFieldC2CRxRate      uint16 = 1078 // DCGM_FI_PROF_C2C_RX_ALL_BYTES, bytes/s
	dcgmFieldPCIeTxTotal    uint16 = 1091 // DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL, cumulative bytes (DCGM 4.6)
	dcgmFieldPCIeRxTotal    uint16 = 1092 // DCGM_FI_PROF_PCIE_RX_BYTES_TOTAL, cumulative bytes (DCGM 4.6)
	dcgmFieldNVLinkTxTotal  uint16 = 1201 // DCGM_FI_DEV_NVLINK_TX_BYTES_TOTAL, cumulative bytes, NVLink5+
	dcgmFieldNVLinkRxTotal  uint16 = 1203 // DCGM_FI_DEV_NVLINK_RX_BYTES_TOTAL, cumulative bytes, NVLink5+

	// DCGM 4.6's per-link NVLink GPM bytes, one field id for every link, read on DCGM_FE_LINK
	// entities (dcgm_fields.h:3521-3528; dcgm_links.go).
	dcgmFieldNVLinkTxPerLink uint16 = 1532 // DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK, bytes/s
	dcgmFieldNVLinkRxPerLink uint16 = 1533 // DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK, bytes/s
)

// DCGM entity groups (dcgm_fields.h dcgm_field_entity_group_t).
const (
	dcgmFEGPU   = 1 // DCGM_FE_GPU
	dcgmFEGPUI  = 4 // DCGM_FE_GPU_I, a MIG GPU instance
	dcgmFEGPUCI = 5 // DCGM_FE_GPU_CI, a MIG compute instance
	dcgmFELink  = 6 // DCGM_FE_LINK, an NVLink link (a packed dcgm_link_t, dcgmLink)
)

// DCGM return codes the receiver tells apart (dcgm_structs.h dcgmReturn_enum; go-dcgm const.go).
const (
	dcgmStOK                    = 0
	dcgmStNotSupported          = -6
	dcgmStNoData                = -14
	dcgmStGPUIsLost             = -18
	dcgmStConnectionNotValid    = -21
	dcgmStModuleNotLoaded       = -33
	dcgmStInUse                 = -34
	dcgmStProfilingNotSupported = -36
	dcgmStProfilingLibraryError = -37
	dcgmStProfilingMultiPass    = -38
	dcgmStNVMLNotLoaded         = -56
)

// Blank and sentinel values (dcgm_structs.h: DCGM_INT64_BLANK 0x7ffffffffffffff0 and +1 NOT_FOUND,
// +2 NOT_SUPPORTED, +3 NOT_PERMISSIONED; DCGM_FP64_BLANK 140737488355328.0 and the same +1..+3;
// DCGM_STR_BLANK "<<<NULL>>>" and friends). The C macros DCGM_INT64_IS_BLANK/DCGM_FP64_IS_BLANK
// treat everything from the blank value up as blank.
const (
	dcgmInt64Blank           int64   = 0x7ffffffffffffff0
	dcgmInt64NotSupported    int64   = dcgmInt64Blank + 2
	dcgmInt64NotPermissioned int64   = dcgmInt64Blank + 3
	dcgmFP64Blank            float64 = 140737488355328.0
	dcgmStrBlankPrefix               = "<<<"
)

// DCGM field types (dcgm_fields.h DCGM_FT_*).
const (
	dcgmTypeDouble = 'd'
	dcgmTypeInt64  = 'i'
	dcgmTypeString = 's'
)

// dcgmFieldSpec maps one DCGM field onto a quantity.
type dcgmFieldSpec struct {
	id uint16
	q  quantity
	// percent: the field is an integer percentage; divide by 100 for a ratio.
	percent bool
	// history: the field is read with GetValuesSince over every sample (rates are integrated,
	// XIDs counted); the others are read as latest values once per scrape.
	history bool
	// link is the NVLink link of a per-link quantity's field (q.isPerLink()).
	link uint32
	// kind is the index of a link-health field in its family's kinds (q.isHealthKind()).
	kind uint32
}

// DCGM's link-health fields (dcgm_fields.h, go-dcgm v1.4611.0), one table per family, in the order
// of the kinds the metrics name them by (nvlinkErrorKinds, nvlinkBERKinds, c2cErrorKinds):
//   - NVLink5 error counters over all links, "NVLink5+ only. Returns aggregate value across all
//     links. Not supported on NVLink4 and earlier": DCGM_FI_DEV_NVLINK_RX_PACKET_MALFORMED_TOTAL
//     1204, _RX_PACKET_DROPPED_TOTAL 1205 (discarded on a buffer overrun), _RX_ERROR_TOTAL 1206,
//     _RX_REMOTE_ERROR_TOTAL 1207 (stomp/EBP marker), _RX_GENERAL_ERROR_TOTAL 1208 (header
//     mismatch), _INTEGRITY_ERROR_TOTAL 1209 (local errors past a threshold), _TX_DISCARD_TOTAL
//     1210, _RECOVERY_EVENT_TOTAL 1213 (the link entered recovery, whatever came of it),
//     _RECOVERY_FAILED_TOTAL 1212 (and was declared down), _RX_SYMBOL_ERROR_TOTAL 1214,
//     _EFFECTIVE_ERROR_TOTAL 1219 (errors left after FEC). 1211 (_RECOVERY_SUCCESSFUL) is 1213
//     less 1212, and not read.
//   - their bit error rates, decoded by DCGM: DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO 1216 (before
//     FEC) and _EFFECTIVE_BER_RATIO 1218 (after it), doubles; the _RAW encodings 1215/1217 are not
//     read.
//   - the C2C link's errors (GH200, GB200): DCGM_FI_DEV_C2C_LINK_ERROR_TOTAL 1400 (CRC),
//     _REPLAY_ERROR_TOTAL 1401, _REPLAY_ERROR_B2B_TOTAL 1402 (back-to-back replays).
//
// The NVLink5 FEC history bins (DCGM_FI_DEV_NVLINK_FEC_HISTORY_0..15_TOTAL, 1404-1419) are not read:
// 16 series per GPU for a distribution the BER already summarizes.
var (
	dcgmNVLinkErrorFields = []uint16{1204, 1205, 1206, 1207, 1208, 1209, 1210, 1213, 1212, 1214, 1219}
	dcgmNVLinkBERFields   = []uint16{1216, 1218}
	dcgmC2CErrorFields    = []uint16{1400, 1401, 1402}
)

// dcgmHealthSpecs maps the link-health fields onto their families, each field's kind its index.
func dcgmHealthSpecs() []dcgmFieldSpec {
	var out []dcgmFieldSpec
	for _, f := range []struct {
		ids []uint16
		q   quantity
	}{{dcgmNVLinkErrorFields, qNVLinkErrors}, {dcgmNVLinkBERFields, qNVLinkBER}, {dcgmC2CErrorFields, qC2CErrors}} {
		for k, id := range f.ids {
			out = append(out, dcgmFieldSpec{id: id, q: f.q, kind: uint32(k)})
		}
	}
	return out
}

// probed reports whether the field is read only where one live read at discovery gave it a value:
// the non-profiling counters that not every GPU has (NVLink5 byte totals, per-link and link-health
// counters) and the NVLink5 bit error rates. A GPU without them answers blank or NOT_SUPPORTED, and
// is then not asked again.
func (f dcgmFieldSpec) probed() bool {
	return (f.q.isCounter() && f.q != qPCIeReplays && !f.isProfiling()) || f.q == qNVLinkBER
}

// DCGM's per-link NVLink data-link error counters, L0 to L17, from dcgm_fields.h (go-dcgm
// v1.4611.0): DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_L<n>_TOTAL, DCGM_FI_DEV_NVLINK_REPLAY_ERROR_L<n>_TOTAL
// and DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_L<n>_TOTAL (the older ..._ERROR_COUNT_L<n> names). The ids
// are not contiguous: links 0-5 were defined first, 6-11 and 12-17 later.
var (
	dcgmNVLinkCRCFields      = [18]uint16{400, 401, 402, 403, 404, 405, 451, 452, 453, 454, 455, 456, 406, 407, 408, 481, 482, 483}
	dcgmNVLinkReplayFields   = [18]uint16{420, 421, 422, 423, 424, 425, 463, 464, 465, 466, 467, 468, 426, 427, 428, 487, 488, 489}
	dcgmNVLinkRecoveryFields = [18]uint16{430, 431, 432, 433, 434, 435, 469, 470, 471, 472, 473, 474, 436, 437, 438, 491, 492, 493}
)

// dcgmNVLinkErrorSpecs maps the per-link error counters onto the per-link quantities, and DCGM's
// per-link byte rates DCGM_FI_PROF_NVLINK_L<n>_TX_BYTES / _RX_BYTES (1040 + 2n / 1041 + 2n,
// dcgm_fields.h: "The per-link number of bytes of active NvLink TX (transmit) or RX ... data
// including both header and payload", bytes/s like 1011/1012) onto the per-link rates.
func dcgmNVLinkErrorSpecs() []dcgmFieldSpec {
	var out []dcgmFieldSpec
	for l := uint16(0); l < 18; l++ {
		out = append(out, dcgmFieldSpec{id: 1040 + 2*l, q: qNVLinkLinkTxRate, history: true, link: uint32(l)},
			dcgmFieldSpec{id: 1041 + 2*l, q: qNVLinkLinkRxRate, history: true, link: uint32(l)})
	}
	for _, k := range []struct {
		ids *[18]uint16
		q   quantity
	}{{&dcgmNVLinkCRCFields, qNVLinkLinkCRCErrors}, {&dcgmNVLinkReplayFields, qNVLinkLinkReplays}, {&dcgmNVLinkRecoveryFields, qNVLinkLinkRecoveries}} {
		for l, id := range k.ids {
			out = append(out, dcgmFieldSpec{id: id, q: k.q, link: uint32(l)})
		}
	}
	return out
}

// isProfiling reports whether the field belongs to DCGM's profiling (DCP) module: IDs from 1001 to
// 1099 are DCGM_FI_PROF_*, which need the profiling module (pre-Hopper) or GPM (Hopper+), and which
// GetSupportedMetricGroups lists per GPU.
func (f dcgmFieldSpec) isProfiling() bool { return f.id >= 1001 && f.id < 1100 }

// dcgmFieldSpecs lists every field the receiver may watch. Where a link has both a cumulative
// counter and a rate, discovery keeps only one of them per GPU (the counter when it works).
var dcgmFieldSpecs = append([]dcgmFieldSpec{
	{id: dcgmFieldPCIeTxRate, q: qPCIeTxRate, history: true},
	{id: dcgmFieldPCIeRxRate, q: qPCIeRxRate, history: true},
	{id: dcgmFieldNVLinkTxRate, q: qNVLinkTxRate, history: true},
	{id: dcgmFieldNVLinkRxRate, q: qNVLinkRxRate, history: true},
	{id: dcgmFieldC2CTxRate, q: qC2CTxRate, history: true},
	{id: dcgmFieldC2CRxRate, q: qC2CRxRate, history: true},
	// XIDs: DCGM records one sample per XID event (the watch registers NVML device events,
	// DcgmCacheManager ManageDeviceEvents); dcgm-exporter counts them the same way, one per
	// GetValuesSince value (internal/pkg/collector/xid_collector.go, expcollector.go).
	{id: dcgmFieldXID, q: qXID, history: true},

	{id: dcgmFieldPCIeTxTotal, q: qPCIeTxBytes},
	{id: dcgmFieldPCIeRxTotal, q: qPCIeRxBytes},
	{id: dcgmFieldNVLinkTxTotal, q: qNVLinkTxBytes},
	{id: dcgmFieldNVLinkRxTotal, q: qNVLinkRxBytes},
	{id: dcgmFieldDRAMActive, q: qDRAMActive},
	{id: dcgmFieldMemCopyUtil, q: qMemCopyUtil, percent: true},
	{id: dcgmFieldSMActive, q: qSMActive},
	{id: dcgmFieldGREngineActive, q: qGREngineActive},
	{id: dcgmFieldGPUUtil, q: qGPUUtil, percent: true},
	{id: dcgmFieldPCIeReplay, q: qPCIeReplays},
	{id: dcgmFieldPCIeGen, q: qPCIeLinkGen},
	{id: dcgmFieldPCIeWidth, q: qPCIeLinkWidth},
	{id: dcgmFieldPCIeMaxGen, q: qPCIeMaxLinkGen},
	{id: dcgmFieldPCIeMaxWidth, q: qPCIeMaxLinkWidth},
}, append(dcgmNVLinkErrorSpecs(), dcgmHealthSpecs()...)...)

// counterFor returns, for a rate quantity, the cumulative counter of the same link, if DCGM has one.
func counterFor(q quantity) (quantity, bool) {
	switch q {
	case qPCIeTxRate:
		return qPCIeTxBytes, true
	case qPCIeRxRate:
		return qPCIeRxBytes, true
	case qNVLinkTxRate:
		return qNVLinkTxBytes, true
	case qNVLinkRxRate:
		return qNVLinkRxBytes, true
	}
	return 0, false
}

// dcgmStatusReason explains a DCGM return code the way an operator can act on it.
func dcgmStatusReason(code int) string {
	switch code {
	case dcgmStNotSupported:
		return "not supported on this GPU or driver (DCGM_ST_NOT_SUPPORTED)"
	case dcgmStNoData:
		return "no data yet (DCGM_ST_NO_DATA)"
	case dcgmStGPUIsLost:
		return "the GPU has fallen off the bus (DCGM_ST_GPU_IS_LOST)"
	case dcgmStConnectionNotValid:
		return "the connection to nv-hostengine is gone (DCGM_ST_CONNECTION_NOT_VALID)"
	case dcgmStModuleNotLoaded:
		return "DCGM's profiling module is not loaded (DCGM_ST_MODULE_NOT_LOADED): before Hopper it needs the datacenter-gpu-manager-4-proprietary package and nv-hostengine running as root or with CAP_SYS_ADMIN"
	case dcgmStInUse:
		return "the GPU's performance counters are held by another tool such as Nsight or CUPTI, or another DCGM instance (DCGM_ST_IN_USE)"
	case dcgmStProfilingNotSupported:
		return "profiling is not supported on this GPU (DCGM_ST_PROFILING_NOT_SUPPORTED: consumer GPU, vGPU, or MIG for PCIe fields)"
	case dcgmStProfilingLibraryError:
		return "DCGM's profiling library failed (DCGM_ST_PROFILING_LIBRARY_ERROR)"
	case dcgmStProfilingMultiPass:
		return "these profiling fields cannot be watched together on this GPU (DCGM_ST_PROFILING_MULTI_PASS)"
	case dcgmStNVMLNotLoaded:
		return "nv-hostengine could not load NVML (DCGM_ST_NVML_NOT_LOADED)"
	}
	return "DCGM error " + strconv.Itoa(code)
}

// errBlank is a value DCGM has not produced yet (DCGM_ST_NO_DATA, a blank or NOT_FOUND sentinel,
// as the first sample of a profiling field usually is): no sample, nothing to tell the operator.
var errBlank = errors.New("no value yet (blank)")

// errNotSupported is a field this GPU or driver does not provide (DCGM_ST_NOT_SUPPORTED or the
// NOT_SUPPORTED sentinel): it leaves the plan.
var errNotSupported = errors.New(dcgmStatusReason(dcgmStNotSupported))

// convertDCGM turns one DCGM value into a sample. An invalid sample comes back with an error:
// errBlank, errNotSupported, or the reason to tell the operator.
func convertDCGM(v dcgmValue, spec dcgmFieldSpec) (sample, error) {
	smp := sample{q: spec.q, ts: v.ts}
	switch v.status {
	case dcgmStOK:
	case dcgmStNoData:
		return smp, errBlank
	case dcgmStNotSupported:
		return smp, errNotSupported
	default:
		return smp, errors.New(dcgmStatusReason(v.status))
	}
	var x float64
	switch v.fieldType {
	case dcgmTypeInt64:
		switch {
		case v.i == dcgmInt64NotSupported:
			return smp, errNotSupported
		case v.i == dcgmInt64NotPermissioned:
			return smp, errors.New("not permitted (DCGM_INT64_NOT_PERMISSIONED): nv-hostengine lacks the privilege")
		case v.i >= dcgmInt64Blank:
			return smp, errBlank
		case v.i < 0:
			return smp, fmt.Errorf("negative value %d", v.i)
		}
		x, smp.u = float64(v.i), uint64(v.i)
	case dcgmTypeDouble:
		switch {
		case v.f == dcgmFP64Blank+2:
			return smp, errNotSupported
		case v.f >= dcgmFP64Blank:
			return smp, errBlank
		case math.IsNaN(v.f) || math.IsInf(v.f, 0) || v.f < 0:
			return smp, fmt.Errorf("invalid value %v", v.f)
		}
		x, smp.u = v.f, uint64(v.f)
	default:
		return smp, fmt.Errorf("unexpected field type %q", v.fieldType)
	}
	smp.valid = true
	if spec.q.isInteger() {
		// Counters keep their 64 bits in u; a float64 would lose them above 2^53.
		return smp, nil
	}
	smp.u = 0
	if spec.percent {
		x /= 100
	}
	smp.f = x
	return smp, nil
}

// dcgmSpecByID maps a field id to its spec.
var dcgmSpecByID = func() map[uint16]dcgmFieldSpec {
	m := make(map[uint16]dcgmFieldSpec, len(dcgmFieldSpecs))
	for _, f := range dcgmFieldSpecs {
		m[f.id] = f
	}
	return m
}()

// dcgmFieldOf returns the DCGM field that carries quantity q.
func dcgmFieldOf(q quantity) dcgmFieldSpec {
	for _, f := range dcgmFieldSpecs {
		if f.q == q {
			return f
		}
	}
	panic("no DCGM field for " + q.String())
}
