package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// port is one RDMA port: the facts that do not change while its device exists, resolved once, and
// the plan of what a scrape reads.
type port struct {
	name      string // device/port, e.g. mlx5_0/1
	device    string
	dir       string // <sys>/class/infiniband/<device>/ports/<n>
	linkLayer string
	netdev    string
	pciBusID  string
	numaNode  int64
	hcaType   string
	fwVersion string
	nodeGUID  string
	boardID   string

	// gauges are the port's files of enabled gauges (portGauges) that the port has.
	gauges   []gaugeFile
	counters []counterFile
	// notProvided are the counter sets the hardware does not provide, found at discovery (the
	// scraper says so once).
	notProvided []notProvided

	// counterDirs: the port has a counters/ or hw_counters/ directory.
	counterDirs bool
	// softIWARP: the device is siw's (soft iWARP), which has no counters by design: neither
	// counters/ (no process_mad) nor hw_counters/ (no alloc_hw_port_stats) in
	// drivers/infiniband/sw/siw/siw_main.c siw_device_ops.
	softIWARP bool
	// missingAttrs are the attribute files core sysfs.c creates for every port (link_layer,
	// state, phys_state, rate: port_default_attrs) that this port lacks: what it is reported
	// without, said once (a partial dump, a kernel or driver that leaves them out).
	missingAttrs []string

	// plane marks a port of a plane device of a multi-plane HCA: an SMI device on the same PCI
	// function as the device that carries the traffic (smiDevice).
	plane bool

	// lineRate is the port's data rate in bytes/s as its rate file last read (0: unknown), the
	// line rate the fast sampler's windows are measured against.
	lineRate float64
}

// gaugeFile is a port's gauge file and the current scrape's reading of it, written by the
// device's reading goroutine (readgroup.go).
type gaugeFile struct {
	def      *portGauge
	path     string
	v, extra int64
	err      error
	// off: the hardware does not provide it; it is not read again.
	off bool
}

// notProvided is a set of counters the hardware does not provide, and how it said so.
type notProvided struct {
	path string
	err  error
}

// uintReading is a file's value or the error that cost it.
type uintReading struct {
	raw uint64
	err error
}

// netdev is a network device behind one or more RDMA ports (a RoCE bond serves several).
type netdev struct {
	name     string
	pciBusID string
	numaNode int64
	txBytes  string // <sys>/class/net/<name>/statistics/tx_bytes
	rxBytes  string
	tx, rx   uintReading // the readings of the current scrape
	// ethtool are the netdevs whose driver statistics stand for this one: itself, or the physical
	// members of a bond (lowerDevices).
	ethtool []*ethtoolTarget
}

// ethtoolTarget is a netdev read through ethtool, with its driver's table once known.
type ethtoolTarget struct {
	name   string
	driver string
	table  []ethtoolStat
	keys   []string // series key per table entry
	// off: the netdev has no driver statistics (EOPNOTSUPP); it is not asked again.
	off bool
}

// plan is what discovery produces, and all it produces: the ports and netdevs a scrape reads, and
// the device list it was built from.
type plan struct {
	devices  []string
	portNums map[string][]string // the port numbers of each device
	ports    []*port
	netdevs  []*netdev
}

// sameDevices reports whether the plan was built from these devices and ports.
func (pl *plan) sameDevices(devices []string, portNums map[string][]string) bool {
	return slices.Equal(devices, pl.devices) && maps.EqualFunc(portNums, pl.portNums, slices.Equal)
}

// deviceError is what a device's discovery could not resolve.
type deviceError struct {
	device string
	err    error
}

// discovery resolves ports and netdevs from sysfs.
type discovery struct {
	sys     string
	cfg     *Config
	metrics metadata.MetricsConfig
	reader  *sysfs.Reader
}

func (d *discovery) classDir() string { return filepath.Join(d.sys, "class", "infiniband") }

// listDevices returns the RDMA device names, sorted. A missing class directory (no RDMA stack
// loaded) is no error: there are simply no devices.
func (d *discovery) listDevices() ([]string, error) {
	names, err := sysfs.ListDir(d.classDir())
	slices.SortFunc(names, natorder.Compare)
	return names, err
}

