package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

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
}

// netdev is a network device behind one or more RDMA ports (a RoCE bond serves several).
type netdev struct {
	name     string
	pciBusID string
	numaNode int64
	txBytes  string // <sys>/class/net/<name>/statistics/tx_bytes
	rxBytes  string
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
	return sysfs.ListDir(d.classDir())
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
	return ports, d.netdevsOf(ports), errs
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
		p.counters = d.planCounters(dir)
		ports = append(ports, p)
	}
	return ports, errors.Join(errs...)
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

// planCounters decides which counter files a scrape of the port reads: only those that exist and
// feed an enabled metric.
func (d *discovery) planCounters(dir string) []counterFile {
	m := d.metrics
	enabled := map[metricKind]bool{
		kindBytes:          m.InterconnectIo.Enabled,
		kindPackets:        m.RnicPackets.Enabled,
		kindPortError:      m.RnicPortErrors.Enabled,
		kindXmitWait:       m.RnicPortXmitWait.Enabled,
		kindCNP:            m.RnicRoceCnp.Enabled,
		kindECN:            m.RnicRoceEcnMarked.Enabled,
		kindTransportEvent: m.RnicTransportEvents.Enabled,
		kindTransportError: m.RnicTransportErrors.Enabled,
	}
	driver := m.RnicDriverCounter.Enabled

	pma := listFiles(filepath.Join(dir, "counters"))
	ext := listFiles(filepath.Join(dir, "counters_ext"))
	hw := listFiles(filepath.Join(dir, "hw_counters"))

	has := func(names []string, n string) bool {
		i := sort.SearchStrings(names, n)
		return i < len(names) && names[i] == n
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
	add := func(dirName, name string, def counterDef, known bool, source metadata.AttributeCounterSource, scale uint64, width uint8) {
		cf := counterFile{
			path:      filepath.Join(dir, dirName, name),
			name:      name,
			direction: def.direction,
			spec:      specFor(width),
			scale:     scale,
		}
		if known && enabled[def.kind] {
			cf.kind = def.kind
		}
		if driver {
			cf.driver, cf.source = true, source
		}
		if cf.kind != kindNone || cf.driver {
			cf.slow = slowKind(cf.kind)
			plan = append(plan, cf)
		}
	}

	havePMAData := false
	for _, name := range pma {
		def, known := pmaCounters[name]
		width := def.width
		scale := uint64(1)
		if def.kind == kindBytes || def.kind == kindPackets {
			width = dataWidth
			if legacy64 {
				known = false // the counters_ext 64-bit copy is read instead
			}
		}
		if def.kind == kindBytes {
			scale = octetsPerDataUnit
			havePMAData = havePMAData || known
		}
		add("counters", name, def, known, metadata.AttributeCounterSourceCounters, scale, width)
	}
	for _, name := range ext {
		def, known := legacyExtCounters[name]
		scale := uint64(1)
		if def.kind == kindBytes {
			scale = octetsPerDataUnit
			havePMAData = havePMAData || known
		}
		add("counters_ext", name, def, known, metadata.AttributeCounterSourceCountersExt, scale, 64)
	}
	for _, name := range hw {
		if name == "lifespan" {
			continue // the cache period in ms, not a counter
		}
		def, known := hwCounters[name]
		if !known && !havePMAData {
			def, known = hwTrafficCounters[name]
		}
		add("hw_counters", name, def, known, metadata.AttributeCounterSourceHwCounters, 1, 64)
	}
	return plan
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
		out = append(out, &netdev{
			name:     p.netdev,
			pciBusID: p.pciBusID,
			numaNode: p.numaNode,
			txBytes:  filepath.Join(stats, "tx_bytes"),
			rxBytes:  filepath.Join(stats, "rx_bytes"),
		})
	}
	return out
}
