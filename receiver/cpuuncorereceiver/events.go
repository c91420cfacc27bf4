package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"regexp"
)

// This file holds what the receiver knows about each CPU generation: which PMUs carry memory and
// PCIe bytes, the event encodings, the true bytes per count and the counter widths. Sources, per
// entry: Linux arch/x86/events/intel/uncore_snbep.c (intel/mainline-tracking, with GNR support,
// read 2026), arch/x86/events/amd/uncore.c, and Intel's perfmon event files
// (github.com/intel/perfmon: <platform>/events/*_uncore_experimental.json), Intel PCM
// (github.com/intel/pcm src/opCode-*.txt) and perf's pmu-events (tools/perf/pmu-events/arch/x86).

// direction values, as the shared vocabulary spells them.
const (
	dirRead     = "read"
	dirWrite    = "write"
	dirReceive  = "receive"
	dirTransmit = "transmit"
)

// eventDef is one event that counts bytes.
type eventDef struct {
	// alias is the kernel's events/<alias> name, "" where the kernel never had one.
	alias string
	// name names an event without alias in the receiver's own metrics (Intel's perfmon name).
	name string
	// raw is the encoding the alias should have; used where the alias is missing (kernels
	// before the alias was added) or wrong (kernels before a fix).
	raw string
	// direction is the vocabulary's direction of the bytes counted.
	direction string
	// bytesPerCount is the true size of one count; 0 trusts the kernel's .scale/.unit (event
	// overrides and CPUs this table does not know).
	bytesPerCount float64
	// port is the IIO part (root port slot) the event counts, -1 for none.
	port int
	// terms are format terms added to the alias's or the raw encoding (a Grace PCIe event's
	// root_port filter), "" for none.
	terms string
}

// memoryTable is the memory-controller source of one CPU generation.
type memoryTable struct {
	// pmu matches the PMU instance names (uncore_imc_0 … or amd_umc_0 …).
	pmu *regexp.Regexp
	// events are opened as one group per PMU instance and die.
	events []eventDef
	// reopenAfter > 0 closes and reopens a group before its hardware counters can reach that
	// many counts (AMD UMC saturation, see zen4).
	reopenAfter uint64
	// note is logged once when an event is replaced by its raw encoding.
	note string
	// combined: the events count reads and writes together (cpuuncore.memory.io); port is the
	// channel.
	combined bool
	// groupPerEvent opens each event as its own group: there are more events than counters (the
	// Data Fabric), so the kernel multiplexes them and the counts are extrapolated.
	groupPerEvent bool
	// device names the series instead of the PMU's short name (Grace: the SCF and the NVLink-C2C0
	// PMUs both count traffic into the socket's CPU memory, one series "socketN/cmem").
	device string
	// product is the PMIIDR product id the PMU's identifier must carry (arm_cspmu PMUs), 0 for
	// no check.
	product uint32
	// also is a further source opened with this one, whose events add to the same series.
	also *memoryTable
}

// iioTable is the IIO free-running PCIe source of one CPU generation.
type iioTable struct {
	ports int
	// inUmask0/outUmask0 are the umasks of bw_in_port0/bw_out_port0 (event 0xff); outUmask0 0
	// means no usable bw_out on this generation.
	inUmask0, outUmask0 uint64
	bytesPerCount       float64
	// counterBits is the hardware width of the free-running counters.
	counterBits uint
	// rootPortDevice maps a port (part) to the PCI device number of its root port on the stack's
	// root bus; nil where no kernel mapping of stacks to root buses exists.
	rootPortDevice func(stack, port int) (int, bool)
	// programmableTransmit counts the transmit direction with the programmable uncore_iio_N
	// events where the free-running counters have no bw_out (ICX and later).
	programmableTransmit bool
	// outOptIn: bw_out is used only when configured (pcie.skx_bw_out); otherwise transmit comes
	// from the programmable events.
	outOptIn bool
	// peerWrite adds, at stack granularity, the data other IIO stacks write into this stack's
	// devices (peer-to-peer, e.g. GPUDirect RDMA across root ports) to transmit, where perfmon
	// lists the event for the generation (UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE: per part on
	// ICX/SPR/EMR, ALL_PARTS on GNR/SRF/CWF).
	peerWrite bool
	// peerWritePerPart: perfmon lists PEER_WRITE.PART0..7, so per-port transmit has them too.
	peerWritePerPart bool
}

