package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// hostPaths are the directories the receiver reads, under root_path.
type hostPaths struct {
	pmus       string // sys/bus/event_source/devices
	sysDevices string // sys/devices (PCI root buses)
	cpus       string // sys/devices/system/cpu
	cpuinfo    string // proc/cpuinfo
	resctrl    string // sys/fs/resctrl
}

func newHostPaths(rootPath string) hostPaths {
	root := sysfs.HostRoot(rootPath)
	return hostPaths{
		pmus:       filepath.Join(root, "sys", "bus", "event_source", "devices"),
		sysDevices: filepath.Join(root, "sys", "devices"),
		cpus:       filepath.Join(root, "sys", "devices", "system", "cpu"),
		cpuinfo:    filepath.Join(root, "proc", "cpuinfo"),
		resctrl:    filepath.Join(root, "sys", "fs", "resctrl"),
	}
}

// cpuPlace is where a CPU sits.
type cpuPlace struct {
	socket int
	numa   int64
}

// placeCPU reads the CPU's package (topology/physical_package_id) and its NUMA node (the
// cpuN/nodeM link the kernel creates in drivers/base/node.c register_cpu_under_node). Unknown
// values are -1 and an error naming the file.
func placeCPU(r *sysfs.Reader, cpusDir string, cpu int) (cpuPlace, error) {
	dir := filepath.Join(cpusDir, fmt.Sprintf("cpu%d", cpu))
	p := cpuPlace{socket: -1, numa: -1}
	pkg, err := r.ReadInt(filepath.Join(dir, "topology", "physical_package_id"))
	if err == nil {
		p.socket = int(pkg)
	}
	if nodes, _ := filepath.Glob(filepath.Join(dir, "node[0-9]*")); len(nodes) == 1 {
		if n, perr := strconv.Atoi(strings.TrimPrefix(filepath.Base(nodes[0]), "node")); perr == nil {
			p.numa = int64(n)
		}
	}
	return p, err
}

// subNUMA reports whether a socket is split into several NUMA nodes (Intel sub-NUMA clustering,
// SNC2/3/4 on SPR/EMR/GNR; AMD NPS2/4): more than one node/nodeN/cpulist names a CPU of it
// (Documentation/ABI/stable/sysfs-devices-node).
func (d *discovery) subNUMA(socket int) bool {
	if d.nodesPerSocket == nil {
		d.nodesPerSocket = map[int]int{}
		dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(d.paths.cpus), "node", "node[0-9]*"))
		for _, dir := range dirs {
			node, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(dir), "node"), 10, 64)
			if err != nil {
				continue
			}
			if socket, ok := d.nodeSocket(node); ok {
				d.nodesPerSocket[socket]++
			} // else a node without CPUs (memory only, CXL, a GPU's HBM)
		}
	}
	return socket >= 0 && d.nodesPerSocket[socket] > 1
}

// nodeSocket returns the socket of a NUMA node's first CPU (node/nodeN/cpulist, "%*pbl\n"); false
// for a node without CPUs.
func (d *discovery) nodeSocket(node int64) (int, bool) {
	s, err := d.r.ReadString(filepath.Join(filepath.Dir(d.paths.cpus), "node", fmt.Sprintf("node%d", node), "cpulist"))
	if err != nil {
		return 0, false
	}
	cpus, err := perf.ParseCPUList(s)
	if err != nil || len(cpus) == 0 {
		return 0, false
	}
	p := d.place(cpus[0])
	return p.socket, p.socket >= 0
}

func (d *discovery) place(cpu int) cpuPlace {
	if p, ok := d.places[cpu]; ok {
		return p
	}
	p, err := placeCPU(d.r, d.paths.cpus, cpu)
	if err != nil {
		d.problem(fmt.Sprintf("cpu%d", cpu), fmt.Errorf("CPU %d topology: %w", cpu, err))
	}
	d.places[cpu] = p
	return p
}

