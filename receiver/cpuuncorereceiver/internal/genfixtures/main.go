// Command genfixtures writes the fixture host trees used by the tests (testdata/<name>/sys, /proc).
// Run from the receiver directory: go run ./internal/genfixtures
//
// Every file is laid out as the kernel writes it; the source of each value is named next to it.
// Key sources:
//   - [snbep] arch/x86/events/intel/uncore_snbep.c (intel/mainline-tracking, with GNR; and the
//     torvalds/linux version before the 2025 IIO scale fix), [uncore] uncore.c/uncore.h;
//   - [amd] arch/x86/events/amd/uncore.c (amd_umc since v6.7, 25e56847821f);
//   - [perfmon] github.com/intel/perfmon event files (the JSON event lists per CPU family);
//   - [abi] Documentation/ABI/testing/sysfs-devices-mapping, Documentation/PCI/sysfs-pci.rst.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// tree is a fixture host being laid out; testfs writes it (the one writer of kernel-shaped trees).
type tree struct{ *testfs.Tree }

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// pmu writes /sys/devices/<name> and the /sys/bus/event_source/devices/<name> link
// (perf_pmu_register puts the PMU device under /sys/devices). type and cpumask end in "\n";
// format files end in "\n" (DEFINE_UNCORE_FORMAT_ATTR); event files do not
// (uncore_event_show prints event->config with "%s").
func (t tree) pmu(name string, typ int, cpumask string, formats, events map[string]string) {
	dir := "sys/devices/" + name
	t.File(dir+"/type", fmt.Sprintf("%d\n", typ))
	if cpumask != "" {
		t.File(dir+"/cpumask", cpumask+"\n")
	}
	t.File(dir+"/perf_event_mux_interval_ms", "4\n")
	for f, v := range formats {
		t.File(dir+"/format/"+f, v+"\n")
	}
	for e, v := range events {
		t.File(dir+"/events/"+e, v)
	}
	t.Link("sys/bus/event_source/devices/"+name, "../../../devices/"+name)
}

