package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"encoding/binary"
	"fmt"
)

// gpu_metrics_v1_9 (the series "drm/amdgpu/pm: Add definition for gpu_metrics v1.9", v4,
// 2025-09-15, kgd_pp_interface.h) is not a struct of fixed members: after the header come an int
// attr_count and attr_count attributes, each a u64 encoding (AMDGPU_METRICS_ENC_ATTR) followed
// by its value, instances x the size of its type, little-endian. "The encoding is followed by a
// field of variable length based on the encoding. User space has to read the attribute encoding
// to determine the size of the field that follows" (the author's answer in that patch's review):
// nothing pads a value, so the next encoding starts where the value ends. Attributes the receiver
// does not read are skipped by their size, so a kernel that adds ids is read as before.

// The encoding's fields (AMDGPU_METRICS_ATTR_*_MASK / _SHIFT).
const (
	amdAttrUnitShift = 24
	amdAttrTypeShift = 20
	amdAttrIDShift   = 10
	amdAttrIDMask    = 0x3ff
	amdAttrInstMask  = 0x3ff
)

// enum amdgpu_metrics_attr_id: the ids the receiver reads.
const (
	amdAttrAverageUMCActivity = 5
	amdAttrAccumulationCount  = 9
	amdAttrPCIeLinkWidth      = 16
	amdAttrPCIeLinkSpeed      = 17
	amdAttrPCIeBandwidthAcc   = 22
	amdAttrPCIeReplayCountAcc = 25
	amdAttrXGMIReadDataAcc    = 29
	amdAttrXGMIWriteDataAcc   = 30
)

// enum amdgpu_metrics_attr_unit: the units the receiver converts.
const (
	amdUnitNone    = 0
	amdUnitSpeed1  = 6  // GT/s
	amdUnitSpeed2  = 7  // 0.1 GT/s
	amdUnitBW1     = 8  // GB/s
	amdUnitData1   = 9  // KB
	amdUnitPercent = 10 // %
)

// amdAttrTypeSize is the size of enum amdgpu_metrics_attr_type's U8, S8, U16, S16, U32, S32,
// U64, S64.
var amdAttrTypeSize = [8]int{1, 1, 2, 2, 4, 4, 8, 8}

// parseAMDMetricsAttrs decodes a gpu_metrics_v1_9 table of size bytes (the header's
// structure_size). A table that runs past its end, or an attribute of a type the kernel does not
// define, is refused, naming the attribute; an attribute the receiver reads in a unit it does not
// expect is left out (that quantity is not served) and named in the error only if nothing is left.
func parseAMDMetricsAttrs(b []byte, size int) (amdMetrics, error) {
	m := amdMetrics{formatRev: 1, contentRev: amdMetricsAttrRevision}
	if size > len(b) {
		return m, fmt.Errorf("gpu_metrics: version 1.9 table of %d bytes, its header says %d", len(b), size)
	}
	b = b[:size]
	if len(b) < 8 {
		return m, fmt.Errorf("gpu_metrics: version 1.9 table of %d bytes, shorter than its header and attr_count", len(b))
	}
	count := int(int32(binary.LittleEndian.Uint32(b[4:8])))
	if count < 0 {
		return m, fmt.Errorf("gpu_metrics: version 1.9 table with attr_count %d", count)
	}
	off := 8
	var odd []string
	for a := 0; a < count; a++ {
		if off+8 > len(b) {
			return m, fmt.Errorf("gpu_metrics: version 1.9 table ends at %d bytes inside attribute %d of %d", len(b), a, count)
		}
		enc := binary.LittleEndian.Uint64(b[off:])
		off += 8
		unit, typ := int(enc>>amdAttrUnitShift&0xff), int(enc>>amdAttrTypeShift&0xf)
		id, inst := int(enc>>amdAttrIDShift&amdAttrIDMask), int(enc&amdAttrInstMask)
		if typ >= len(amdAttrTypeSize) {
			return m, fmt.Errorf("gpu_metrics: version 1.9 attribute %d (id %d) has type %d, not one of amdgpu_metrics_attr_type", a, id, typ)
		}
		w := amdAttrTypeSize[typ]
		if off+w*inst > len(b) {
			return m, fmt.Errorf("gpu_metrics: version 1.9 attribute %d (id %d, %d x %d bytes) runs past the table's %d bytes", a, id, inst, w, len(b))
		}
		val := func(i int) uint64 {
			p := b[off+w*i:]
			switch w {
			case 1:
				return uint64(p[0])
			case 2:
				return uint64(binary.LittleEndian.Uint16(p))
			case 4:
				return uint64(binary.LittleEndian.Uint32(p))
			}
			return binary.LittleEndian.Uint64(p)
		}
		expect := func(want ...int) bool {
			for _, u := range want {
				if unit == u {
					return inst > 0
				}
			}
			odd = append(odd, fmt.Sprintf("id %d in unit %d", id, unit))
			return false
		}
		switch id {
		case amdAttrAverageUMCActivity:
			if expect(amdUnitPercent, amdUnitNone) {
				m.umcActivity, m.has = uint16(val(0)), m.has|amdHasUMC
			}
		case amdAttrAccumulationCount:
			if expect(amdUnitNone) {
				m.accumulations, m.accumulationBits, m.has = val(0), uint8(8*w), m.has|amdHasAccumulations
			}
		case amdAttrPCIeLinkWidth:
			if expect(amdUnitNone) {
				m.pcieWidth, m.has = uint16(val(0)), m.has|amdHasPCIeWidth
			}
		case amdAttrPCIeLinkSpeed:
			switch {
			case unit == amdUnitSpeed1 && inst > 0:
				m.pcieSpeed, m.has = uint16(val(0)*10), m.has|amdHasPCIeSpeed
			case expect(amdUnitSpeed2):
				m.pcieSpeed, m.has = uint16(val(0)), m.has|amdHasPCIeSpeed
			}
		case amdAttrPCIeBandwidthAcc:
			if expect(amdUnitBW1) {
				m.pcieBandwidthAcc, m.has = val(0), m.has|amdHasPCIeBandwidth
			}
		case amdAttrPCIeReplayCountAcc:
			if expect(amdUnitNone) {
				m.pcieReplays, m.has = val(0), m.has|amdHasPCIeReplays
			}
		case amdAttrXGMIReadDataAcc, amdAttrXGMIWriteDataAcc:
			if !expect(amdUnitData1) {
				break
			}
			// One instance per link; the table has room for NUM_XGMI_LINKS, as the structs.
			dst, flag := &m.xgmiReadKB, amdHasXGMIRead
			if id == amdAttrXGMIWriteDataAcc {
				dst, flag = &m.xgmiWriteKB, amdHasXGMIWrite
			}
			for i := 0; i < inst && i < amdXGMILinks; i++ {
				dst[i] = val(i)
			}
			m.has |= flag
		}
		off += w * inst
	}
	if m.has == 0 && len(odd) > 0 {
		return m, fmt.Errorf("gpu_metrics: version 1.9 table has none of the attributes the receiver reads in a unit it knows (%v)", odd)
	}
	return m, nil
}