// platform is everything the receiver uses for one CPU generation.
type platform struct {
	name   string
	memory *memoryTable
	// memoryFallback is used where memory finds no PMU (AMD Zen 2/3 without amd_umc).
	memoryFallback *memoryTable
	iio            *iioTable
	// cspmuPCIe reads CPU PCIe bytes from the NVIDIA CoreSight PCIe PMU (grace.go) instead of an IIO.
	cspmuPCIe *cspmuPCIeTable
}

var (
	intelIMC = regexp.MustCompile(`^uncore_imc(_[0-9]+)?$`)
	amdUMC   = regexp.MustCompile(`^amd_umc_[0-9]+$`)
	amdDF    = regexp.MustCompile(`^amd_df$`)
	iioFree  = regexp.MustCompile(`^uncore_iio_free_running(_[0-9]+)?$`)
	iioBox   = regexp.MustCompile(`^uncore_iio(_[0-9]+)?$`)
	// gnrIMC also matches the generic discovery PMUs of the GNR IMC, uncore_type_6_<box>: the
	// names a GNR gets on kernels before v6.8 (no GNR entry in intel_uncore_match, so
	// generic_uncore_init; uncore.c uncore_get_pmu_name "uncore_type_%u_%d"), IMC = discovery type
	// 6 (gnr_uncores[] in uncore_snbep.c). The generic format has event config:0-7 and umask
	// config:8-15 (uncore_discovery.c generic_uncore_formats_attr): perfmon's encodings fit.
	gnrIMC = regexp.MustCompile(`^(uncore_imc(_[0-9]+)?|uncore_type_6_[0-9]+)$`)
	// genericIIO is the generic discovery PMU of the GNR IIO (type 1). It cannot count PCIe
	// bytes: the IIO data events need the port mask in config bits 36-47, and a generic PMU keeps
	// only bits 0-31 (uncore_discovery.h GENERIC_PMON_RAW_EVENT_MASK).
	genericIIO = regexp.MustCompile(`^uncore_type_1_[0-9]+$`)
)

// casBytes is the size of one DRAM CAS command: a 64-byte cache line (the kernel's cas_count_*
// .scale 6.103515625e-5 MiB, Intel perfmon metrics "* 64").
const casBytes = 64

// skx: Skylake-SP and Cascade/Cooper Lake (model 0x55).
//   - IMC: hswep_uncore_imc_events cas_count_read event=0x04,umask=0x03, write umask=0x0c
//     (perfmon skylakex UNC_M_CAS_COUNT.RD 0x04/0x03, .WR 0x04/0x0C).
//   - IIO free-running: skx_iio_freerunning BW {0xb00, …, 8, 36}: 36-bit counters; events
//     bw_in_port0..3 umask 0x20..0x23, bw_out_port0..3 umask 0x24..0x27, scale 3.814697266e-6 MiB
//     = 4 bytes (unchanged by the 2025 scale fix, which touched SNR, ICX and SPR only).
//   - Stack to root bus: uncore_iio_N/dieX (since v5.9). Part p is root port BB:0p.0
//     (intel/pcm pcm-iio-topology.cpp, Purley).
//   - Transmit: the free-running bw_out has no perfmon FREERUN entry to confirm its increment,
//     and Intel PCM measures SKX outbound traffic with the programmable events
//     (src/opCode-6-85.txt: 0x83/0x04 and 0xc0/0x01 among its IIO events), as ICX and later do
//     here; the SKX format has ch_mask config:36-43 and fc_mask config:44-46
//     (skx_uncore_iio_formats_attr), and the same counter constraints. bw_out stays available
//     with pcie.skx_bw_out.
var skx = platform{
	name: "skx",
	memory: &memoryTable{pmu: intelIMC, events: []eventDef{
		{alias: "cas_count_read", raw: "event=0x04,umask=0x03", direction: dirRead, bytesPerCount: casBytes, port: -1},
		{alias: "cas_count_write", raw: "event=0x04,umask=0x0c", direction: dirWrite, bytesPerCount: casBytes, port: -1},
	}},
	iio: &iioTable{ports: 4, inUmask0: 0x20, outUmask0: 0x24, bytesPerCount: 4, counterBits: 36,
		programmableTransmit: true, outOptIn: true,
		rootPortDevice: func(_, port int) (int, bool) { return port, port >= 0 && port < 4 }},
}

