package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

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

// readCPUID identifies the first processor of the cpuinfo file at path (vendor, family, model,
// the hypervisor flag), parsed with prometheus/procfs.
func readCPUID(path string) (id cpuID, err error) {
	// procfs v0.23.0 parseCPUInfoX86 indexes past a "processor:" line without ": " (found by
	// FuzzReadCPUID): a malformed file, or one from a recording, must cost an error, not the process.
	defer func() {
		if r := recover(); r != nil {
			id, err = cpuID{}, fmt.Errorf("%s: cannot parse: %v", path, r)
		}
	}()
	fs, err := procfs.NewFS(filepath.Dir(path))
	if err != nil {
		return cpuID{}, err
	}
	infos, err := fs.CPUInfo()
	if err != nil {
		return cpuID{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(infos) == 0 || infos[0].VendorID == "" {
		return cpuID{}, fmt.Errorf("%s: no vendor_id", path)
	}
	first := infos[0]
	id = cpuID{vendor: first.VendorID, hypervisor: slices.Contains(first.Flags, "hypervisor")}
	id.family, _ = strconv.Atoi(first.CPUFamily)
	id.model, _ = strconv.Atoi(first.Model)
	return id, nil
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
		lists, _ := filepath.Glob(filepath.Join(filepath.Dir(d.paths.cpus), "node", "node[0-9]*", "cpulist"))
		for _, l := range lists {
			s, err := d.r.ReadString(l)
			first, _, _ := strings.Cut(strings.TrimSpace(s), ",")
			first, _, _ = strings.Cut(first, "-")
			cpu, perr := strconv.Atoi(first)
			if err != nil || perr != nil {
				continue // a node without CPUs (memory only, CXL)
			}
			d.nodesPerSocket[d.place(cpu).socket]++
		}
	}
	return socket >= 0 && d.nodesPerSocket[socket] > 1
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
