package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
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

	// Files of the enabled gauges; empty when the metric is disabled.
	statePath     string
	physStatePath string
	ratePath      string

	counters []counterFile

	// counterDirs: the port has a counters/ or hw_counters/ directory.
	counterDirs bool

	// plane marks a port of a plane device of a multi-plane HCA: an SMI device on the same PCI
	// function as the device that carries the traffic (smiDevice).
	plane bool
}

// netdev is a network device behind one or more RDMA ports (a RoCE bond serves several).
type netdev struct {
	name     string
	pciBusID string
	numaNode int64
	txBytes  string // <sys>/class/net/<name>/statistics/tx_bytes
	rxBytes  string
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
	slices.SortFunc(names, naturalCompare)
	return names, err
}

// naturalCompare orders names with their digit runs compared as numbers: mlx5_2 before mlx5_10,
// as the DGX H100 compute NICs mlx5_0,3,4,5,6,9,10,11 (DGX H100 User Guide, "Network Modules")
// are meant to be read. Device order decides which of equally near NICs is a GPU's nearest.
func naturalCompare(a, b string) int {
	if c := naturalOrder(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b) // mlx5_02 and mlx5_2: a total order all the same
}

func naturalOrder(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// discover builds the ports of the given devices. A device that cannot be read costs only itself;
// its error is returned alongside the ports that could be resolved.
func (d *discovery) discover(devices []string) ([]*port, []*netdev, []error) {
	var (
		ports []*port
		errs  []error
	)
	for _, dev := range devices {
		if !d.anyPortSelected(dev) {
			continue
		}
		ps, err := d.discoverDevice(dev)
		if err != nil {
			errs = append(errs, err)
		}
		ports = append(ports, ps...)
	}
	markPlanes(ports)
	return ports, d.netdevsOf(ports), errs
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
	entries, err := os.ReadDir(filepath.Join(d.classDir(), dev, "ports"))
	if err != nil {
		return nil
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
	return out
}

func (d *discovery) discoverDevice(dev string) ([]*port, error) {
	devDir := filepath.Join(d.classDir(), dev)
	nums := d.portNumbers(dev)
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
		hcaType = d.optionalString(filepath.Join(devDir, "hca_type"))
		fwVersion = d.optionalString(filepath.Join(devDir, "fw_ver"))
		nodeGUID = d.optionalString(filepath.Join(devDir, "node_guid"))
		boardID = d.optionalString(filepath.Join(devDir, "board_id"))
	}

	cp := d.planner(driverOf(devDir, dev))
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
		}
		p.linkLayer = d.optionalString(filepath.Join(dir, "link_layer"))
		// Plan only the attribute files this port has, so that a missing one later means the
		// device went away (and triggers a rediscovery), not a driver that never had it.
		attrs := listFiles(dir)
		present := func(name string) bool { return slices.Contains(attrs, name) }
		if d.needsNetdev() {
			p.netdev = d.resolveNetdev(devDir, dir, num, p.linkLayer)
		}
		if d.metrics.RnicPortState.Enabled && present("state") {
			p.statePath = filepath.Join(dir, "state")
		}
		if d.metrics.RnicPortPhysicalState.Enabled && present("phys_state") {
			p.physStatePath = filepath.Join(dir, "phys_state")
		}
		if (d.metrics.RnicPortRate.Enabled || d.metrics.RnicPortWidth.Enabled) && present("rate") {
			p.ratePath = filepath.Join(dir, "rate")
		}
		p.counterDirs = dirExists(filepath.Join(dir, "counters")) || dirExists(filepath.Join(dir, "hw_counters"))
		var err error
		p.counters, err = cp.planPort(dir, p.name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
		if len(ports) == 0 {
			// mlx5 in switchdev mode keeps the congestion, ICRC and plain Q counters in the
			// device's own hw_counters/ (mlx5 counters.c alloc_hw_device_stats); they are the
			// device's, not a port's, and carry the device name.
			devHW := filepath.Join(devDir, "hw_counters")
			p.counters = append(p.counters, cp.planHW(nil, devHW, dev, listFiles(devHW), nil)...)
		}
		ports = append(ports, p)
	}
	return ports, errors.Join(errs...)
}