// icx: Ice Lake-SP (model 0x6a; ICX-D 0x6c has no stack mapping, the kernel's
// icx_iio_set_mapping refuses it, so it is the same table without rootPortDevice).
//   - IMC: snr_uncore_imc_events cas_count_read umask=0x0f, write umask=0x30 (perfmon icelakex
//     UNC_M_CAS_COUNT.RD 0x04/0x0f, .WR 0x04/0x30). Kernels before "perf/x86/intel/uncore: Fix
//     CAS_COUNT_WRITE issue for ICX" (upstream 96fd2e89fba1, Dec 2021, v5.17, Cc stable) carried
//     the SKX umasks 0x03/0x0c, which count only part of the reads and writes.
//   - IIO free-running: BW_IN {0xaa0, …, 8, 48}: 48-bit, bw_in_port0..7 umask 0x20..0x27, no
//     bw_out. One count is 32 bytes; kernels before 32c7f1150225 ("Fix the scale of IIO free
//     running counters on ICX", 2025, Cc stable) print 4 bytes (perfmon
//     UNC_IIO_BANDWIDTH_IN.PART0_FREERUN: "increments for every 32 bytes").
//   - Stack to root bus: dieX since v5.14; part = root port device - 2 for devices 2..5
//     (intel/pcm pcm-iio-topology.cpp, Whitley).
var icx = platform{
	name: "icx",
	memory: &memoryTable{pmu: intelIMC, events: []eventDef{
		{alias: "cas_count_read", raw: "event=0x04,umask=0x0f", direction: dirRead, bytesPerCount: casBytes, port: -1},
		{alias: "cas_count_write", raw: "event=0x04,umask=0x30", direction: dirWrite, bytesPerCount: casBytes, port: -1},
	}, note: "kernels before v5.17 (fix 96fd2e89fba1 \"perf/x86/intel/uncore: Fix CAS_COUNT_WRITE issue for ICX\") give ICX the Skylake umasks"},
	iio: &iioTable{ports: 8, inUmask0: 0x20, bytesPerCount: 32, counterBits: 48, programmableTransmit: true,
		peerWrite: true, peerWritePerPart: true, rootPortDevice: icxRootPortDevice},
}

// icxDMIStack is the ICX IIO PMU of the DMI stack (icx_sad_pmon_mapping: PMU 5 is CBDMA/DMI).
const icxDMIStack = 5

// icxRootPortDevice maps an ICX IIO part to its device on the stack's root bus. On the PCIe stacks
// parts 0..3 are the root ports in slots 2..5; on the DMI stack part 0 is the PCH behind device
// 0x00 and part 3 the CBDMA at device 0x01, and parts 1-2 have none (intel/pcm
// pcm-iio-topology.cpp, Whitley: PCH and CBDMA entries of the DMI stack, lines 37-38 and 405-457).
func icxRootPortDevice(stack, port int) (int, bool) {
	if stack == icxDMIStack {
		switch port {
		case 0:
			return 0x00, true
		case 3:
			return 0x01, true
		}
		return 0, false
	}
	return port + 2, port >= 0 && port < 4
}