// cpuinfoMax bounds the read of cpuinfo: only the first processor's block is used (about 1.5 KiB
// on x86, less on arm64), however many CPUs the host has.
const cpuinfoMax = 64 << 10

// readCPUID identifies the first processor of the cpuinfo file at path by the format the kernel
// that wrote it uses, whatever the architecture this collector was built for: a recording from an
// x86 host replays on an arm64 collector and the other way round. (prometheus/procfs picks its
// parser by the build's GOARCH, and its arm parser never fills a vendor.)
//   - x86 (arch/x86/kernel/cpu/proc.c show_cpuinfo): "vendor_id\t: GenuineIntel", "cpu family\t: 6",
//     "model\t\t: 143", "flags\t\t: fpu ... hypervisor".
//   - arm64 (arch/arm64/kernel/cpuinfo.c c_show): "CPU implementer\t: 0x41", "CPU variant\t: 0x0",
//     "CPU part\t: 0xd4f", "CPU revision\t: 0", no vendor name and no hypervisor flag.
//
// Only the first processor's block counts (up to the next "processor" line). A file that names
// neither is an error naming it, and so is one that cannot be read.
func readCPUID(path string) (cpuID, error) {
	b, err := sysfs.ReadFile(path, cpuinfoMax)
	if err != nil {
		return cpuID{}, err
	}
	id, err := parseCPUInfo(b)
	if err != nil {
		return cpuID{}, fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}

func parseCPUInfo(b []byte) (cpuID, error) {
	var id cpuID
	var haveImplementer bool
	processors := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), cpuinfoMax)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "processor":
			if processors++; processors > 1 {
				return id.finish(haveImplementer)
			}
		case "vendor_id":
			id.vendor = value
		case "cpu family":
			id.family, _ = strconv.Atoi(value)
		case "model":
			id.model, _ = strconv.Atoi(value)
		case "flags":
			id.hypervisor = slices.Contains(strings.Fields(value), "hypervisor")
		case "CPU implementer":
			v, err := strconv.ParseUint(value, 0, 8)
			if err != nil {
				return cpuID{}, fmt.Errorf("CPU implementer: not a number, got %q", value)
			}
			id.implementer, haveImplementer = uint32(v), true
		case "CPU part":
			v, err := strconv.ParseUint(value, 0, 12)
			if err != nil {
				return cpuID{}, fmt.Errorf("CPU part: not a number, got %q", value)
			}
			id.part = uint32(v)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return cpuID{}, err
	}
	return id.finish(haveImplementer)
}

// finish completes an identification: an arm64 CPU has no vendor name in cpuinfo and is known by
// its MIDR implementer and part (arch/arm64/include/asm/cputype.h ARM_CPU_IMP_*, *_CPU_PART_*).
func (c cpuID) finish(haveImplementer bool) (cpuID, error) {
	switch {
	case c.vendor != "":
		return c, nil
	case haveImplementer:
		c.vendor = vendorARM64
		return c, nil
	}
	return cpuID{}, errors.New("neither vendor_id (x86) nor CPU implementer (arm64) in the first processor")
}

// readMIDR identifies an arm64 CPU from cpu0's Main ID Register where cpuinfo cannot be used:
// regs/identification/midr_el1, "0x%016llx\n" (arch/arm64/kernel/cpuinfo.c cpuregs_attr);
// implementer bits 31:24, part number bits 15:4 (MIDR_IMPLEMENTOR_SHIFT, MIDR_PARTNUM_SHIFT in
// arch/arm64/include/asm/cputype.h).
func readMIDR(r *sysfs.Reader, cpusDir string) (cpuID, error) {
	path := filepath.Join(cpusDir, "cpu0", "regs", "identification", "midr_el1")
	midr, err := r.ReadUint(path)
	if err != nil {
		return cpuID{}, err
	}
	return cpuID{vendor: vendorARM64, implementer: uint32(midr>>24) & 0xff, part: uint32(midr>>4) & 0xfff}, nil
}