// portNumbersOf lists the port numbers of each device.
func (d *discovery) portNumbersOf(devices []string) map[string][]string {
	out := make(map[string][]string, len(devices))
	for _, dev := range devices {
		out[dev] = d.portNumbers(dev)
	}
	return out
}

// discover builds the plan of the given devices. A device that cannot be read costs only itself;
// its error is returned alongside the plan of what could be resolved. The reads of each device's
// files are done by each (d.discoverDevice, with the scraper's deadline: discoverDeviceWithin);
// the directory listings stay with the caller.
func (d *discovery) discover(devices []string, portNums map[string][]string, each func(dev string) ([]*port, error)) (*plan, []deviceError) {
	var (
		ports []*port
		errs  []deviceError
	)
	for _, dev := range devices {
		if _, err := d.portNumbersErr(dev); err != nil {
			errs = append(errs, deviceError{dev, err})
			continue
		}
		if !d.anyPortSelected(dev) {
			continue
		}
		ps, err := each(dev)
		if err != nil {
			errs = append(errs, deviceError{dev, err})
		}
		ports = append(ports, ps...)
	}
	markPlanes(ports)
	return &plan{devices: devices, portNums: portNums, ports: ports, netdevs: d.netdevsOf(ports)}, errs
}

// markPlanes marks the ports of plane devices: an SMI device of a multi-plane (XDR, ConnectX-8)
// HCA sits on the same PCI function as the device that carries the traffic (Mellanox/rdmamap PR
// #17 lists mlx5_0 and smi1 both at 0000:0b:00.0), and mlx5 mad.c process_pma_cmd answers it with
// per-plane PPCNT counters, while the main device's PMA counters are the vport's: counting both
// would count the traffic twice. The smi name is what rdmamap shows; the kernel's
// RDMA_DEVICE_TYPE_SMI is not visible in sysfs.
func markPlanes(ports []*port) {
	devsByFunction := map[string]map[string]bool{}
	for _, p := range ports {
		if p.pciBusID == "" {
			continue
		}
		if devsByFunction[p.pciBusID] == nil {
			devsByFunction[p.pciBusID] = map[string]bool{}
		}
		devsByFunction[p.pciBusID][p.device] = true
	}
	for _, p := range ports {
		p.plane = len(devsByFunction[p.pciBusID]) > 1 && strings.HasPrefix(p.device, "smi")
	}
}

// withoutCounters reports whether the RDMA ports of PCI devices all lack both counter
// directories: the compat devices a network namespace other than the host's sees in the default
// "shared" RDMA netns mode (drivers/infiniband/core/device.c add_one_compat_dev; core sysfs.c
// setup_port creates hw_counters and counters only for the full device).
func withoutCounters(ports []*port) bool {
	n := 0
	for _, p := range ports {
		if p.pciBusID == "" {
			continue
		}
		if p.counterDirs {
			return false
		}
		if p.softIWARP {
			continue
		}
		n++
	}
	return n > 0
}

// anyPortSelected reports whether the include/exclude patterns keep at least one port of dev.
func (d *discovery) anyPortSelected(dev string) bool {
	for _, p := range d.portNumbers(dev) {
		if d.cfg.selects(dev, p) {
			return true
		}
	}
	return false
}

func (d *discovery) portNumbers(dev string) []string {
	nums, _ := d.portNumbersErr(dev)
	return nums
}

// portNumbersErr lists the device's port numbers; a ports/ directory that exists but cannot be
// read is an error naming it.
func (d *discovery) portNumbersErr(dev string) ([]string, error) {
	dir := filepath.Join(d.classDir(), dev, "ports")
	entries, err := sysfs.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot list %s: %w", dev, dir, err)
	}
	var nums []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = strconv.Itoa(n)
	}
	return out, nil
}