// spr: Sapphire Rapids (0x8f) and Emerald Rapids (0xcf), one kernel code path.
//   - IMC: cas_count_read event=0x05,umask=0xcf, write umask=0xf0 (kernel alias since 2023,
//     tip 743767d6f6b8; perfmon sapphirerapids/emeraldrapids UNC_M_CAS_COUNT.RD/WR). Older
//     kernels have the PMU without the alias: the raw encoding works there.
//   - IIO free-running: bw_in_port0..7 umask 0x20..0x27, 48-bit, 32 bytes a count (506f981ab40f
//     fixed the printed 4 B scale in 2025). The early bw_out_port events were removed as not
//     counting a constant size, so no transmit direction.
//   - No stack to root bus mapping in the kernel (no dieX files): ports are reported without
//     pci.bus_id.
//   - Xeon Max HBM (sprHBM): counted beside the DDR IMCs as socketN/hbm.
var spr = platform{
	name: "spr",
	memory: &memoryTable{pmu: intelIMC, events: []eventDef{
		{alias: "cas_count_read", raw: "event=0x05,umask=0xcf", direction: dirRead, bytesPerCount: casBytes, port: -1},
		{alias: "cas_count_write", raw: "event=0x05,umask=0xf0", direction: dirWrite, bytesPerCount: casBytes, port: -1},
	}, note: "kernels before v6.4 (743767d6f6b8) have no cas_count aliases for Sapphire/Emerald Rapids", also: sprHBM},
	iio: &iioTable{ports: 8, inUmask0: 0x20, bytesPerCount: 32, counterBits: 48, programmableTransmit: true,
		peerWrite: true, peerWritePerPart: true},
}

// sprHBM: the HBM memory controllers of Xeon Max (Sapphire Rapids with HBM, model 0x8f), one PMU
// per HBM controller. Named uncore_hbm_<box> since f8a86a9bb5f7 ("perf/x86/intel/uncore: Support
// HBM and CXL PMON counters", v6.11: spr_uncore_hbm .name "hbm", SPR_UNCORE_COMMON_FORMAT, no event
// aliases), uncore_type_14_<box> before it (generic_uncore_init; the index of spr_uncore_hbm in
// spr_uncores[]), with the generic format (event config:0-7, umask config:8-15). Events: perfmon
// SPR/events/sapphirerapids_uncore_experimental.json UNC_MCHBM_CAS_COUNT.RD 0x05/0xCF and .WR
// 0x05/0xF0 (Unit MCHBM). The bytes of one HBM CAS are in no perfmon metric: 64 bytes (one cache
// line, as a DDR CAS) is assumed, unverified; a check for make device-check. HBM traffic never
// passes the DDR IMCs, so in HBM-only, flat or cache mode it is counted here only.
var sprHBM = &memoryTable{pmu: regexp.MustCompile(`^(uncore_hbm_[0-9]+|uncore_type_14_[0-9]+)$`), device: "hbm", events: []eventDef{
	{name: "UNC_MCHBM_CAS_COUNT.RD", raw: "event=0x05,umask=0xcf", direction: dirRead, bytesPerCount: casBytes, port: -1},
	{name: "UNC_MCHBM_CAS_COUNT.WR", raw: "event=0x05,umask=0xf0", direction: dirWrite, bytesPerCount: casBytes, port: -1},
}}

