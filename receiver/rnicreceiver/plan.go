package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// counterPlanner decides which counter files a scrape of a port reads: only those that exist,
// can be read, and feed an enabled metric.
type counterPlanner struct {
	d       *discovery
	enabled map[metricKind]bool
	driver  bool // rnic.driver.counter is on
	wraps   bool // the driver's PMA error counters wrap (pmaWraps)
	// refreshFirst: mlx5, whose counter cache only a read of mlx5CacheRefresh renews.
	refreshFirst bool
	// virtfn: the RDMA device is on an SR-IOV virtual function (its PCI function has the physfn
	// link, drivers/pci/iov.c pci_iov_sysfs_link).
	virtfn bool
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
			kindOperationBytes: m.RnicOperationIo.Enabled,
		},
		driver: m.RnicDriverCounter.Enabled,
		wraps:  pmaWraps(driverName),
		// mlx5_core, or the mlx5_* device names where the function has no driver link.
		refreshFirst: strings.HasPrefix(driverName, "mlx5"),
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
		operation: def.operation,
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
	provided := false
	for _, name := range []string{"port_xmit_data", "port_rcv_data"} {
		if !has(pma, name) {
			continue
		}
		_, err := cp.d.reader.ReadUint(filepath.Join(dir, "counters", name))
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		provided = provided || !errors.Is(err, sysfs.ErrNotAvailable)
	}
	if len(errs) == 0 {
		return errNoPMAData
	}
	if !provided {
		errs = append(errs, errPMANotProvided)
	}
	return fmt.Errorf("PMA counters unreadable, bytes and packets taken from hw_counters: %w", errors.Join(errs...))
}

var (
	errNoPMAData      = errors.New("no PMA data counters")
	errPMANotProvided = errors.New("the hardware does not provide them")
)

// planPort plans the counters of one port (dir: its ports/<n> directory). When the PMA counters
// exist but cannot be read, absent says so where the hardware does not provide them
// (sysfs.ErrNotAvailable: "N/A (no PMA)", EINVAL), and the error where they failed otherwise.
func (cp *counterPlanner) planPort(dir, owner string) (_ []counterFile, absent *notProvided, _ error) {
	pma, err1 := listFiles(filepath.Join(dir, "counters"))
	ext, err2 := listFiles(filepath.Join(dir, "counters_ext"))
	hw, err3 := listFiles(filepath.Join(dir, "hw_counters"))
	listErr := errors.Join(err1, err2, err3)

	var pmaErr error
	if len(pma) > 0 {
		if err := cp.pmaReadable(dir, pma); err != nil && !errors.Is(err, errNoPMAData) {
			// The PMA query behind every file fails the same way: read none of them.
			pma = nil
			if errors.Is(err, errPMANotProvided) {
				absent = &notProvided{path: filepath.Join(dir, "counters"), err: err}
			} else {
				pmaErr = err
			}
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
	// counters_ext/*_64 (mlx4) supersede the narrow basic-table counters where both exist. The
	// extended table is already 64 bits wide and wins: node_exporter's mlx4_0 fixture has
	// counters/port_rcv_packets 6825908347 next to counters_ext/port_rcv_packets_64 0.
	legacy64 := has(ext, "port_xmit_data_64") && dataWidth == 32

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
		if known && !legacy64 && has(pma, strings.TrimSuffix(name, "_64")) {
			known = false // the extended table's copy is read instead
		}
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
	return cp.planHW(plan, filepath.Join(dir, "hw_counters"), owner, hw, traffic), absent, errors.Join(listErr, pmaErr)
}

// planHWTraffic plans the hw_counters byte and packet counters of a port without PMA data
// (hwTrafficSources) and returns the single files it planned, which planHW then leaves out.
func (cp *counterPlanner) planHWTraffic(plan []counterFile, dir, owner string, hw []string) ([]counterFile, map[string]bool) {
	used := map[string]bool{}
	extFilled := cp.extFilled(dir, hw)
	for _, src := range hwTrafficSources {
		for _, alt := range src.files {
			if bnxtExtStats[alt[0]] && !extFilled {
				continue
			}
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

// extFilled reports whether bnxt_re fills its extended RoCE counters (bnxtExtStats) on this
// port: bnxt_re_ib_get_hw_stats (drivers/infiniband/hw/bnxt_re/hw_counters.c) calls
// bnxt_re_get_ext_stat only `if (_is_ext_stats_supported(rdev->dev_attr->dev_cap_flags) &&
// !rdev->is_virtfn)`. A VF never fills them. On a PF the capability is not in sysfs, so the
// files are read once: both RoCE byte counters at 0 while the function's byte counters are not
// is a driver that does not fill them (the RoCE bytes are part of the function context's).
func (cp *counterPlanner) extFilled(dir string, hw []string) bool {
	if !has(hw, "tx_roce_only_bytes") {
		return true // nothing to decide
	}
	if cp.virtfn {
		return false
	}
	read := func(name string) uint64 {
		if !has(hw, name) {
			return 0
		}
		v, _ := cp.d.reader.ReadUint(filepath.Join(dir, name))
		return v
	}
	roce := read("tx_roce_only_bytes") + read("rx_roce_only_bytes")
	plain := read("tx_bytes") + read("rx_bytes")
	return roce > 0 || plain == 0
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
	// A switchdev representor port's table starts with the vport_ copy of the same counter.
	refresh := mlx5CacheRefresh
	if !has(hw, refresh) {
		refresh = vportPrefix + mlx5CacheRefresh
	}
	if cp.refreshFirst && len(rest) > 0 && has(hw, refresh) {
		i := slices.IndexFunc(rest, func(cf counterFile) bool { return cf.name == refresh })
		var first counterFile
		if i >= 0 {
			first = rest[i]
			rest = slices.Delete(rest, i, i+1)
		} else {
			first = counterFile{path: filepath.Join(dir, refresh), name: refresh, label: refresh,
				key: filepath.Join(dir, refresh), owner: owner, spec: specFor(64, false), scale: 1, primer: true, slow: true}
		}
		// Read on every scrape that reads any other file of the directory.
		for _, cf := range rest {
			first.slow = first.slow && cf.slow
		}
		rest = append([]counterFile{first}, rest...)
	}
	return append(plan, rest...)
}
