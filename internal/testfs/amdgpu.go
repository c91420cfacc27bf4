package testfs

import (
	"encoding/binary"
	"fmt"
	"path"
	"strconv"
)

// AMDGPU is one AMD Instinct GPU as amdgpu lays it out in sysfs: its PCI function under
// /sys/devices with vendor, numa_node, gpu_metrics (amdgpu_pm.c dev_attr_gpu_metrics, binary),
// unique_id and product_name (amdgpu_pm.c, amdgpu_fru_eeprom.c), its DRM minors under drm/
// (drm_sysfs.c drm_sysfs_minor_alloc: card<N> and renderD<128+N>, each with a device link to the
// function), /sys/class/drm/<minor> linking there, and /sys/bus/pci/devices/<address>.
type AMDGPU struct {
	Card        int
	Address     string // 0000:05:00.0
	RootBus     string // pci0000:00
	NUMANode    int
	UniqueID    string // amdgpu_pm.c unique_id: "%016llx"
	ProductName string
	// Metrics is the gpu_metrics table; nil for an ASIC without one.
	Metrics []byte
}

// AMDGPU adds the GPU (sys/...).
func (t *Tree) AMDGPU(g AMDGPU) {
	fn := path.Join("sys", "devices", g.RootBus, g.Address)
	t.Attr(path.Join(fn, "vendor"), "0x1002")
	t.Attr(path.Join(fn, "class"), "0x120000") // PCI_CLASS_ACCELERATOR_PROCESSING
	t.Attr(path.Join(fn, "numa_node"), strconv.Itoa(g.NUMANode))
	if g.UniqueID != "" {
		t.Attr(path.Join(fn, "unique_id"), g.UniqueID)
	}
	if g.ProductName != "" {
		t.Attr(path.Join(fn, "product_name"), g.ProductName)
	}
	if g.Metrics != nil {
		t.Bytes(path.Join(fn, "gpu_metrics"), g.Metrics)
	}
	for _, minor := range []string{"card" + strconv.Itoa(g.Card), "renderD" + strconv.Itoa(128+g.Card)} {
		dir := path.Join(fn, "drm", minor)
		t.Link(path.Join(dir, "device"), "../../../"+g.Address)
		t.Link(path.Join("sys", "class", "drm", minor), "../../devices/"+g.RootBus+"/"+g.Address+"/drm/"+minor)
	}
	t.Link(path.Join("sys", "bus", "pci", "devices", g.Address), "../../../devices/"+g.RootBus+"/"+g.Address)
}

// GPUMetrics is what a gpu_metrics_v1_x table (drivers/gpu/drm/amd/include/kgd_pp_interface.h)
// holds for the fields tests set; every other field is 0.
type GPUMetrics struct {
	FormatRevision, ContentRevision uint8
	AverageUMCActivity              uint16
	PCIeLinkWidth, PCIeLinkSpeed    uint16
	PCIeBandwidthAcc                uint64
	PCIeReplayCountAcc              uint64
	// AccumulationCounter is accumulation_counter (a u32 in the structs from v1_6 on; 1.4 and
	// 1.5 have none, and it is not written there).
	AccumulationCounter uint32
	XGMIReadDataAcc     [8]uint64 // KB per link
	XGMIWriteDataAcc    [8]uint64
	// LeaveOutXGMI (1.9 only): the attribute table lists no XGMI attribute.
	LeaveOutXGMI bool
}

// cField is one member of a C struct: its name, the size of one element and the element count.
type cField struct {
	name  string
	size  int
	count int
}