// gnr: Granite Rapids (0xad, 0xae), and the E-core Xeons on the same uncore (Sierra Forest 0xaf,
// Grand Ridge 0xb6, Clearwater Forest 0xdd; see platformFor). Two command schedulers (subchannels) per channel: the
// 2026 fix (upstream 6a8a48644c4b, Cc stable) replaced cas_count_{read,write} ("the legacy event
// reports only partial traffic (SCH0)") with cas_count_{read,write}_sch{0,1}; perfmon
// graniterapids UNC_M_CAS_COUNT_SCH0.RD 0x05/0xCF, SCH1.RD 0x06/0xCF, .WR umask 0xF0. Both
// subchannels are always counted, from the raw encodings where the kernel lacks the aliases.
// IIO as SPR (gnr_iio_freerunning, 48-bit).
var gnr = platform{
	name: "gnr",
	memory: &memoryTable{pmu: gnrIMC, events: []eventDef{
		{alias: "cas_count_read_sch0", raw: "event=0x05,umask=0xcf", direction: dirRead, bytesPerCount: casBytes, port: -1},
		{alias: "cas_count_read_sch1", raw: "event=0x06,umask=0xcf", direction: dirRead, bytesPerCount: casBytes, port: -1},
		{alias: "cas_count_write_sch0", raw: "event=0x05,umask=0xf0", direction: dirWrite, bytesPerCount: casBytes, port: -1},
		{alias: "cas_count_write_sch1", raw: "event=0x06,umask=0xf0", direction: dirWrite, bytesPerCount: casBytes, port: -1},
	}, note: "kernels without fix 6a8a48644c4b only name subchannel 0 (cas_count_read/write count half the traffic); both subchannels are counted from their raw encodings"},
	iio: &iioTable{ports: 8, inUmask0: 0x20, bytesPerCount: 32, counterBits: 48, programmableTransmit: true, peerWrite: true},
}

// zen4: AMD Zen 4/5 memory controllers, amd_umc_N (Linux 6.7+, commit 25e56847821f), format
// event config:0-7, rdwrmask config:8-9; umc_cas_cmd.rd = event 0x0a rdwrmask 1, .wr rdwrmask 2,
// 64 bytes a CAS (perf amdzen4/memory-controller.json, umc_mem_read_bandwidth = rd * 64). The
// kernel has no event aliases for UMC. Counters are 48-bit and, before upstream 2492e5aba2be
// (6.12-stable), saturate instead of wrapping ("set the Overflow bit (bit 48) and saturate"), after
// which the count silently stops: the group is reopened (which restarts the hardware counter at 0,
// amd_uncore_start writes prev_count) long before 2^48 counts.
var zen4 = platform{
	name: "zen4",
	memory: &memoryTable{pmu: amdUMC, events: []eventDef{
		{raw: "event=0x0a,rdwrmask=0x1", direction: dirRead, bytesPerCount: casBytes, port: -1},
		{raw: "event=0x0a,rdwrmask=0x2", direction: dirWrite, bytesPerCount: casBytes, port: -1},
	}, reopenAfter: 1 << 47},
}

// zen23DF: AMD Zen 2 and Zen 3 have no UMC PMU; the Data Fabric PMU (amd_df, format event
// config:0-7,32-35,59-60 and umask config:8-15, arch/x86/events/amd/uncore.c) counts "Requests
// with Data (64B)" per DRAM channel: dram_channel_data_controller_0..7, EventCode
// 0x07 + 0x40*N, UMask 0x38 (tools/perf/pmu-events/arch/x86/amdzen2|amdzen3/data-fabric.json).
// Reads and writes are not split, so the bytes go to cpuuncore.memory.io. The DF has 4 counters
// for 8 events: each event is its own group and the kernel multiplexes them (perf stat shows
// about 50%, lore "perf/x86/amd/uncore: Add PerfMonV2 DF event format"); counts are extrapolated
// and cpuuncore.counter.running_ratio shows it.
var zen23DF = func() *memoryTable {
	t := &memoryTable{pmu: amdDF, combined: true, groupPerEvent: true}
	for ch := 0; ch < 8; ch++ {
		t.events = append(t.events, eventDef{
			name: fmt.Sprintf("dram_channel_data_controller_%d", ch),
			raw:  fmt.Sprintf("event=%#x,umask=0x38", 0x07+0x40*ch),
			// direction stays empty: reads and writes together.
			bytesPerCount: casBytes, port: ch,
		})
	}
	return t
}()

