package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"encoding/binary"
	"fmt"
)

// amdMetrics is what the receiver takes from one amdgpu gpu_metrics table
// (/sys/class/drm/cardN/device/gpu_metrics, amdgpu_pm.c amdgpu_get_gpu_metrics: the table the SMU
// driver filled, written out as it is, a C struct of drivers/gpu/drm/amd/include/kgd_pp_interface.h).
type amdMetrics struct {
	formatRev, contentRev uint8
	// umcActivity is average_umc_activity, the memory controller's busy percentage.
	umcActivity uint16
	// pcieWidth is pcie_link_width (lanes), pcieSpeed pcie_link_speed (0.1 GT/s).
	pcieWidth, pcieSpeed uint16
	// pcieReplays is pcie_replay_count_acc, the accumulated PCIe replay count.
	pcieReplays uint64
	// pcieBandwidthAcc is pcie_bandwidth_acc ("PCIE accumulated bandwidth (GB/sec)"), one figure
	// for both directions: the firmware's PcieBandwidthAcc, which it adds the instantaneous GB/s
	// to once per accumulation cycle (the reading amdPCIeRate assumes, see the README).
	pcieBandwidthAcc uint64
	// accumulations is accumulation_counter ("Accumulation cycle counter", tables 1.6 and later):
	// the cycles the firmware's *_acc fields were added over; accumulationBits its width (32 in
	// the structs, the attribute's type in 1.9).
	accumulations    uint64
	accumulationBits uint8
	// xgmiReadKB and xgmiWriteKB are xgmi_read_data_acc / xgmi_write_data_acc ("XGMI accumulated
	// data transfer size(KiloBytes)"), one per XGMI link (NUM_XGMI_LINKS 8).
	xgmiReadKB, xgmiWriteKB [amdXGMILinks]uint64
	// has says which of these the table holds: every one in the fixed layouts 1.4 to 1.8; in
	// 1.9 those whose attribute the table lists (an attribute-encoded table may leave any out).
	has amdHas
}

// amdHas is a set of amdMetrics fields present in a table.
type amdHas uint8

const (
	amdHasUMC amdHas = 1 << iota
	amdHasPCIeWidth
	amdHasPCIeSpeed
	amdHasPCIeBandwidth
	amdHasPCIeReplays
	amdHasXGMIRead
	amdHasXGMIWrite
	amdHasAccumulations

	// amdHasAll is what every fixed layout holds; accumulation_counter only 1.6 and later.
	amdHasAll = amdHasUMC | amdHasPCIeWidth | amdHasPCIeSpeed | amdHasPCIeBandwidth | amdHasPCIeReplays | amdHasXGMIRead | amdHasXGMIWrite
)

// amdXGMILinks is NUM_XGMI_LINKS (kgd_pp_interface.h).
const amdXGMILinks = 8

// amdMetricsLayout is where the fields the receiver reads lie in one version of the table. The
// structs are not packed: every field is at its natural alignment (little-endian on every
// platform amdgpu runs on that the receiver supports). Offsets follow from the struct
// definitions in kgd_pp_interface.h, with NUM_VCN 4, NUM_JPEG_ENG 32, NUM_XGMI_LINKS 8.
type amdMetricsLayout struct {
	// size is the smallest structure_size the version can have: the whole struct for v1_4 and
	// v1_5; for v1_6 to v1_8, whose tail (xcp_stats[NUM_XCP]) the receiver does not read, the
	// end of the fields it reads.
	size                          int
	umc, pcieWidth, pcieSpeed     int
	pcieBandwidthAcc, pcieReplays int
	xgmiRead, xgmiWrite           int
	// accumulations is the offset of the u32 accumulation_counter, 0 where the version has none
	// (1.4, 1.5).
	accumulations int
}