// gpuMetricsStructs are the gpu_metrics_v1_x structs of kgd_pp_interface.h, member by member in
// declaration order (NUM_VCN 4, NUM_JPEG_ENG 32, NUM_XGMI_LINKS 8, MAX_GFX_CLKS 8, MAX_CLKS 4);
// v1_6 and v1_7 through num_partition (xcp_stats[NUM_XCP] and what follows are left out), v1_8
// whole. v1_6 is v1_7 without what the patch "drm/amd/pm: Add gpu_metrics_v1_7" added:
// mem_max_bandwidth and xgmi_link_status[] with its padding. v1_8 (the patch "drm/amd/pm: Add
// gpu_metrics_v1_8", 2025-03) is v1_7 with xcp_stats[] of struct amdgpu_xcp_metrics_v1_2.
var gpuMetricsStructs = map[uint8][]cField{
	4: append(append(v1Head(false, false), v1PCIe(false)...), v1Tail(false)...),
	5: append(append(v1Head(true, false), v1PCIe(true)...), v1Tail(false)...),
	6: append(append(v1Head(false, true), v1PCIe(true)...), v1Tail(true)...),
	7: v1_7Through(),
	8: append(v1_7Through(), cField{"xcp_stats", 8, numXCP * xcpMetricsV1_2Size / 8}, cField{"pcie_lc_perf_other_end_recovery", 4, 1}),
}

// numXCP is NUM_XCP (kgd_pp_interface.h).
const numXCP = 8

// xcpMetricsV1_2 is struct amdgpu_xcp_metrics_v1_2 of kgd_pp_interface.h (MAX_XCC 8,
// NUM_JPEG_ENG_V1 40, NUM_VCN 4).
var xcpMetricsV1_2 = []cField{{"gfx_busy_inst", 4, 8}, {"jpeg_busy", 2, 40}, {"vcn_busy", 2, 4},
	{"gfx_busy_acc", 8, 8}, {"gfx_below_host_limit_ppt_acc", 8, 8}, {"gfx_below_host_limit_thm_acc", 8, 8},
	{"gfx_low_utilization_acc", 8, 8}, {"gfx_below_host_limit_total_acc", 8, 8}}

// xcpMetricsV1_2Size is sizeof(struct amdgpu_xcp_metrics_v1_2), 440. Its alignment is its largest
// member's (u64) and its size a multiple of 8, so xcp_stats[NUM_XCP] lies as NUM_XCP*440/8 u64s do.
var xcpMetricsV1_2Size = func() int { _, n := cLayout(xcpMetricsV1_2); return n }()

// v1_7Through: gpu_metrics_v1_7 (and v1_8) through num_partition.
func v1_7Through() []cField {
	return append(append(v1HeadMemMax(), v1PCIe(true)...), append([]cField{{"xgmi_link_status", 2, 8}, {"padding_ls", 2, 1}}, v1Tail(true)...)...)
}

// cLayout places the members as the C compiler does: each at its natural alignment (its element
// size), the struct padded to its largest member's alignment; it returns the offsets and sizeof.
func cLayout(fields []cField) (map[string]int, int) {
	off := map[string]int{}
	n, align := 0, 1
	for _, f := range fields {
		n = (n + f.size - 1) / f.size * f.size
		off[f.name] = n
		n += f.size * f.count
		align = max(align, f.size)
	}
	return off, (n + align - 1) / align * align
}

func v1Common() []cField {
	return []cField{{"structure_size", 2, 1}, {"format_revision", 1, 1}, {"content_revision", 1, 1},
		{"temperature_hotspot", 2, 1}, {"temperature_mem", 2, 1}, {"temperature_vrsoc", 2, 1},
		{"curr_socket_power", 2, 1}, {"average_gfx_activity", 2, 1}, {"average_umc_activity", 2, 1}}
}

// v1Head: v1_4 / v1_5 (vcn_activity, jpeg_activity on v1_5, energy, clock, throttle_status) or
// v1_6 (energy, clock, accumulation_counter and the residencies).
func v1Head(jpeg, residencies bool) []cField {
	f := v1Common()
	if !residencies {
		f = append(f, cField{"vcn_activity", 2, 4})
		if jpeg {
			f = append(f, cField{"jpeg_activity", 2, 32})
		}
	}
	f = append(f, cField{"energy_accumulator", 8, 1}, cField{"system_clock_counter", 8, 1})
	if residencies {
		return append(f, cField{"accumulation_counter", 4, 1}, cField{"prochot_residency_acc", 4, 1}, cField{"ppt_residency_acc", 4, 1},
			cField{"socket_thm_residency_acc", 4, 1}, cField{"vr_thm_residency_acc", 4, 1}, cField{"hbm_thm_residency_acc", 4, 1})
	}
	return append(f, cField{"throttle_status", 4, 1})
}