// zen4DF: AMD Zen 4 on kernels before 6.7, which have no amd_umc PMU. The PerfMonV2 Data Fabric
// (amd_df, format event config:0-7,32-37 and umask config:8-15,24-27) counts, at each coherent
// station (CS) of this socket's DRAM, the data beats of this socket's processor and of the remote
// one separately (tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json):
// local_processor_read_data_beats_csN, EventCode 0x1f + 0x40*N, UMask 0x7fe, and
// local_processor_write_data_beats_csN, UMask 0x7ff; remote_processor_read_data_beats_csN, UMask
// 0xbfe, and remote_processor_write_data_beats_csN, UMask 0xbff ("Read data beats (64 bytes) for
// remote processor at Coherent Station (CS) N"; recommended.json has
// dram_read_data_for_local_processor and dram_read_data_for_remote_processor as the two sums over
// cs0..11). One beat is 64 bytes (ScaleUnit 6.103515625e-5MiB). Local and remote together are the
// DRAM traffic of the socket: without the remote ones a 2-socket node is undercounted. 48 events
// share the DF counters: one group each, multiplexed and extrapolated. Whether device DMA is in
// these beats is not stated (perf lists separate local_socket_upstream_*_iom* events).
var zen4DF = func() *memoryTable {
	t := &memoryTable{pmu: amdDF, groupPerEvent: true}
	for cs := 0; cs < 12; cs++ {
		ev := 0x1f + 0x40*cs
		for _, who := range []struct {
			name           string
			rdMask, wrMask int
		}{{"local", 0x7fe, 0x7ff}, {"remote", 0xbfe, 0xbff}} {
			t.events = append(t.events,
				eventDef{name: fmt.Sprintf("%s_processor_read_data_beats_cs%d", who.name, cs), raw: fmt.Sprintf("event=%#x,umask=%#x", ev, who.rdMask),
					direction: dirRead, bytesPerCount: casBytes, port: cs},
				eventDef{name: fmt.Sprintf("%s_processor_write_data_beats_cs%d", who.name, cs), raw: fmt.Sprintf("event=%#x,umask=%#x", ev, who.wrMask),
					direction: dirWrite, bytesPerCount: casBytes, port: cs},
			)
		}
	}
	return t
}()

// genericIntel is used on Intel CPUs this table does not know: the kernel's own cas_count
// aliases, with the kernel's scale, and the IIO bw_in events with the kernel's scale.
var genericIntel = platform{
	name: "intel",
	memory: &memoryTable{pmu: intelIMC, events: []eventDef{
		{alias: "cas_count_read", direction: dirRead, port: -1},
		{alias: "cas_count_write", direction: dirWrite, port: -1},
	}},
	iio: &iioTable{ports: 8, inUmask0: 0x20, counterBits: 48},
}

// cpuID is what /proc/cpuinfo (or, on arm64, the MIDR) says about the first CPU.
type cpuID struct {
	// vendor is x86's vendor_id, or vendorARM64.
	vendor     string
	family     int
	model      int
	hypervisor bool
	// implementer and part are the arm64 MIDR fields (cpuinfo "CPU implementer", "CPU part").
	implementer, part uint32
}

// vendorARM64 marks a CPU identified by its arm64 implementer and part number.
const vendorARM64 = "arm64"

// arm64 implementers and parts (arch/arm64/include/asm/cputype.h).
const (
	armImplementerARM = 0x41  // ARM_CPU_IMP_ARM
	armPartNeoverseV2 = 0xd4f // ARM_CPU_PART_NEOVERSE_V2: NVIDIA Grace (also AWS Graviton4, Google Axion)
)

func (c cpuID) String() string {
	if c.vendor == vendorARM64 {
		return fmt.Sprintf("arm64 implementer %#02x part %#03x", c.implementer, c.part)
	}
	return fmt.Sprintf("%s family %d model %#x", c.vendor, c.family, c.model)
}