// amdMetricsLayouts are the gpu_metrics_v1_x versions the receiver knows, by content revision:
// those smu_v13_0_6_ppt.c smu_v13_0_6_get_gpu_metrics has filled for MI300X / MI325X
// (smu_cmn_init_soft_gpu_metrics(gpu_metrics, 1, 4) in Linux 6.7, (1, 7) since the patch
// "drm/amd/pm: Add gpu_metrics_v1_7", 2024-11, and (1, 8) since "drm/amd/pm: Use gpu_metrics_v1_8
// for smu_v13_0_6", 2025). v1_6 is v1_7 without mem_max_bandwidth, xgmi_link_status[] and its
// padding (the difference that patch adds).
var amdMetricsLayouts = map[uint8]amdMetricsLayout{
	// gpu_metrics_v1_4: sizeof 288.
	4: {size: 288, umc: 14, pcieWidth: 48, pcieSpeed: 50, pcieBandwidthAcc: 64, pcieReplays: 88, xgmiRead: 104, xgmiWrite: 168},
	// gpu_metrics_v1_5: jpeg_activity[NUM_JPEG_ENG] after vcn_activity, NAK counts before XGMI; sizeof 360.
	5: {size: 360, umc: 14, pcieWidth: 112, pcieSpeed: 114, pcieBandwidthAcc: 128, pcieReplays: 152, xgmiRead: 176, xgmiWrite: 240},
	// gpu_metrics_v1_6: no per-engine activity, accumulation_counter and residencies after
	// system_clock_counter; read up to the end of xgmi_write_data_acc.
	6: {size: 256, umc: 14, pcieWidth: 60, pcieSpeed: 62, pcieBandwidthAcc: 80, pcieReplays: 104, xgmiRead: 128, xgmiWrite: 192, accumulations: 32},
	// gpu_metrics_v1_7: mem_max_bandwidth (u64) after average_umc_activity.
	7: {size: 264, umc: 14, pcieWidth: 68, pcieSpeed: 70, pcieBandwidthAcc: 88, pcieReplays: 112, xgmiRead: 136, xgmiWrite: 200, accumulations: 40},
	// gpu_metrics_v1_8 (the patch "drm/amd/pm: Add gpu_metrics_v1_8", 2025-03): member for member
	// v1_7 up to num_partition; only its tail differs (xcp_stats[NUM_XCP] of struct
	// amdgpu_xcp_metrics_v1_2, with jpeg_busy[NUM_JPEG_ENG_V1 40] and the below-host-limit
	// accumulators; sizeof 3872), which the receiver does not read.
	8: {size: 264, umc: 14, pcieWidth: 68, pcieSpeed: 70, pcieBandwidthAcc: 88, pcieReplays: 112, xgmiRead: 136, xgmiWrite: 200, accumulations: 40},
}

// amdMetricsAttrRevision is gpu_metrics_v1_9, decoded by parseAMDMetricsAttrs (amdgpu_metrics_attrs.go).
const amdMetricsAttrRevision = 9

// parseAMDMetrics decodes a gpu_metrics table by its header (struct metrics_table_header:
// structure_size u16, format_revision u8, content_revision u8). A version the receiver does not
// know, or a table shorter than its version, is refused with an error naming the version.
func parseAMDMetrics(b []byte) (amdMetrics, error) {
	var m amdMetrics
	if len(b) < 4 {
		return m, fmt.Errorf("gpu_metrics: %d bytes, shorter than its 4-byte header", len(b))
	}
	size := int(binary.LittleEndian.Uint16(b[0:2]))
	m.formatRev, m.contentRev = b[2], b[3]
	if m.formatRev == 1 && m.contentRev == amdMetricsAttrRevision {
		return parseAMDMetricsAttrs(b, size)
	}
	l, ok := amdMetricsLayouts[m.contentRev]
	if m.formatRev != 1 || !ok {
		return m, fmt.Errorf("gpu_metrics: table version %d.%d is not one the receiver knows (it reads 1.4 to 1.9, the versions of the MI300 series)", m.formatRev, m.contentRev)
	}
	if size < l.size || len(b) < l.size {
		return m, fmt.Errorf("gpu_metrics: version 1.%d table of %d bytes (header says %d), needs at least %d", m.contentRev, len(b), size, l.size)
	}
	u16 := func(off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	m.umcActivity = u16(l.umc)
	m.pcieWidth, m.pcieSpeed = u16(l.pcieWidth), u16(l.pcieSpeed)
	m.pcieBandwidthAcc = u64(l.pcieBandwidthAcc)
	m.pcieReplays = u64(l.pcieReplays)
	for i := 0; i < amdXGMILinks; i++ {
		m.xgmiReadKB[i] = u64(l.xgmiRead + 8*i)
		m.xgmiWriteKB[i] = u64(l.xgmiWrite + 8*i)
	}
	m.has = amdHasAll
	if l.accumulations > 0 {
		m.accumulations, m.accumulationBits = uint64(binary.LittleEndian.Uint32(b[l.accumulations:])), 32
		m.has |= amdHasAccumulations
	}
	return m, nil
}

// amdPCIeGeneration maps pcie_link_speed (0.1 GT/s) to the PCIe generation of that rate
// (PCIe base specification: 2.5, 5, 8, 16, 32, 64 GT/s), 0 where it is none of them.
func amdPCIeGeneration(speed uint16) int64 {
	switch speed {
	case 25:
		return 1
	case 50:
		return 2
	case 80:
		return 3
	case 160:
		return 4
	case 320:
		return 5
	case 640:
		return 6
	}
	return 0
}
