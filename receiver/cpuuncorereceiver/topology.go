package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"bufio"
	"fmt"
	"os"
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

func newHostPaths(root string) hostPaths {
	return hostPaths{
		pmus:       filepath.Join(root, "sys", "bus", "event_source", "devices"),
		sysDevices: filepath.Join(root, "sys", "devices"),
		cpus:       filepath.Join(root, "sys", "devices", "system", "cpu"),
		cpuinfo:    filepath.Join(root, "proc", "cpuinfo"),
		resctrl:    filepath.Join(root, "sys", "fs", "resctrl"),
	}
}

// readCPUID reads vendor, family, model and the hypervisor flag of the first processor in
// /proc/cpuinfo (arch/x86/kernel/cpu/proc.c show_cpuinfo). Only the first block is read.
func readCPUID(path string) (cpuID, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuID{}, err
	}
	defer f.Close()
	var id cpuID
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024) // the flags line is long
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // end of the first processor's block
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "vendor_id":
			id.vendor = val
		case "cpu family":
			id.family, _ = strconv.Atoi(val)
		case "model":
			id.model, _ = strconv.Atoi(val)
		case "flags":
			for _, fl := range strings.Fields(val) {
				if fl == "hypervisor" {
					id.hypervisor = true
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return cpuID{}, fmt.Errorf("%s: %w", path, err)
	}
	if id.vendor == "" {
		return cpuID{}, fmt.Errorf("%s: no vendor_id", path)
	}
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