// cpu writes the topology of one CPU: topology/physical_package_id and the nodeN link
// (drivers/base/topology.c, drivers/base/node.c register_cpu_under_node).
func (t tree) cpu(n, pkg, node int) {
	d := fmt.Sprintf("sys/devices/system/cpu/cpu%d", n)
	t.File(d+"/topology/physical_package_id", fmt.Sprintf("%d\n", pkg))
	t.File(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", node), "\n")
	t.Link(fmt.Sprintf("%s/node%d", d, node), fmt.Sprintf("../../node/node%d", node))
}

// pci writes a chain of PCI functions under root bus dir pciDDDD:BB with numa_node files; the
// last element is the endpoint.
func (t tree) pci(rootBus string, node int, chain ...string) {
	d := "sys/devices/pci" + rootBus
	for _, fn := range chain {
		d += "/" + fn
		t.File(d+"/numa_node", fmt.Sprintf("%d\n", node))
	}
}

func cpuinfo(vendor string, family, model int, name string) string {
	return fmt.Sprintf("processor\t: 0\nvendor_id\t: %s\ncpu family\t: %d\nmodel\t\t: %d\nmodel name\t: %s\nflags\t\t: fpu vme de pse tsc msr pae mce\n\n"+
		"processor\t: 1\nvendor_id\t: %s\n", vendor, family, model, name, vendor)
}

// Format groups, [snbep].
var (
	skxIMCFormat = map[string]string{ // snbep_uncore_formats_attr / skx_uncore_format_group
		"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23", "thresh": "config:24-31"}
	skxIIOFormat = map[string]string{ // skx_uncore_iio_formats_attr
		"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23",
		"thresh": "config:24-35", "ch_mask": "config:36-43", "fc_mask": "config:44-46"}
	icxIIOFormat = map[string]string{ // snr_uncore_iio_formats_attr (ICX, SPR, GNR)
		"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23",
		"thresh": "config:24-35", "ch_mask": "config:36-47", "fc_mask": "config:48-50"}
	sprIMCFormat = map[string]string{ // spr_uncore_raw_formats_attr
		"event": "config:0-7", "umask": "config:8-15,32-55", "edge": "config:18", "inv": "config:23", "thresh": "config:24-31"}
	freeRunningFormat = map[string]string{ // skx_uncore_iio_freerunning_formats_attr
		"event": "config:0-7", "umask": "config:8-15"}
)

const (
	casScale    = "6.103515625e-5"  // 64 B in MiB
	iioScaleOld = "3.814697266e-6"  // 4 B in MiB (SKX always; ICX/SPR before the 2025 fix)
	iioScaleNew = "3.0517578125e-5" // 32 B in MiB (ICX/SPR after 32c7f1150225 / 506f981ab40f)
)

func withScale(ev map[string]string, name, desc, scale string) {
	ev[name] = desc
	ev[name+".scale"] = scale
	ev[name+".unit"] = "MiB"
}

func imcEvents(clk, rd, wr string) map[string]string {
	ev := map[string]string{}
	if clk != "" {
		ev["clockticks"] = clk
	}
	if rd != "" {
		withScale(ev, "cas_count_read", rd, casScale)
		withScale(ev, "cas_count_write", wr, casScale)
	}
	return ev
}

func iioFreeEvents(ports int, scale string, outUmask0 int) map[string]string {
	ev := map[string]string{"ioclk": "event=0xff,umask=0x10"}
	for p := 0; p < ports; p++ {
		withScale(ev, fmt.Sprintf("bw_in_port%d", p), fmt.Sprintf("event=0xff,umask=0x%x", 0x20+p), scale)
		if outUmask0 != 0 {
			withScale(ev, fmt.Sprintf("bw_out_port%d", p), fmt.Sprintf("event=0xff,umask=0x%x", outUmask0+p), scale)
		}
	}
	return ev
}

// skx: Xeon Platinum 8180 (28 cores), 2 sockets, Linux 6.1: [snbep] SKX section; IIO mapping
// since v5.9. Stack buses as in the ABI/cover-letter example: iio_0 0000:00/0000:80, iio_1
// 0000:17/0000:85, iio_2 0000:3a/0000:ae, iio_3 0000:5d/0000:d7; iio_4/5 (MCP stacks, bus 0 on
// this SKU) have no dieX files (skx_iio_mapping_visible hides bus 0 for pmu_idx != 0).
func skx(t tree) {
	t.File("proc/cpuinfo", cpuinfo("GenuineIntel", 6, 0x55, "Intel(R) Xeon(R) Platinum 8180 CPU @ 2.50GHz"))
	t.cpu(0, 0, 0)
	t.cpu(28, 1, 1)
	for i := 0; i < 6; i++ {
		t.pmu(fmt.Sprintf("uncore_imc_%d", i), 13+i, "0,28", skxIMCFormat,
			imcEvents("event=0x00,umask=0x00", "event=0x04,umask=0x03", "event=0x04,umask=0x0c"))
		t.pmu(fmt.Sprintf("uncore_iio_%d", i), 19+i, "0,28", skxIIOFormat, nil)
		ev := iioFreeEvents(4, iioScaleOld, 0x24)
		for p := 0; p < 4; p++ { // skx_uncore_iio_freerunning_events: util_in/out interleaved
			ev[fmt.Sprintf("util_in_port%d", p)] = fmt.Sprintf("event=0xff,umask=0x%x", 0x30+2*p)
			ev[fmt.Sprintf("util_out_port%d", p)] = fmt.Sprintf("event=0xff,umask=0x%x", 0x31+2*p)
		}
		t.pmu(fmt.Sprintf("uncore_iio_free_running_%d", i), 25+i, "0,28", freeRunningFormat, ev)
	}
	for i, buses := range [][2]string{{"0000:00", "0000:80"}, {"0000:17", "0000:85"}, {"0000:3a", "0000:ae"}, {"0000:5d", "0000:d7"}} {
		t.File(fmt.Sprintf("sys/devices/uncore_iio_%d/die0", i), buses[0]+"\n")
		t.File(fmt.Sprintf("sys/devices/uncore_iio_%d/die1", i), buses[1]+"\n")
	}
	// PCI: an RDMA NIC behind root port 17:00.0 (stack 1 part 0), a GPU behind a PCIe switch on
	// root port 3a:02.0 (stack 2 part 2), a second GPU on socket 1 at ae:00.0 (stack 2 part 0).
	t.pci("0000:17", 0, "0000:17:00.0", "0000:18:00.0")
	t.pci("0000:17", 0, "0000:17:00.0", "0000:18:00.1")
	t.pci("0000:3a", 0, "0000:3a:02.0", "0000:3b:00.0", "0000:3c:08.0", "0000:3d:00.0")
	t.pci("0000:ae", 1, "0000:ae:00.0", "0000:af:00.0")
	t.pci("0000:00", 0, "0000:00:00.0") // DMI3 registers on stack 0
}

// icx: Xeon Platinum 8380 (40 cores), 2 sockets. old=false: Linux 6.15 with the CAS fix
// (v5.17) and the IIO scale fix (32c7f1150225, 2025); old=true: Linux 5.15 before both (SKX
// cas_count umasks, 4-byte IIO scale). 12 IMC boxes as in [snbep] icx_uncore_imc (num_boxes 12
// in the newer file; 8 in older ones); IIO mapping since v5.14: PMU 5 is the DMI stack on bus
// 00 (icx_iio_mapping_visible), root ports at devices 2..5 (part = device - 2, intel/pcm).
func icx(t tree, old bool) {
	t.File("proc/cpuinfo", cpuinfo("GenuineIntel", 6, 0x6a, "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"))
	t.cpu(0, 0, 0)
	t.cpu(40, 1, 1)
	rd, wr, scale := "event=0x04,umask=0x0f", "event=0x04,umask=0x30", iioScaleNew
	if old {
		rd, wr, scale = "event=0x04,umask=0x03", "event=0x04,umask=0x0c", iioScaleOld
	}
	for i := 0; i < 12; i++ {
		t.pmu(fmt.Sprintf("uncore_imc_%d", i), 40+i, "0,40", skxIMCFormat, imcEvents("event=0x00,umask=0x00", rd, wr))
	}
	for i := 0; i < 4; i++ { // icx_imc_freerunning: present, not used by the receiver
		ev := map[string]string{"dclk": "event=0xff,umask=0x10"}
		withScale(ev, "read", "event=0xff,umask=0x20", casScale)
		withScale(ev, "write", "event=0xff,umask=0x21", casScale)
		t.pmu(fmt.Sprintf("uncore_imc_free_running_%d", i), 52+i, "0,40", freeRunningFormat, ev)
	}
	for i := 0; i < 6; i++ {
		t.pmu(fmt.Sprintf("uncore_iio_%d", i), 56+i, "0,40", icxIIOFormat, nil)
		t.pmu(fmt.Sprintf("uncore_iio_free_running_%d", i), 62+i, "0,40", freeRunningFormat, iioFreeEvents(8, scale, 0))
	}
	for i, buses := range [][2]string{{"0000:16", "0000:97"}, {"0000:30", "0000:b0"}, {"0000:4a", "0000:c9"}, {"0000:64", "0000:e2"}, {"0000:7e", "0000:fb"}, {"0000:00", "0000:80"}} {
		t.File(fmt.Sprintf("sys/devices/uncore_iio_%d/die0", i), buses[0]+"\n")
		t.File(fmt.Sprintf("sys/devices/uncore_iio_%d/die1", i), buses[1]+"\n")
	}
	t.pci("0000:16", 0, "0000:16:02.0", "0000:17:00.0") // stack 0 part 0: RDMA NIC
	t.pci("0000:30", 0, "0000:30:04.0", "0000:31:00.0") // stack 1 part 2: GPU
	t.pci("0000:b0", 1, "0000:b0:02.0", "0000:b1:00.0") // socket 1 stack 1 part 0: GPU
	t.pci("0000:16", 0, "0000:16:00.0")                 // Mesh2IIO / VT-d on device 0: not a root port
	// The DMI stack (PMU 5, bus 00): the PCH behind device 0x00 (part 0) and the CBDMA engines at
	// device 0x01 (part 3), intel/pcm pcm-iio-topology.cpp (Whitley).
	t.pci("0000:00", 0, "0000:00:00.0")
	t.pci("0000:00", 0, "0000:00:01.0")
}

// spr: Xeon Platinum 8480+ (56 cores), 2 sockets. old=false: Linux 6.15 (IMC cas_count
// aliases since v6.4, 743767d6f6b8; IIO 32 B scale and no bw_out since 2025). old=true: Linux
// 6.1: IMC PMUs without events, IIO bw_in and bw_out_port0..7 (umask 0x30..0x37) at 4 B
// ([PATCH 6/7] "free-running counters on Sapphire Rapids server", 2021). PMU numbers are
// discovery unit ids; 8 IMC (one per DDR5 channel) and 12 IIO units per die are assumed
// (inference: the numbering can have gaps on other SKUs). No dieX mapping files on SPR.
func spr(t tree, old bool) {
	t.File("proc/cpuinfo", cpuinfo("GenuineIntel", 6, 0x8f, "Intel(R) Xeon(R) Platinum 8480+"))
	t.cpu(0, 0, 0)
	t.cpu(56, 1, 1)
	for i := 0; i < 8; i++ {
		ev := imcEvents("event=0x01,umask=0x00", "event=0x05,umask=0xcf", "event=0x05,umask=0xf0")
		if old {
			ev = nil
		}
		t.pmu(fmt.Sprintf("uncore_imc_%d", i), 70+i, "0,56", sprIMCFormat, ev)
	}
	for i := 0; i < 12; i++ {
		t.pmu(fmt.Sprintf("uncore_iio_%d", i), 80+i, "0,56", icxIIOFormat, nil)
		ev := iioFreeEvents(8, iioScaleNew, 0)
		if old {
			ev = iioFreeEvents(8, iioScaleOld, 0x30)
		}
		t.pmu(fmt.Sprintf("uncore_iio_free_running_%d", i), 92+i, "0,56", freeRunningFormat, ev)
	}
}

// gnr: Xeon 6980P (128 cores), 2 sockets. old=false: Linux 6.12.y with 6a8a48644c4b
// (cas_count_{read,write}_sch{0,1}); old=true: before it (cas_count_read/write = SCH0 only,
// event 0x05). Encodings: [perfmon] graniterapids UNC_M_CAS_COUNT_SCH{0,1}.{RD,WR}. 12 IMC
// boxes per die assumed (12 DDR5 channels per socket); IIO as SPR with gnr_iio_freerunning.
func gnr(t tree, old bool) {
	gnrUncore(t, 0xad, "Intel(R) Xeon(R) 6980P", 128, 12, !old, iioScaleNew)
}

// gnrUncore writes a host on the GNR uncore (gnr_uncores[] in [snbep]): 2 sockets of
// coresPerSocket CPUs, imcBoxes IMC boxes per die with both command schedulers named
// (schedulers, 6a8a48644c4b) or only cas_count_read/write = SCH0, and 6 IIO stacks with
// free-running bw_in at iioScale.
func gnrUncore(t tree, model int, modelName string, coresPerSocket, imcBoxes int, schedulers bool, iioScale string) {
	t.File("proc/cpuinfo", cpuinfo("GenuineIntel", 6, model, modelName))
	t.cpu(0, 0, 0)
	t.cpu(coresPerSocket, 1, 1)
	cpumask := fmt.Sprintf("0,%d", coresPerSocket)
	for i := 0; i < imcBoxes; i++ {
		ev := map[string]string{"clockticks": "event=0x01,umask=0x00"}
		if schedulers {
			withScale(ev, "cas_count_read_sch0", "event=0x05,umask=0xcf", casScale)
			withScale(ev, "cas_count_read_sch1", "event=0x06,umask=0xcf", casScale)
			withScale(ev, "cas_count_write_sch0", "event=0x05,umask=0xf0", casScale)
			withScale(ev, "cas_count_write_sch1", "event=0x06,umask=0xf0", casScale)
		} else {
			withScale(ev, "cas_count_read", "event=0x05,umask=0xcf", casScale)
			withScale(ev, "cas_count_write", "event=0x05,umask=0xf0", casScale)
		}
		t.pmu(fmt.Sprintf("uncore_imc_%d", i), 110+i, cpumask, sprIMCFormat, ev)
	}
	for i := 0; i < 6; i++ {
		t.pmu(fmt.Sprintf("uncore_iio_%d", i), 130+i, cpumask, icxIIOFormat, nil)
		t.pmu(fmt.Sprintf("uncore_iio_free_running_%d", i), 140+i, cpumask, freeRunningFormat, iioFreeEvents(8, iioScale, 0))
	}
}

// srf: Xeon 6780E (Sierra Forest, model 0xaf, 144 E-cores), 2 sockets. The kernel sends it down
// the GNR path ([uncore] intel_uncore_match: INTEL_ATOM_CRESTMONT_X -> gnr_uncore_init, added by
// cb4a6ccf3583 "Support Sierra Forest and Grand Ridge"), so it has GNR's two command schedulers
// (6a8a48644c4b: "CPUs that use gnr_uncores[] (e.g. Granite Rapids and Sierra Forest) implement
// two command schedulers", Fixes: cb4a6ccf3583). old=false: Linux 6.12.y with 6a8a48644c4b and
// 506f981ab40f (cas_count_{read,write}_sch{0,1}, IIO 32 B scale); old=true: a kernel with
// cb4a6ccf3583 before both (cas_count_read/write = SCH0 only, IIO 4 B scale). 8 IMC boxes per die
// (8 DDR5 channels per socket on Xeon 6700E, inference) and 6 IIO stacks assumed.
func srf(t tree, old bool) {
	scale := iioScaleNew
	if old {
		scale = iioScaleOld
	}
	gnrUncore(t, 0xaf, "Intel(R) Xeon(R) 6780E", 144, 8, !old, scale)
}

// sprSNC2: the spr host in sub-NUMA clustering mode SNC2: each socket is two NUMA nodes
// (node/nodeN/cpulist, Documentation/ABI/stable/sysfs-devices-node, "%*pbl\n" CPU lists): CPUs
// 0-27 node 0, 28-55 node 1 (socket 0), 56-83 node 2, 84-111 node 3 (socket 1).
func sprSNC2(t tree) {
	spr(t, false)
	t.Remove("sys/devices/system/cpu/cpu56/node1") // now on node 2
	t.cpu(28, 0, 1)
	t.cpu(56, 1, 2)
	t.cpu(84, 1, 3)
	for n, list := range []string{"0-27", "28-55", "56-83", "84-111"} {
		t.File(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", n), list+"\n")
	}
}

// gnrGeneric: Xeon 6980P on Linux 6.6, which predates GNR support in intel_uncore_match (GNR
// names arrived in v6.8-rc1, 632c4bf6d007 / 388d76175bd9): intel_uncore_init falls back to
// generic_uncore_init, which builds the PMUs from the discovery table and names them
// uncore_type_<type id>_<box id> ([uncore] uncore_get_pmu_name), with the generic format
// (uncore_discovery.c generic_uncore_formats_attr: event config:0-7, umask config:8-15, edge 18,
// inv 23, thresh config:24-31), no event aliases and no free-running PMU. On GNR the IMC is
// type 6 and the IIO type 1 (gnr_uncores[] in uncore_snbep.c, indexed by the discovery type).
// Other types (CHA 0, IRP 2, ...) are present but unused; two are written as decoys.
func gnrGeneric(t tree) {
	t.File("proc/cpuinfo", cpuinfo("GenuineIntel", 6, 0xad, "Intel(R) Xeon(R) 6980P"))
	t.cpu(0, 0, 0)
	t.cpu(128, 1, 1)
	generic := map[string]string{"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23", "thresh": "config:24-31"}
	for i := 0; i < 12; i++ {
		t.pmu(fmt.Sprintf("uncore_type_6_%d", i), 110+i, "0,128", generic, nil)
	}
	for i := 0; i < 6; i++ {
		t.pmu(fmt.Sprintf("uncore_type_1_%d", i), 130+i, "0,128", generic, nil)
	}
	t.pmu("uncore_type_0_0", 150, "0,128", generic, nil)
	t.pmu("uncore_type_2_0", 151, "0,128", generic, nil)
}

// gnrV68: Xeon 6980P on Linux 6.8 to 6.14: GNR named (632c4bf6d007) with gnr_uncore_iio_free_running
// reusing spr_uncore_iio_freerunning_events: bw_in_port0..7 at the 4 B scale plus
// bw_out_port0..7, umask 0x30..0x37 (both removed or rescaled by 506f981ab40f in the 6.15 cycle);
// IMC cas_count_read/write = SCH0 only (before 6a8a48644c4b).
func gnrV68(t tree) {
	gnr(t, true)
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("uncore_iio_free_running_%d", i)
		t.Remove("sys/devices/" + name)
		t.Remove("sys/bus/event_source/devices/" + name)
		t.pmu(fmt.Sprintf("uncore_iio_free_running_%d", i), 140+i, "0,128", freeRunningFormat, iioFreeEvents(8, iioScaleOld, 0x30))
	}
}

// zen4: EPYC 9654 (96 cores), 2 sockets, Linux 6.8: [amd] amd_umc_N, one per active channel,
// numbered across sockets (12 per socket), cpumask one CPU of the socket, format event
// config:0-7 and rdwrmask config:8-9, no events/ directory; amd_df with the PerfMonV2 format
// (event config:0-7,32-37, umask config:8-15,24-27). No Intel uncore PMUs.
func zen4(t tree, beforeUMC bool) {
	t.File("proc/cpuinfo", cpuinfo("AuthenticAMD", 25, 0x11, "AMD EPYC 9654 96-Core Processor"))
	t.cpu(0, 0, 0)
	t.cpu(96, 1, 1)
	t.pmu("amd_df", 11, "0,96", map[string]string{"event": "config:0-7,32-37", "umask": "config:8-15,24-27"}, nil)
	t.pmu("amd_l3", 12, "0,8,16,24,32,40,48,56,64,72,80,88,96,104,112,120,128,136,144,152,160,168,176,184",
		map[string]string{"event": "config:0-7", "umask": "config:8-15"}, nil)
	if beforeUMC {
		return // zen4_v6.1: kernels before 25e56847821f (v6.7) have no amd_umc PMU
	}
	for i := 0; i < 24; i++ {
		cpu := "0"
		if i >= 12 {
			cpu = "96"
		}
		t.pmu(fmt.Sprintf("amd_umc_%d", i), 20+i, cpu, map[string]string{"event": "config:0-7", "rdwrmask": "config:8-9"}, nil)
	}
}

// zen3: EPYC 7763 (64 cores, family 0x19 model 0x01), 2 sockets, Linux 6.1: [amd] amd_df with
// the pre-PerfMonV2 format (event config:0-7,32-35,59-60, umask config:8-15), no events/
// directory, cpumask one CPU per socket; amd_l3; no amd_umc (Zen 4+ only).
func zen3(t tree) {
	t.File("proc/cpuinfo", cpuinfo("AuthenticAMD", 25, 0x01, "AMD EPYC 7763 64-Core Processor"))
	t.cpu(0, 0, 0)
	t.cpu(64, 1, 1)
	t.pmu("amd_df", 11, "0,64", map[string]string{"event": "config:0-7,32-35,59-60", "umask": "config:8-15"}, nil)
	t.pmu("amd_l3", 12, "0,8,16,24,32,40,48,56,64,72,80,88,96,104,112,120",
		map[string]string{"event": "config:0-7", "umask": "config:8-15"}, nil)
}

// resctrl: a bare-metal Ice Lake-SP host whose kernel has no uncore support for it (only the
// core PMU), with resctrl mounted: Documentation/arch/x86/resctrl.rst info/L3_MON/mon_features
// and mon_data/mon_L3_<%02d id>/mbm_total_bytes (decimal, "%llu\n", rdtgroup.c/monitor.c).
func resctrl(t tree) {
	t.File("proc/cpuinfo", cpuinfo("GenuineIntel", 6, 0x6a, "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"))
	t.cpu(0, 0, 0)
	t.pmu("cpu", 4, "", map[string]string{"event": "config:0-7", "umask": "config:8-15"}, nil)
	t.File("sys/fs/resctrl/info/L3_MON/mon_features", "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n")
	for _, d := range []string{"00", "01"} {
		t.File("sys/fs/resctrl/mon_data/mon_L3_"+d+"/llc_occupancy", "1048576\n")
		t.File("sys/fs/resctrl/mon_data/mon_L3_"+d+"/mbm_total_bytes", "1000\n")
		t.File("sys/fs/resctrl/mon_data/mon_L3_"+d+"/mbm_local_bytes", "900\n")
	}
}

// vm: a KVM guest: cpuinfo has the hypervisor flag and only core PMUs exist (intel_uncore_init
// returns -ENODEV under X86_FEATURE_HYPERVISOR).
func vm(t tree) {
	t.File("proc/cpuinfo", strings.Replace(cpuinfo("GenuineIntel", 6, 0x8f, "Intel(R) Xeon(R) Platinum 8480+"), "mce\n", "mce hypervisor\n", 1))
	t.cpu(0, 0, 0)
	t.pmu("cpu", 4, "", map[string]string{"event": "config:0-7", "umask": "config:8-15"}, nil)
	t.pmu("software", 1, "", nil, nil)
}

// sprHBM: Xeon CPU Max 9480 (Sapphire Rapids with HBM2e, model 0x8f, 56 cores), 2 sockets: the spr
// host plus the HBM memory controllers' PMUs. named=true: Linux 6.12, uncore_hbm_<box>
// (f8a86a9bb5f7, v6.11: spr_uncore_hbm .name "hbm", SPR_UNCORE_COMMON_FORMAT = the SPR raw
// format, no events); named=false: Linux 6.6, the generic uncore_type_14_<box> (14: the index of
// spr_uncore_hbm in spr_uncores[]; generic_uncore_formats_attr). 8 HBM boxes per die, numbered
// without gaps, are assumed (inference: 4 HBM2e stacks per socket, box ids from the discovery
// table).
func sprHBM(t tree, named bool) {
	spr(t, false)
	t.File("proc/cpuinfo", cpuinfo("GenuineIntel", 6, 0x8f, "Intel(R) Xeon(R) CPU Max 9480"))
	generic := map[string]string{"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23", "thresh": "config:24-31"}
	for i := 0; i < 8; i++ {
		if named {
			t.pmu(fmt.Sprintf("uncore_hbm_%d", i), 120+i, "0,56", sprIMCFormat, nil)
		} else {
			t.pmu(fmt.Sprintf("uncore_type_14_%d", i), 120+i, "0,56", generic, nil)
		}
	}
}

// cspmu writes one arm_cspmu PMU as drivers/perf/arm_cspmu/arm_cspmu.c lays it out: the PMU device
// is a child of its APMT platform device "arm-cs-arch-pmu.<APMT node id>" (drivers/acpi/arm64/
// apmt.c DEV_NAME, platform_device_alloc; the PMU's .parent = cspmu->dev), with identifier (the
// PMIIDR, "%x\n", arm_cspmu_get_identifier), cpumask and associated_cpus (arm_cspmu_cpumask_show,
// cpumap_print_to_pagebuf list form, "\n"), format/<field> ("%s\n", device_show_string) and
// events/<name> ("event=0x%llx\n", arm_cspmu_sysfs_event_show; no .scale, no .unit).
func (t tree) cspmu(name string, apmtID, typ int, pmiidr uint32, cpumask, associated string, formats map[string]string, events map[string]uint64) {
	dir := fmt.Sprintf("sys/devices/platform/arm-cs-arch-pmu.%d/%s", apmtID, name)
	t.File(dir+"/type", fmt.Sprintf("%d\n", typ))
	t.File(dir+"/identifier", fmt.Sprintf("%x\n", pmiidr))
	t.File(dir+"/cpumask", cpumask+"\n")
	t.File(dir+"/associated_cpus", associated+"\n")
	t.File(dir+"/perf_event_mux_interval_ms", "4\n")
	t.File(dir+"/format/event", "config:0-32\n") // ARM_CSPMU_FORMAT_EVENT_ATTR
	for f, v := range formats {
		t.File(dir+"/format/"+f, v+"\n")
	}
	for e, v := range events {
		t.File(dir+"/events/"+e, fmt.Sprintf("event=0x%x\n", v))
	}
	t.Link("sys/bus/event_source/devices/"+name, fmt.Sprintf("../../../devices/platform/arm-cs-arch-pmu.%d/%s", apmtID, name))
}

// Event tables of nvidia_cspmu.c (torvalds/linux drivers/perf/arm_cspmu/nvidia_cspmu.c):
// scf_pmu_event_attrs (a subset: the memory data events and two unused ones as decoys) and
// mcf_pmu_event_attrs (all of it), both with the cycle counter ARM_CSPMU_EVT_CYCLES_DEFAULT
// (1 << 32).
var (
	scfEvents = map[string]uint64{
		"bus_cycles": 0x1d, "scf_cache": 0xf2, "gmem_rd_data": 0x16d, "gmem_wr_total_bytes": 0x1a0,
		"remote_socket_wr_total_bytes": 0x1a1, "remote_socket_rd_data": 0x1a2,
		"cmem_rd_data": 0x1a5, "cmem_rd_access": 0x1a6, "cmem_wb_data": 0x1ab, "cmem_wr_data": 0x1b1,
		"cmem_wr_total_bytes": 0x1db, "cycles": 1 << 32,
	}
	mcfEvents = map[string]uint64{
		"rd_bytes_loc": 0x0, "rd_bytes_rem": 0x1, "wr_bytes_loc": 0x2, "wr_bytes_rem": 0x3,
		"total_bytes_loc": 0x4, "total_bytes_rem": 0x5, "rd_req_loc": 0x6, "rd_req_rem": 0x7,
		"wr_req_loc": 0x8, "wr_req_rem": 0x9, "total_req_loc": 0xa, "total_req_rem": 0xb,
		"rd_cum_outs_loc": 0xc, "rd_cum_outs_rem": 0xd, "cycles": 1 << 32,
	}
)

// grace: NVIDIA Grace Hopper (sockets 1: GH200) or two Grace Blackwell superchips of a GB200
// compute tray (sockets 2), 72 Neoverse V2 cores per Grace, Linux 6.8 (arm_cspmu with the
// nvidia_cspmu backend). cpuinfo as arch/arm64/kernel/cpuinfo.c c_show prints it (no vendor_id:
// "CPU implementer", "CPU part" 0xd4f = ARM_CPU_PART_NEOVERSE_V2), cpu0's MIDR in
// regs/identification/midr_el1 ("0x%016llx\n", cpuregs_attr). Socket s has CPUs 72s..72s+71 on
// NUMA node s; the Hopper's HBM is a CPU-less NUMA node (node 1 on a GH200: an empty cpulist).
// Per socket the NVIDIA PMUs of nvidia_cspmu.c nv_cspmu_match, named with the socket's node
// (NAME_FMT_SOCKET): nvidia_scf_pmu_s (PMIIDR product 0x2cf), nvidia_pcie_pmu_s (0x103, format
// root_port config1:0-9), nvidia_nvlink_c2c1_pmu_s (0x104) and _c2c0_pmu_s (0x105, port
// config1:0-1), nvidia_cnvlink_pmu_s (0x106, rem_socket config1:0-3); implementer 0x36b. APMT
// node ids and PMU type numbers are inferred (any value works). The core PMU armv8_pmuv3_0 has no
// cpumask (a decoy).
func grace(t tree, sockets int) {
	t.File("proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti\n"+
		"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\n"+
		"processor\t: 1\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n\n")
	t.File("sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "0x00000000410fd4f0\n")
	t.pmu("armv8_pmuv3_0", 8, "", map[string]string{"event": "config:0-15"}, nil)
	for s := 0; s < sockets; s++ {
		first := 72 * s
		t.cpu(first, s, s)
		t.File(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", s), fmt.Sprintf("%d-%d\n", first, first+71))
		cpumask, associated := fmt.Sprint(first), fmt.Sprintf("%d-%d", first, first+71)
		id := 5 * s
		t.cspmu(fmt.Sprintf("nvidia_scf_pmu_%d", s), id, 20+id, 0x2cf0036b, cpumask, associated, nil, scfEvents)
		t.cspmu(fmt.Sprintf("nvidia_pcie_pmu_%d", s), id+1, 21+id, 0x1030036b, cpumask, associated, map[string]string{"root_port": "config1:0-9"}, mcfEvents)
		t.cspmu(fmt.Sprintf("nvidia_nvlink_c2c1_pmu_%d", s), id+2, 22+id, 0x1040036b, cpumask, associated, map[string]string{"port": "config1:0-1"}, mcfEvents)
		t.cspmu(fmt.Sprintf("nvidia_nvlink_c2c0_pmu_%d", s), id+3, 23+id, 0x1050036b, cpumask, associated, map[string]string{"port": "config1:0-1"}, mcfEvents)
		t.cspmu(fmt.Sprintf("nvidia_cnvlink_pmu_%d", s), id+4, 24+id, 0x1060036b, cpumask, associated, map[string]string{"rem_socket": "config1:0-3"}, mcfEvents)
	}
	if sockets == 1 {
		t.File("sys/devices/system/node/node1/cpulist", "\n") // the Hopper's HBM: memory only
	}
}

func main() {
	for name, build := range map[string]func(tree){
		"skx": skx, "icx": func(t tree) { icx(t, false) }, "icx_v5.15": func(t tree) { icx(t, true) },
		"spr": func(t tree) { spr(t, false) }, "spr_v6.1": func(t tree) { spr(t, true) },
		"gnr": func(t tree) { gnr(t, false) }, "gnr_unpatched": func(t tree) { gnr(t, true) },
		"srf": func(t tree) { srf(t, false) }, "srf_unpatched": func(t tree) { srf(t, true) },
		"gnr_v6.6": gnrGeneric, "gnr_v6.8": gnrV68, "spr_snc2": sprSNC2,
		"zen4": func(t tree) { zen4(t, false) }, "zen4_v6.1": func(t tree) { zen4(t, true) }, "zen3": zen3, "vm": vm, "resctrl": resctrl,
		"spr_hbm": func(t tree) { sprHBM(t, true) }, "spr_hbm_v6.6": func(t tree) { sprHBM(t, false) },
		"gh200": func(t tree) { grace(t, 1) }, "gb200": func(t tree) { grace(t, 2) },
	} {
		root := filepath.Join("testdata", name)
		must(os.RemoveAll(root))
		t := tree{&testfs.Tree{}}
		build(t)
		must(t.Write(root))
	}
}