// platformFor picks the table for a CPU (intel_uncore_match in uncore.c for Intel models).
func platformFor(c cpuID) platform {
	switch c.vendor {
	case "GenuineIntel":
		if c.family != 6 {
			return genericIntel
		}
		switch c.model {
		case 0x55:
			return skx
		case 0x6a:
			return icx
		case 0x6c:
			p := icx
			iio := *icx.iio
			iio.rootPortDevice = nil
			p.name, p.iio = "icx-d", &iio
			return p
		case 0x8f:
			return spr
		case 0xcf:
			p := spr
			p.name = "emr"
			return p
		case 0xad, 0xae:
			return gnr
		case 0xaf, 0xb6, 0xdd:
			// Sierra Forest, Grand Ridge, Clearwater Forest: the kernel gives them the GNR
			// uncore (uncore.c intel_uncore_match: INTEL_ATOM_CRESTMONT_X, INTEL_ATOM_CRESTMONT,
			// INTEL_ATOM_DARKMONT_X -> gnr_uncore_init), two command schedulers included
			// (6a8a48644c4b, "Fixes: cb4a6ccf3583 Support Sierra Forest and Grand Ridge").
			// Peer writes where perfmon lists them: SRF/events/sierraforest_uncore.json and
			// CWF/events/clearwaterforest_uncore.json list UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE.ALL_PARTS
			// 0xC0/0x02/0x0FF as graniterapids does; no Grand Ridge file lists it.
			p := gnr
			iio := *gnr.iio
			iio.peerWrite = c.model != 0xb6
			p.name, p.iio = map[int]string{0xaf: "srf", 0xb6: "grr", 0xdd: "cwf"}[c.model], &iio
			return p
		}
		return genericIntel
	case "AuthenticAMD", "HygonGenuine":
		p := zen4
		switch {
		case c.family == 0x17 && c.model >= 0x30 || c.family == 0x19 && (c.model < 0x10 || c.model >= 0x20 && c.model < 0x60):
			p.name, p.memoryFallback = "zen2/3", zen23DF
		case c.family == 0x19:
			// Zen 4 (Genoa 0x10-0x1f, Raphael 0x60-0x6f, Bergamo 0xa0-0xaf): the DF where the kernel
			// predates amd_umc.
			p.memoryFallback = zen4DF
		}
		return p
	case vendorARM64:
		// The CoreSight PMUs decide, not the core: nvidia_cspmu registers the Grace PMUs by their
		// own PMIIDR product ids, and other Neoverse V2 SoCs (Graviton4, Axion) have none of them,
		// so they end in "no supported uncore PMU".
		p := grace
		if c.implementer != armImplementerARM || c.part != armPartNeoverseV2 {
			p.name = "arm64"
		}
		return p
	}
	return platform{name: "unknown"}
}

// events lists the free-running bandwidth events of one IIO stack; withOut includes bw_out where
// the generation has it.
func (t *iioTable) events(withOut bool) []eventDef {
	var defs []eventDef
	for p := 0; p < t.ports; p++ {
		defs = append(defs, eventDef{
			alias: fmt.Sprintf("bw_in_port%d", p), raw: fmt.Sprintf("event=0xff,umask=%#x", t.inUmask0+uint64(p)),
			direction: dirReceive, bytesPerCount: t.bytesPerCount, port: p,
		})
	}
	if t.outUmask0 != 0 && withOut {
		for p := 0; p < t.ports; p++ {
			defs = append(defs, eventDef{
				alias: fmt.Sprintf("bw_out_port%d", p), raw: fmt.Sprintf("event=0xff,umask=%#x", t.outUmask0+uint64(p)),
				direction: dirTransmit, bytesPerCount: t.bytesPerCount, port: p,
			})
		}
	}
	return defs
}