func (d *discovery) discoverDevice(dev string) ([]*port, error) {
	devDir := filepath.Join(d.classDir(), dev)
	nums, err := d.portNumbersErr(dev)
	if err != nil {
		return nil, err
	}
	if len(nums) == 0 {
		return nil, fmt.Errorf("%s: no ports found under %s", dev, filepath.Join(devDir, "ports"))
	}

	// PCI address and NUMA node from the `device` link. Soft-RoCE (rxe) has none: it is registered
	// without a DMA device (rxe_verbs.c), so its ports carry no PCI address.
	pciBusID, numa := "", int64(-1)
	var errs []error
	if pdev, err := pci.FromLink(d.reader, filepath.Join(devDir, "device")); pdev != nil {
		pciBusID, numa = pdev.Address, pdev.NUMANode
		if err != nil {
			errs = append(errs, err)
		}
	} else if !errors.Is(err, pci.ErrNotPCI) && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}

	var hcaType, fwVersion, nodeGUID, boardID string
	if d.metrics.RnicPortInfo.Enabled {
		// Optional per driver: hfi1 has no hca_type, i40iw no board_id (procfs history #387, #556).
		hcaType = d.optionalString(filepath.Join(devDir, "hca_type"), &errs)
		fwVersion = d.optionalString(filepath.Join(devDir, "fw_ver"), &errs)
		nodeGUID = d.optionalString(filepath.Join(devDir, "node_guid"), &errs)
		boardID = d.optionalString(filepath.Join(devDir, "board_id"), &errs)
	}

	cp := d.planner(driverOf(devDir, dev))
	cp.virtfn = isVirtfn(devDir)
	softIWARP := d.isSoftIWARP(devDir)
	var ports []*port
	for _, num := range nums {
		if !d.cfg.selects(dev, num) {
			continue
		}
		dir := filepath.Join(devDir, "ports", num)
		p := &port{
			name:      dev + "/" + num,
			device:    dev,
			dir:       dir,
			pciBusID:  pciBusID,
			numaNode:  numa,
			hcaType:   hcaType,
			fwVersion: fwVersion,
			nodeGUID:  nodeGUID,
			boardID:   boardID,
			softIWARP: softIWARP,
		}
		p.linkLayer = d.optionalString(filepath.Join(dir, "link_layer"), &errs)
		// Plan only the attribute files this port has, so that a missing one later means the
		// device went away (and triggers a rediscovery), not a driver that never had it.
		attrs, err := listFiles(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
		present := func(name string) bool { return slices.Contains(attrs, name) }
		if err == nil {
			for _, a := range portAttrs {
				if !present(a) {
					p.missingAttrs = append(p.missingAttrs, a)
				}
			}
		}
		if d.needsNetdev() {
			var nerr error
			p.netdev, nerr = d.resolveNetdev(devDir, dir, num, p.linkLayer)
			if nerr != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.name, nerr))
			}
		}
		for i := range portGauges {
			if g := &portGauges[i]; g.enabled(d.metrics) && present(g.file) {
				p.gauges = append(p.gauges, gaugeFile{def: g, path: filepath.Join(dir, g.file)})
			}
		}
		p.counterDirs = dirExists(filepath.Join(dir, "counters")) || dirExists(filepath.Join(dir, "hw_counters"))
		var absent *notProvided
		p.counters, absent, err = cp.planPort(dir, p.name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
		if absent != nil {
			p.notProvided = append(p.notProvided, *absent)
		}
		if len(ports) == 0 {
			// mlx5 in switchdev mode keeps the congestion, ICRC and plain Q counters in the
			// device's own hw_counters/ (mlx5 counters.c alloc_hw_device_stats); they are the
			// device's, not a port's, and carry the device name.
			devHW := filepath.Join(devDir, "hw_counters")
			names, err := listFiles(devHW)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", dev, err))
			}
			p.counters = append(p.counters, cp.planHW(nil, devHW, dev, names, nil)...)
		}
		ports = append(ports, p)
	}
	return ports, errors.Join(errs...)
}

// portAttrs are the port attributes core sysfs.c (port_default_attrs) creates for every port.
var portAttrs = []string{"link_layer", "state", "phys_state", "rate"}

// driverOf names the kernel driver of the RDMA device's PCI function (the `driver` link of the
// function: bnxt_en, ice, mlx5_core), or, without one, the device name's stem (bnxt_re0 ->
// bnxt_re).
func driverOf(devDir, dev string) string {
	if target, err := os.Readlink(filepath.Join(devDir, "device", "driver")); err == nil {
		return filepath.Base(target)
	}
	return strings.TrimRight(dev, "0123456789")
}