// v1HeadMemMax: v1_7, v1_6's head with mem_max_bandwidth after average_umc_activity.
func v1HeadMemMax() []cField {
	f := append(v1Common(), cField{"mem_max_bandwidth", 8, 1})
	return append(f, v1Head(false, true)[len(v1Common()):]...)
}

// v1PCIe: from gfxclk_lock_status to xgmi_write_data_acc (with the NAK counts from v1_5 on).
func v1PCIe(nak bool) []cField {
	f := []cField{{"gfxclk_lock_status", 4, 1}, {"pcie_link_width", 2, 1}, {"pcie_link_speed", 2, 1},
		{"xgmi_link_width", 2, 1}, {"xgmi_link_speed", 2, 1}, {"gfx_activity_acc", 4, 1}, {"mem_activity_acc", 4, 1},
		{"pcie_bandwidth_acc", 8, 1}, {"pcie_bandwidth_inst", 8, 1}, {"pcie_l0_to_recov_count_acc", 8, 1},
		{"pcie_replay_count_acc", 8, 1}, {"pcie_replay_rover_count_acc", 8, 1}}
	if nak {
		f = append(f, cField{"pcie_nak_sent_count_acc", 4, 1}, cField{"pcie_nak_rcvd_count_acc", 4, 1})
	}
	return append(f, cField{"xgmi_read_data_acc", 8, 8}, cField{"xgmi_write_data_acc", 8, 8})
}

// v1Tail: firmware_timestamp and the current clocks (and num_partition from v1_6 on).
func v1Tail(partition bool) []cField {
	f := []cField{{"firmware_timestamp", 8, 1}, {"current_gfxclk", 2, 8}, {"current_socclk", 2, 4},
		{"current_vclk0", 2, 4}, {"current_dclk0", 2, 4}, {"current_uclk", 2, 1}}
	if partition {
		return append(f, cField{"num_partition", 2, 1})
	}
	return append(f, cField{"padding", 2, 1})
}

// GPUMetricsTable lays the table out as the C compiler lays the struct out: each member at its
// natural alignment, the struct padded to its largest member's (8), little-endian; the header's
// structure_size is the struct's size. An unknown revision is written as a bare header, as a
// newer kernel's table looks to a reader that does not know it.
func GPUMetricsTable(m GPUMetrics) []byte {
	if m.FormatRevision == 1 && m.ContentRevision == 9 {
		return gpuMetricsAttrTable(m)
	}
	fields, ok := gpuMetricsStructs[m.ContentRevision]
	if !ok || m.FormatRevision != 1 {
		b := make([]byte, 64)
		binary.LittleEndian.PutUint16(b, uint16(len(b)))
		b[2], b[3] = m.FormatRevision, m.ContentRevision
		return b
	}
	off, n := cLayout(fields)
	b := make([]byte, n)
	le := binary.LittleEndian
	le.PutUint16(b[off["structure_size"]:], uint16(n))
	b[off["format_revision"]], b[off["content_revision"]] = m.FormatRevision, m.ContentRevision
	le.PutUint16(b[off["average_umc_activity"]:], m.AverageUMCActivity)
	le.PutUint16(b[off["pcie_link_width"]:], m.PCIeLinkWidth)
	le.PutUint16(b[off["pcie_link_speed"]:], m.PCIeLinkSpeed)
	le.PutUint64(b[off["pcie_bandwidth_acc"]:], m.PCIeBandwidthAcc)
	le.PutUint64(b[off["pcie_replay_count_acc"]:], m.PCIeReplayCountAcc)
	if o, ok := off["accumulation_counter"]; ok {
		le.PutUint32(b[o:], m.AccumulationCounter)
	}
	for i := 0; i < 8; i++ {
		le.PutUint64(b[off["xgmi_read_data_acc"]+8*i:], m.XGMIReadDataAcc[i])
		le.PutUint64(b[off["xgmi_write_data_acc"]+8*i:], m.XGMIWriteDataAcc[i])
	}
	return b
}