// driverOf names the kernel driver of the RDMA device's PCI function (the `driver` link of the
// function: bnxt_en, ice, mlx5_core), or, without one, the device name's stem (bnxt_re0 ->
// bnxt_re).
func driverOf(devDir, dev string) string {
	if target, err := os.Readlink(filepath.Join(devDir, "device", "driver")); err == nil {
		return filepath.Base(target)
	}
	return strings.TrimRight(dev, "0123456789")
}

func (d *discovery) needsNetdev() bool {
	return d.metrics.InterconnectIo.Enabled || d.metrics.RnicPortInfo.Enabled || d.cfg.Ethtool.Enabled
}

func (d *discovery) optionalString(path string) string {
	s, err := d.reader.ReadString(path)
	if err != nil {
		return ""
	}
	return s
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// listFiles returns the regular files of dir, or nil when it does not exist (rxe has no counters/,
// bnxt_re none either, most ports no counters_ext/).
func listFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// counterPlanner decides which counter files a scrape of a port reads: only those that exist,
// can be read, and feed an enabled metric.
type counterPlanner struct {
	d       *discovery
	enabled map[metricKind]bool
	driver  bool // rnic.driver.counter is on
	wraps   bool // the driver's PMA error counters wrap (pmaWraps)
}

func (d *discovery) planner(driverName string) *counterPlanner {
	m := d.metrics
	return &counterPlanner{
		d: d,
		enabled: map[metricKind]bool{
			kindBytes:          m.InterconnectIo.Enabled,
			kindPackets:        m.RnicPackets.Enabled,
			kindPortError:      m.RnicPortErrors.Enabled,
			kindXmitWait:       m.RnicPortXmitWait.Enabled,
			kindCNP:            m.RnicRoceCnp.Enabled,
			kindECN:            m.RnicRoceEcnMarked.Enabled,
			kindTransportEvent: m.RnicTransportEvents.Enabled,
			kindTransportError: m.RnicTransportErrors.Enabled,
		},
		driver: m.RnicDriverCounter.Enabled,
		wraps:  pmaWraps(driverName),
	}
}

func has(names []string, n string) bool {
	i := sort.SearchStrings(names, n)
	return i < len(names) && names[i] == n
}

// add appends the file to the plan when it feeds an enabled metric or rnic.driver.counter.
func (cp *counterPlanner) add(plan []counterFile, dir, owner, name string, def counterDef, known bool,
	source metadata.AttributeCounterSource, scale uint64, spec counter.Spec, label string) []counterFile {
	cf := counterFile{
		path:      filepath.Join(dir, name),
		key:       filepath.Join(dir, name),
		name:      name,
		label:     label,
		owner:     owner,
		direction: def.direction,
		spec:      spec,
		scale:     scale,
	}
	if known && cp.enabled[def.kind] {
		cf.kind = def.kind
	}
	if cp.driver {
		cf.driver, cf.source = true, source
	}
	if cf.kind != kindNone || cf.driver {
		cf.slow = slowKind(cf.kind)
		plan = append(plan, cf)
	}
	return plan
}

// pmaReadable reports whether the port's PMA data counters can be read. Broadcom's bnxt_re (out of
// tree, and upstream before its 2025 PMA support) has a counters/ directory whose every read fails
// with EINVAL: core sysfs.c show_pma_counter returns the get_perf_mad error (prometheus/procfs PR
// #675 shows `port_rcv_data: Invalid argument` next to hw_counters/rx_bytes); old kernels print
// "N/A (no PMA)" instead. Either way the bytes are then taken from hw_counters.
func (cp *counterPlanner) pmaReadable(dir string, pma []string) error {
	var errs []error
	for _, name := range []string{"port_xmit_data", "port_rcv_data"} {
		if !has(pma, name) {
			continue
		}
		if _, err := cp.d.reader.ReadUint(filepath.Join(dir, "counters", name)); err != nil {
			errs = append(errs, err)
		} else {
			return nil
		}
	}
	if len(errs) == 0 {
		return errNoPMAData
	}
	return fmt.Errorf("PMA counters unreadable, bytes and packets taken from hw_counters: %w", errors.Join(errs...))
}

var errNoPMAData = errors.New("no PMA data counters")

// planPort plans the counters of one port (dir: its ports/<n> directory). The error says why the
// PMA counters are not used, when they exist but cannot be read.
func (cp *counterPlanner) planPort(dir, owner string) ([]counterFile, error) {
	pma := listFiles(filepath.Join(dir, "counters"))
	ext := listFiles(filepath.Join(dir, "counters_ext"))
	hw := listFiles(filepath.Join(dir, "hw_counters"))

	var pmaErr error
	if len(pma) > 0 {
		if err := cp.pmaReadable(dir, pma); err != nil && !errors.Is(err, errNoPMAData) {
			// The PMA query behind every file fails the same way: read none of them.
			pmaErr, pma = err, nil
		}
	}

	// The extended PMA table is the only one with unicast_xmit_packets; in it the data and packet
	// counters are 64 bits wide. Without them the table is either the basic one (32 bits) or the
	// NOIETF extended one (64 bits, same 17 names): the counter is taken as 32-bit saturating,
	// which only flags the exact value 2^32-1; a larger value is reported as it is.
	dataWidth := uint8(32)
	if has(pma, "unicast_xmit_packets") {
		dataWidth = 64
	}
	// counters_ext/*_64 supersede the narrow basic-table counters where both exist (mlx4).
	legacy64 := has(ext, "port_xmit_data_64")

	var plan []counterFile
	havePMAData := false
	for _, name := range pma {
		def, known := pmaCounters[name]
		width := def.width
		scale := uint64(1)
		wraps := cp.wraps && def.kind == kindPortError
		if def.kind == kindBytes || def.kind == kindPackets {
			width, wraps = dataWidth, false
			if legacy64 {
				known = false // the counters_ext 64-bit copy is read instead
			}
		}
		if def.kind == kindBytes {
			scale = octetsPerDataUnit
			havePMAData = havePMAData || known
		}
		plan = cp.add(plan, filepath.Join(dir, "counters"), owner, name, def, known, metadata.AttributeCounterSourceCounters, scale, specFor(width, wraps), name)
	}
	for _, name := range ext {
		def, known := legacyExtCounters[name]
		scale := uint64(1)
		if def.kind == kindBytes {
			scale = octetsPerDataUnit
			havePMAData = havePMAData || known
		}
		plan = cp.add(plan, filepath.Join(dir, "counters_ext"), owner, name, def, known, metadata.AttributeCounterSourceCountersExt, scale, specFor(64, false), name)
	}
	traffic := map[string]bool{}
	if !havePMAData {
		plan, traffic = cp.planHWTraffic(plan, filepath.Join(dir, "hw_counters"), owner, hw)
	}
	return cp.planHW(plan, filepath.Join(dir, "hw_counters"), owner, hw, traffic), pmaErr
}

// planHWTraffic plans the hw_counters byte and packet counters of a port without PMA data
// (hwTrafficSources) and returns the single files it planned, which planHW then leaves out.
func (cp *counterPlanner) planHWTraffic(plan []counterFile, dir, owner string, hw []string) ([]counterFile, map[string]bool) {
	used := map[string]bool{}
	for _, src := range hwTrafficSources {
		for _, alt := range src.files {
			var present []string
			for _, f := range alt {
				if has(hw, f) {
					present = append(present, f)
				}
			}
			if len(present) == 0 {
				continue
			}
			if !cp.enabled[src.kind] {
				break
			}
			if len(present) == 1 {
				used[present[0]] = true
			}
			cf := counterFile{
				path: filepath.Join(dir, present[0]), name: present[0], label: present[0], owner: owner,
				kind: src.kind, direction: src.direction, spec: specFor(64, false), scale: 1,
			}
			cf.key = cf.path
			for _, f := range present[1:] {
				cf.sum = append(cf.sum, filepath.Join(dir, f))
				cf.key += "+" + f
			}
			if len(present) == 1 && cp.driver {
				// A single file also feeds rnic.driver.counter; the files of a sum do so one by
				// one (planHW).
				cf.driver, cf.source = true, metadata.AttributeCounterSourceHwCounters
			}
			plan = append(plan, cf)
			break
		}
	}
	return plan, used
}

// planHW plans a hw_counters directory (a port's, or a switchdev device's), skipping the traffic
// files already planned. mlx5CacheRefresh comes first.
func (cp *counterPlanner) planHW(plan []counterFile, dir, owner string, hw []string, traffic map[string]bool) []counterFile {
	var rest []counterFile
	for _, name := range hw {
		if name == "lifespan" || traffic[name] {
			continue // lifespan: the cache period in ms, not a counter
		}
		// The files of a sum reach planHW too: as driver counters only.
		def, label, known := hwCounterDef(name)
		rest = cp.add(rest, dir, owner, name, def, known, metadata.AttributeCounterSourceHwCounters, 1, specFor(64, false), label)
	}
	if len(rest) > 0 && has(hw, mlx5CacheRefresh) {
		i := slices.IndexFunc(rest, func(cf counterFile) bool { return cf.name == mlx5CacheRefresh })
		var first counterFile
		if i >= 0 {
			first = rest[i]
			rest = slices.Delete(rest, i, i+1)
		} else {
			first = counterFile{path: filepath.Join(dir, mlx5CacheRefresh), name: mlx5CacheRefresh, label: mlx5CacheRefresh,
				key: filepath.Join(dir, mlx5CacheRefresh), owner: owner, spec: specFor(64, false), scale: 1, primer: true, slow: true}
		}
		// Read on every scrape that reads any other file of the directory.
		for _, cf := range rest {
			first.slow = first.slow && cf.slow
		}
		rest = append([]counterFile{first}, rest...)
	}
	return append(plan, rest...)
}

// resolveNetdev finds the network device that carries the port's IP traffic.
func (d *discovery) resolveNetdev(devDir, portDir, portNum, linkLayer string) string {
	// 1. RoCE: the netdev of the port's GID table (gid_attrs/ndevs/<index>). This is what the RDMA
	// stack itself uses and it names the bond of a RoCE LAG (ibdev2netdev reads ndevs/0). Empty
	// GID entries fail with EINVAL (core sysfs.c _show_port_gid_attr), so try the entries in order.
	if strings.EqualFold(linkLayer, "Ethernet") {
		ndevs := filepath.Join(portDir, "gid_attrs", "ndevs")
		entries, _ := os.ReadDir(ndevs)
		idx := make([]int, 0, len(entries))
		for _, e := range entries {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				idx = append(idx, n)
			}
		}
		sort.Ints(idx)
		for _, i := range idx {
			if name, err := d.reader.ReadString(filepath.Join(ndevs, strconv.Itoa(i))); err == nil && name != "" {
				return name
			}
		}
	}
	// 2. The netdevs of the same PCI function (Ethernet, or IPoIB on an InfiniBand port). With more
	// than one (mlx4 drives both ports from one function), dev_port (0-based) names the port
	// (Documentation/ABI/testing/sysfs-class-net).
	netDir := filepath.Join(devDir, "device", "net")
	if entries, err := os.ReadDir(netDir); err == nil && len(entries) > 0 {
		if len(entries) == 1 {
			return entries[0].Name()
		}
		want, _ := strconv.Atoi(portNum)
		for _, e := range entries {
			if dp, err := d.reader.ReadInt(filepath.Join(netDir, e.Name(), "dev_port")); err == nil && dp == int64(want-1) {
				return e.Name()
			}
		}
		return entries[0].Name()
	}
	// 3. Soft-RoCE names its netdev in the `parent` attribute (rxe_verbs.c parent_show).
	if name, err := d.reader.ReadString(filepath.Join(devDir, "parent")); err == nil {
		return name
	}
	return ""
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
		lower = strings.Fields(s)
	} else if entries, err := os.ReadDir(dir); err == nil {
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