// isSoftIWARP reports whether the device is a siw (soft iWARP) device: siw_device_create
// (drivers/infiniband/sw/siw/siw_main.c) registers an RDMA_NODE_RNIC device ("4: RNIC" in
// node_type, core sysfs.c node_type_show) and, in the kernels that parent it to the netdev's PCI
// function (parent = netdev->dev.parent, later removed), its `device` link leads to that NIC. Its
// name is the user's (rdma link add <name> type siw), so the module being loaded and the node type
// are what tell it apart from an iWARP NIC (which has hw_counters).
func (d *discovery) isSoftIWARP(devDir string) bool {
	if _, err := os.Stat(filepath.Join(d.sys, "module", "siw")); err != nil {
		return false
	}
	nt, err := d.reader.ReadString(filepath.Join(devDir, "node_type"))
	return err == nil && strings.HasPrefix(nt, "4:")
}

// isVirtfn reports whether the RDMA device's PCI function is an SR-IOV virtual function: the PCI
// core links a VF to its PF as `physfn` (drivers/pci/iov.c pci_iov_sysfs_link).
func isVirtfn(devDir string) bool {
	_, err := os.Lstat(filepath.Join(devDir, "device", "physfn"))
	return err == nil
}

func (d *discovery) needsNetdev() bool {
	return d.metrics.InterconnectIo.Enabled || d.metrics.RnicPortInfo.Enabled || d.cfg.Ethtool.Enabled
}

// optionalString reads an attribute a driver may leave out: a missing file is "" and no error; a
// file that is there but cannot be read (not a regular file, a failed read) is "" with its error
// added to errs, which the scraper reports once (its discovery error, errtrack).
func (d *discovery) optionalString(path string, errs *[]error) string {
	s, err := d.reader.ReadString(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			*errs = append(*errs, err)
		}
		return ""
	}
	return s
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// listFiles returns the regular files of dir, or nil when it does not exist (rxe has no counters/,
// bnxt_re none either, most ports no counters_ext/). A directory that exists but cannot be read,
// and an entry that is a named pipe, socket or device node where sysfs has only regular files,
// are returned as an error naming them: what it costs is then said, not silently dropped.
func listFiles(dir string) ([]string, error) {
	entries, err := sysfs.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list %s: %w", dir, err)
	}
	names := make([]string, 0, len(entries))
	var errs []error
	for _, e := range entries {
		switch {
		case e.Type().IsRegular():
			names = append(names, e.Name())
		case e.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
			errs = append(errs, fmt.Errorf("%s: %w, not read", filepath.Join(dir, e.Name()), sysfs.ErrNotRegular))
		}
	}
	sort.Strings(names)
	return names, errors.Join(errs...)
}

// resolveNetdev finds the network device that carries the port's IP traffic. Names read from file
// contents (gid_attrs/ndevs/*, parent) must be kernel netdev names (validNetdevName), so that
// the path built from them stays inside root_path's class/net; one that is not is skipped and
// returned as an error naming the file.
func (d *discovery) resolveNetdev(devDir, portDir, portNum, linkLayer string) (string, error) {
	var errs []error
	named := func(path string) (string, bool) {
		name, err := d.reader.ReadString(path)
		if err != nil || name == "" {
			return "", false
		}
		if !validNetdevName(name) {
			errs = append(errs, &sysfs.ValueError{Path: path, Value: name, Err: errNotNetdevName})
			return "", false
		}
		return name, true
	}
	// 1. RoCE: the netdev of the port's GID table (gid_attrs/ndevs/<index>). This is what the RDMA
	// stack itself uses and it names the bond of a RoCE LAG (ibdev2netdev reads ndevs/0). Empty
	// GID entries fail with EINVAL (core sysfs.c _show_port_gid_attr), so try the entries in order.
	if strings.EqualFold(linkLayer, "Ethernet") {
		ndevs := filepath.Join(portDir, "gid_attrs", "ndevs")
		entries, _ := sysfs.ReadDir(ndevs)
		idx := make([]int, 0, len(entries))
		for _, e := range entries {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				idx = append(idx, n)
			}
		}
		sort.Ints(idx)
		for _, i := range idx {
			if name, ok := named(filepath.Join(ndevs, strconv.Itoa(i))); ok {
				return name, errors.Join(errs...)
			}
		}
	}
	// 2. The netdevs of the same PCI function (Ethernet, or IPoIB on an InfiniBand port). With more
	// than one (mlx4 drives both ports from one function), dev_port (0-based) names the port
	// (Documentation/ABI/testing/sysfs-class-net).
	netDir := filepath.Join(devDir, "device", "net")
	if entries, err := sysfs.ReadDir(netDir); err == nil && len(entries) > 0 {
		if len(entries) == 1 {
			return entries[0].Name(), errors.Join(errs...)
		}
		want, _ := strconv.Atoi(portNum)
		for _, e := range entries {
			if dp, err := d.reader.ReadInt(filepath.Join(netDir, e.Name(), "dev_port")); err == nil && dp == int64(want-1) {
				return e.Name(), errors.Join(errs...)
			}
		}
		return entries[0].Name(), errors.Join(errs...)
	}
	// 3. Soft-RoCE names its netdev in the `parent` attribute (rxe_verbs.c parent_show).
	if name, ok := named(filepath.Join(devDir, "parent")); ok {
		return name, errors.Join(errs...)
	}
	return "", errors.Join(errs...)
}

