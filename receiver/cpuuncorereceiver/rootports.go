package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
)

// This file maps IIO stacks and their parts (ports) to the PCI root ports they serve, and lists
// the devices behind each.

// portInfo is a root port as found in the PCI tree.
type portInfo struct {
	address string
	numa    int64
	below   []pci.Function
}

// rootBus reads uncore_iio_<N>/die<X>: "Segment:Root Bus" of the stack, "%04x:%02x\n"
// (Documentation/ABI/testing/sysfs-devices-mapping; uncore_snbep.c skx_iio_mapping_show). The
// free-running PMU of stack N shares the stack's index with uncore_iio_N (both are boxes pmu_idx
// N of the same die), and only uncore_iio_N carries the mapping. Missing on SPR and later, ICX-D,
// kernels before v5.9 (SKX) / v5.14 (ICX), and for a stack on bus 0 other than the one the kernel
// designates.
func (d *discovery) rootBus(freeRunning string, die int) string {
	box := strings.Replace(freeRunning, "_free_running", "", 1)
	path := filepath.Join(d.paths.pmus, box, fmt.Sprintf("die%d", die))
	s, err := d.r.ReadString(path)
	if err != nil {
		return ""
	}
	// The root bus's host bridge is sys/devices/pci<mapping> (drivers/pci/probe.c
	// pci_register_host_bridge names it pci%04x:%02x).
	if !pci.IsRootBus("pci" + s) {
		d.problem(path, fmt.Errorf("%s: unexpected stack mapping %q", path, s))
		return ""
	}
	return s
}

// mappingAgrees reports whether the stack mapping of a PMU can be used: the kernel writes one
// dieX file per logical die (uncore_snbep.c pmu_set_mapping creates die0..uncore_max_dies()-1,
// skx_iio_mapping_show prints pmu_topology(pmu, die)), while the receiver indexes them by the
// PMU's cpumask, which lists only dies with an online CPU. Where the counts differ (a die with no
// online CPU) the index would name another die's root bus: the mapping is refused, and said once.
func (d *discovery) mappingAgrees(freeRunning string, cpus int) bool {
	box := strings.Replace(freeRunning, "_free_running", "", 1)
	files, _ := filepath.Glob(filepath.Join(d.paths.pmus, box, "die[0-9]*"))
	if len(files) == 0 || len(files) == cpus {
		return true
	}
	d.note("mapping/"+pmuFamily(box), "IIO stack mapping has more die files than the cpumask has dies (a die without an online CPU): ports reported without pci.bus_id",
		zap.String("pmu", pmuFamily(box)), zap.Int("mapping_files", len(files)), zap.Int("dies", cpus))
	return false
}

// busOnSocket checks the kernel's stack mapping against the PCI tree where both can be read: the
// dieX file the receiver picked for a die (by cpumask order, see mappingAgrees) must name a root
// bus whose devices sit on that die's socket. The devices' numa_node (drivers/pci/pci-sysfs.c,
// the host bridge's proximity domain) and that node's CPUs (node/nodeN/cpulist) give the socket;
// under sub-NUMA clustering a node is still within one socket. The kernel indexes dieX by logical
// die id (pmu_set_mapping) and the cpumask lists dies in CPU-number order; where the two orders
// differ the bus belongs to another socket, and the mapping is not used for that die (said once
// per PMU type): ports without pci.bus_id rather than another die's root ports. A bus without
// devices, or with numa_node -1, cannot be checked and is taken as the kernel gives it.
func (d *discovery) busOnSocket(pmu, rootBus string, socket int) bool {
	if socket < 0 {
		return true
	}
	fns, _ := filepath.Glob(filepath.Join(pci.RootBusDir(d.paths.sysDevices, rootBus), "*", "numa_node"))
	for _, f := range fns {
		node, err := d.r.ReadInt(f)
		if err != nil || node < 0 {
			continue
		}
		busSocket, ok := d.nodeSocket(node)
		if !ok {
			return true
		}
		if busSocket == socket {
			return true
		}
		box := strings.Replace(pmu, "_free_running", "", 1) // the mapping is uncore_iio_N's
		d.note("mapping-socket/"+pmuFamily(box), "IIO stack mapping names a root bus of another socket than the die it is read for (logical die order differs from cpumask order): those ports are reported without pci.bus_id",
			zap.String("pmu", pmuFamily(box)), zap.String("root_bus", rootBus), zap.Int("bus_socket", busSocket), zap.Int("die_socket", socket))
		return false
	}
	return true
}

// rootPort finds the root port of one IIO part on the stack's root bus, and what sits behind it.
func (d *discovery) rootPort(iio *iioTable, rootBus string, stack, port int, numa int64) portInfo {
	pi := portInfo{numa: numa}
	if iio == nil || iio.rootPortDevice == nil || rootBus == "" {
		return pi
	}
	dev, ok := iio.rootPortDevice(stack, port)
	if !ok {
		return pi
	}
	addr := pci.FunctionAddress(rootBus, dev, 0)
	dir := filepath.Join(pci.RootBusDir(d.paths.sysDevices, rootBus), addr)
	if _, err := os.Stat(dir); err != nil {
		return pi // no root port in that slot (bifurcation, unpopulated)
	}
	pi.address = addr
	if n, err := d.r.ReadInt(filepath.Join(dir, "numa_node")); err == nil && n >= 0 {
		pi.numa = n
	}
	below, err := pci.Below(dir)
	if err != nil {
		d.problem(dir, fmt.Errorf("listing devices behind root port %s: %w", addr, err))
	}
	pi.below = below
	return pi
}

// attach records the devices found behind the ports of one stack.
func (d *discovery) attach(stackDev string, ports map[int]portInfo) {
	nums := make([]int, 0, len(ports))
	for n := range ports {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		pi := ports[n]
		if pi.address == "" {
			continue
		}
		dev := stackDev
		if d.cfg.PCIe.Granularity == GranularityPort {
			dev = fmt.Sprintf("%s/port%d", stackDev, n)
		}
		for _, fn := range pi.below {
			if pci.IsBridge(d.r, fn.Dir) {
				// A switch port below the root port: the bytes of the devices below it cross it,
				// it has none of its own, and no owner is given it (internal/owner keys GPUs and
				// RDMA devices), so listing it would make every stack with a switch nobody's.
				continue
			}
			numa := pi.numa
			if v, err := d.r.ReadInt(filepath.Join(fn.Dir, "numa_node")); err == nil && v >= 0 {
				numa = v
			}
			d.plan.devices = append(d.plan.devices, attachedDevice{device: dev, rootPort: pi.address, busID: fn.Address, numa: numa})
		}
	}
}