// Programmable IIO events for the transmit direction (bytes from the CPU side to devices), from
// Intel perfmon (icelakex, sapphirerapids, emeraldrapids, graniterapids uncore files):
//   - UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PARTn: event 0x83 umask 0x04, PortMask 1<<n, FCMask 0x07,
//     counters 0-1: "Card reading from DRAM", one count per 4 bytes (device DMA reads of host
//     memory: the bytes a NIC transmits from host buffers);
//   - UNC_IIO_DATA_REQ_BY_CPU.MEM_WRITE.PARTn: event 0xc0 umask 0x01, counters 2-3: "Core
//     writing to Card's MMIO space", 4 bytes a count;
//   - UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE.PARTn: event 0xc0 umask 0x02, counters 2-3: "peer to peer
//     write request of 4 bytes made to IIO Partn by a different IIO unit" (icelakex,
//     sapphirerapids, emeraldrapids *_uncore_experimental.json; ALL_PARTS only in graniterapids,
//     sierraforest, clearwaterforest). MEM_WRITE there counts "requests initiated by the main
//     die", so the two are disjoint. Not on SKX: its MEM_WRITE already counts writes "by a unit on
//     the main die (generally a core) or by another IIO unit" (perfmon skylakex), and adding
//     PEER_WRITE would count them twice.
//
// ALL_PARTS is PortMask 0xff (perfmon SPR/EMR/GNR list it). perf maps PortMask to ch_mask and
// FCMask to fc_mask (jevents.py); the kernel restricts 0x83 to counters 0-1 and 0xc0 to 2-3
// (uncore_snbep.c icx_uncore_iio_constraints), so a group of one of each always fits a box and two
// such groups can count at once. Per port, 8 groups share a box and the kernel multiplexes them:
// the counts are extrapolated by time_enabled/time_running and cpuuncore.counter.running_ratio
// shows it.
const dwordBytes = 4

func (t *iioTable) programmableEvents(perPort bool) []eventDef {
	def := func(name, code string, mask uint64, port int) eventDef {
		return eventDef{
			name: name, raw: fmt.Sprintf("%s,ch_mask=%#x,fc_mask=0x7", code, mask),
			direction: dirTransmit, bytesPerCount: dwordBytes, port: port,
		}
	}
	all := uint64(1)<<t.ports - 1 // ALL_PARTS: 0xff on ICX and later, the four parts of SKX
	if !perPort {
		defs := []eventDef{
			def("data_req_of_cpu.mem_read.all_parts", "event=0x83,umask=0x04", all, -1),
			def("data_req_by_cpu.mem_write.all_parts", "event=0xc0,umask=0x01", all, -1),
		}
		if t.peerWrite {
			// perfmon graniterapids UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE.ALL_PARTS: event 0xC0,
			// umask 0x02, PortMask 0x0FF, FCMask 0x07, counters 2-3, "Another card (different
			// IIO stack) writing to this card", 4 bytes a count; on ICX/SPR/EMR the parts' mask
			// together. With the other two it fills three of the box's four counters (0x83 on
			// 0-1, both 0xc0 on 2-3).
			defs = append(defs, def("data_req_by_cpu.peer_write.all_parts", "event=0xc0,umask=0x02", all, -1))
		}
		return defs
	}
	var defs []eventDef
	for p := 0; p < t.ports; p++ {
		defs = append(defs,
			def(fmt.Sprintf("data_req_of_cpu.mem_read.part%d", p), "event=0x83,umask=0x04", 1<<p, p),
			def(fmt.Sprintf("data_req_by_cpu.mem_write.part%d", p), "event=0xc0,umask=0x01", 1<<p, p))
		if t.peerWritePerPart {
			// One 0x83 and two 0xc0 events: a group still fits a box (counters 0-1 and 2-3).
			defs = append(defs, def(fmt.Sprintf("data_req_by_cpu.peer_write.part%d", p), "event=0xc0,umask=0x02", 1<<p, p))
		}
	}
	return defs
}