var errNotNetdevName = errors.New("not a network device name")

// validNetdevName is the kernel's dev_valid_name (net/core/dev.c): not empty, shorter than
// IFNAMSIZ (16), not "." or "..", and without '/', ':' or white space.
func validNetdevName(name string) bool {
	if name == "" || len(name) >= 16 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '/', ':', ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return false
		}
	}
	return true
}

// netdevsOf returns the distinct netdevs of the ports, each once even when a bond serves several.
func (d *discovery) netdevsOf(ports []*port) []*netdev {
	if !d.metrics.InterconnectIo.Enabled && !d.cfg.Ethtool.Enabled {
		return nil
	}
	seen := map[string]bool{}
	var out []*netdev
	for _, p := range ports {
		if p.netdev == "" || seen[p.netdev] {
			continue
		}
		seen[p.netdev] = true
		stats := filepath.Join(d.sys, "class", "net", p.netdev, "statistics")
		if _, err := os.Stat(stats); err != nil {
			// Not in this network namespace or not in this sysfs: nothing to read.
			continue
		}
		nd := &netdev{
			name:     p.netdev,
			pciBusID: p.pciBusID,
			numaNode: p.numaNode,
			txBytes:  filepath.Join(stats, "tx_bytes"),
			rxBytes:  filepath.Join(stats, "rx_bytes"),
		}
		for _, name := range d.lowerDevices(p.netdev, 0) {
			nd.ethtool = append(nd.ethtool, &ethtoolTarget{name: name})
		}
		out = append(out, nd)
	}
	return out
}

// lowerDevices returns the physical netdevs under name: the slaves of a bond (bonding/slaves),
// the lower_<dev> devices of another stacked device (a VLAN), or name itself. Neither the bonding
// driver nor VLANs have ethtool statistics (drivers/net/bonding/bond_main.c bond_ethtool_ops has
// no get_sset_count or get_ethtool_stats), so a RoCE LAG's PFC and pause counters are on its
// members (Documentation/networking/bonding.rst; net/core/dev.c netdev_adjacent_sysfs_add).
func (d *discovery) lowerDevices(name string, depth int) []string {
	dir := filepath.Join(d.sys, "class", "net", name)
	var lower []string
	if s, err := d.reader.ReadString(filepath.Join(dir, "bonding", "slaves")); err == nil {
		for _, l := range strings.Fields(s) {
			if validNetdevName(l) { // read from a file's content: it must stay a name
				lower = append(lower, l)
			}
		}
	} else if entries, err := sysfs.ReadDir(dir); err == nil {
		for _, e := range entries {
			if l, ok := strings.CutPrefix(e.Name(), "lower_"); ok {
				lower = append(lower, l)
			}
		}
	}
	if len(lower) == 0 || depth >= 3 {
		return []string{name}
	}
	var out []string
	for _, l := range lower {
		out = append(out, d.lowerDevices(l, depth+1)...)
	}
	return out
}
