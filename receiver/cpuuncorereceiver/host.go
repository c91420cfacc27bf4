package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

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