// String names the table's version as amdgpu does (gpu_metrics_v1_5).
func (m GPUMetrics) String() string {
	return fmt.Sprintf("gpu_metrics_v%d_%d", m.FormatRevision, m.ContentRevision)
}

// gpuMetricsAttrTable writes m as gpu_metrics_v1_9 lays it out (the series "drm/amdgpu/pm: Add
// definition for gpu_metrics v1.9", v4, 2025-09-15: struct metrics_table_header, int attr_count,
// then per attribute its u64 AMDGPU_METRICS_ENC_ATTR(unit, type, id, instances) followed by the
// instances' values, unpadded, as the patch's author describes the layout in its review). The ids,
// types and units are those of enum amdgpu_metrics_attr_id / _type / _unit; the values' types are
// the v1_8 members' (the patch that fills the table for smu_v13_0_6 is not cited here). Beside the
// attributes the receiver reads it lists some it skips, of odd sizes (a u16, eight u16 clocks), so
// that a decoder that aligns or stops at an unknown id is caught.
func gpuMetricsAttrTable(m GPUMetrics) []byte {
	const (
		u16, u32, u64        = 2, 4, 6 // AMDGPU_METRICS_TYPE_U16, _U32, _U64
		none, temp, power    = 0, 2, 3
		clock, speed2, bw    = 1, 7, 8
		data, percent, timeU = 9, 10, 4
	)
	type attr struct {
		unit, typ, id int
		vals          []uint64
	}
	xgmi := func(kb [8]uint64) []uint64 { return kb[:] }
	attrs := []attr{
		{temp, u16, 0, []uint64{42}},                                               // TEMPERATURE_HOTSPOT
		{power, u16, 3, []uint64{194}},                                             // CURR_SOCKET_POWER
		{percent, u16, 5, []uint64{uint64(m.AverageUMCActivity)}},                  // AVERAGE_UMC_ACTIVITY
		{none, u32, 9, []uint64{uint64(m.AccumulationCounter)}},                    // ACCUMULATION_COUNTER
		{none, u16, 16, []uint64{uint64(m.PCIeLinkWidth)}},                         // PCIE_LINK_WIDTH
		{speed2, u16, 17, []uint64{uint64(m.PCIeLinkSpeed)}},                       // PCIE_LINK_SPEED
		{bw, u64, 22, []uint64{m.PCIeBandwidthAcc}},                                // PCIE_BANDWIDTH_ACC
		{none, u64, 25, []uint64{m.PCIeReplayCountAcc}},                            // PCIE_REPLAY_COUNT_ACC
		{timeU, u64, 32, []uint64{1_000_000}},                                      // FIRMWARE_TIMESTAMP
		{clock, u16, 33, []uint64{2098, 2101, 2115, 2104, 2110, 2099, 2107, 2112}}, // CURRENT_GFXCLK
		{none, u16, 38, []uint64{1}},                                               // NUM_PARTITION
	}
	if !m.LeaveOutXGMI {
		attrs = append(attrs,
			attr{data, u64, 29, xgmi(m.XGMIReadDataAcc)},  // XGMI_READ_DATA_ACC
			attr{data, u64, 30, xgmi(m.XGMIWriteDataAcc)}, // XGMI_WRITE_DATA_ACC
			attr{none, u16, 31, make([]uint64, 8)})        // XGMI_LINK_STATUS
	}
	le := binary.LittleEndian
	b := make([]byte, 8)
	b[2], b[3] = m.FormatRevision, m.ContentRevision
	le.PutUint32(b[4:], uint32(len(attrs)))
	for _, a := range attrs {
		b = le.AppendUint64(b, uint64(a.unit)<<24|uint64(a.typ)<<20|uint64(a.id)<<10|uint64(len(a.vals)))
		for _, v := range a.vals {
			switch a.typ {
			case u16:
				b = le.AppendUint16(b, uint16(v))
			case u32:
				b = le.AppendUint32(b, uint32(v))
			default:
				b = le.AppendUint64(b, v)
			}
		}
	}
	le.PutUint16(b, uint16(len(b)))
	return b
}
