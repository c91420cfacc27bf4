package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// Discovery turns what sysfs shows (PMUs, their cpumask, formats and event aliases, the IIO
// stack to root bus mapping and the PCI tree) and the CPU's event table into a plan: the counter
// groups to open, which series each counter adds to, and the devices behind each root port. It
// runs at start and again when something was missing or failed, never on every scrape.

// seriesKey identifies one interconnect.io series.
type seriesKey struct {
	// combined marks a cpuuncore.memory.io series (reads and writes together).
	combined  bool
	component metadata.AttributeComponent
	direction metadata.AttributeDirection
	device    string
	busID     string
	numa      int64
}

// aggregate is one interconnect.io series: the bytes of every counter that adds to it (the
// IMCs of a socket, the ports of a stack, both GNR subchannels), accumulated from their deltas so
// that reopening one counter never makes the series go backwards.
type aggregate struct {
	key   seriesKey
	bytes uint64
	frac  float64
	// failedAt is the scrape in which one of its counters could not be read; the series is not
	// reported in that scrape rather than reported short.
	failedAt uint64
}

func (a *aggregate) add(counts uint64, bytesPerCount float64) {
	if bytesPerCount == math.Trunc(bytesPerCount) && bytesPerCount < 1<<20 {
		a.bytes += counts * uint64(bytesPerCount)
		return
	}
	f := float64(counts)*bytesPerCount + a.frac
	whole := math.Floor(f)
	a.bytes += uint64(whole)
	a.frac = f - whole
}

// member is one counter of a group.
type member struct {
	event     string
	direction metadata.AttributeDirection
	// port is the IIO part the counter belongs to, -1 for none.
	port   int
	attr   perf.Attr
	bpc    float64
	source metadata.AttributeScaleSource
	agg    *aggregate
	// last is the (scaled) count at the previous read of this counter since it was opened.
	last uint64
}

// counterGroup is the events of one PMU instance opened together on one CPU.
type counterGroup struct {
	pmu     string
	cpu     int
	members []*member
	attrs   []perf.Attr
	handle  perf.Group // nil while not open
	// key names the group in errors ("uncore_imc_0 on CPU 28").
	key     string
	reading perf.Reading
	// wrapWindow is how long the hardware counters take to wrap at line rate; reads further
	// apart than that may lose whole wraps (0: not a concern).
	wrapWindow  time.Duration
	counterBits uint
	reopenAfter uint64
	lastRead    time.Time
}

// signature identifies a group across discoveries, so that an open group is kept.
func (g *counterGroup) signature() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%d", g.pmu, g.cpu)
	for _, a := range g.attrs {
		b.WriteString("|" + a.String())
	}
	return b.String()
}

func newGroup(pmu string, cpu int) *counterGroup {
	return &counterGroup{pmu: pmu, cpu: cpu, key: fmt.Sprintf("%s on CPU %d", pmu, cpu)}
}

func (g *counterGroup) add(m *member) {
	g.members = append(g.members, m)
	g.attrs = append(g.attrs, m.attr)
}

// attachedDevice is a PCI function behind a root port whose traffic a cpu_pcie series carries.
type attachedDevice struct {
	device, rootPort, busID string
	numa                    int64
}

// scaleFact is the bytes-per-count used for one event of one PMU.
type scaleFact struct {
	pmu, event string
	bpc        float64
	source     metadata.AttributeScaleSource
}

// plan is the outcome of one discovery.
type plan struct {
	groups  []*counterGroup
	aggs    []*aggregate
	devices []attachedDevice
	scales  []scaleFact
	// mbm are the resctrl fallback counters (resctrl.go), used only without memory PMUs.
	mbm []mbmSource
	// memoryPMUs and pciePMUs count the PMU instances in use, for the log.
	memoryPMUs, pciePMUs int
}

// discovery holds what one discovery run needs and what it found out.
type discovery struct {
	cfg   *Config
	r     *sysfs.Reader
	paths hostPaths
	plat  platform
	// aggs are the series known before this run, reused so that their totals continue.
	aggs map[seriesKey]*aggregate
	plan *plan
	// notes are facts worth one log line each (a kernel bug corrected, a raw encoding used).
	notes []string
	errs  []error
	// places caches cpu -> socket/NUMA for this run.
	places map[int]cpuPlace
	// nodesPerSocket counts the NUMA nodes with CPUs of each socket (nil until asked).
	nodesPerSocket map[int]int
	// created are the series this run added.
	created []*aggregate
}

func (d *discovery) note(format string, args ...any) {
	d.notes = append(d.notes, fmt.Sprintf(format, args...))
}

// run builds the plan from the PMUs present.
func (d *discovery) run() {
	d.plan = &plan{}
	d.places = map[int]cpuPlace{}
	names, err := perf.ListPMUs(d.paths.pmus)
	if err != nil {
		d.errs = append(d.errs, err)
		return
	}
	if d.cfg.Memory.Enabled {
		d.memory(names)
	}
	if d.cfg.PCIe.Enabled {
		d.pcie(names)
	}
	seen := map[*aggregate]bool{}
	for _, g := range d.plan.groups {
		for _, m := range g.members {
			if !seen[m.agg] {
				seen[m.agg] = true
				d.plan.aggs = append(d.plan.aggs, m.agg)
			}
		}
	}
	sort.Slice(d.plan.aggs, func(i, j int) bool { return lessKey(d.plan.aggs[i].key, d.plan.aggs[j].key) })
}

func lessKey(a, b seriesKey) bool {
	if a.component != b.component {
		return a.component < b.component
	}
	if a.device != b.device {
		return a.device < b.device
	}
	if a.direction != b.direction {
		return a.direction < b.direction
	}
	return a.busID < b.busID
}

// source is a set of events for PMUs whose names match.
type source struct {
	pmu    *regexp.Regexp
	events []eventDef
	// note explains why an alias may be missing or wrong on this CPU.
	note        string
	reopenAfter uint64
	// groupPerPort opens one group per port (programmable IIO events, whose counter
	// constraints allow one event of each kind per group); otherwise one group per box.
	groupPerPort bool
	// groupPerEvent opens every event alone, for the kernel to multiplex (AMD DF).
	groupPerEvent bool
	// combined: the events count memory reads and writes together.
	combined bool
}

// overrides returns the configured events of a domain, by PMU.
func (d *discovery) overrides(domain string) []source {
	var out []source
	byPMU := map[string]int{}
	for _, e := range d.cfg.Events {
		if e.Domain != domain {
			continue
		}
		i, ok := byPMU[e.PMU]
		if !ok {
			i = len(out)
			byPMU[e.PMU] = i
			out = append(out, source{pmu: regexp.MustCompile("^" + regexp.QuoteMeta(e.PMU) + "(_[0-9]+)?$")})
		}
		def := eventDef{direction: e.Direction, bytesPerCount: e.BytesPerCount, port: -1}
		if strings.Contains(e.Event, "=") {
			def.raw = e.Event
		} else {
			def.alias = e.Event
		}
		out[i].events = append(out[i].events, def)
	}
	return out
}

func (d *discovery) memory(names []string) {
	sources := d.overrides("memory")
	if len(sources) > 0 {
		d.memorySources(names, sources)
		return
	}
	for _, t := range []*memoryTable{d.plat.memory, d.plat.memoryFallback} {
		if t == nil {
			continue
		}
		d.memorySources(names, []source{{pmu: t.pmu, events: t.events, note: t.note, reopenAfter: t.reopenAfter,
			combined: t.combined, groupPerEvent: t.groupPerEvent}})
		if d.plan.memoryPMUs > 0 {
			return
		}
	}
	d.resctrl()
}

func (d *discovery) memorySources(names []string, sources []source) {
	for _, src := range sources {
		for _, name := range names {
			if !src.pmu.MatchString(name) {
				continue
			}
			p, members := d.loadPMU(name, src)
			if p == nil {
				continue
			}
			d.plan.memoryPMUs++
			for die, cpu := range p.CPUs {
				place := d.place(cpu)
				prefix := d.dieName(p, die, place)
				dev := prefix + "/" + deviceBase(name)
				if d.cfg.Memory.Granularity == GranularityController {
					dev += strconv.Itoa(instance(name))
				}
				numa := place.numa
				if d.subNUMA(place.socket) {
					// Sub-NUMA clustering: the socket's controllers belong to several nodes, and
					// which IMC serves which node is not in sysfs; no node rather than a wrong one.
					numa = -1
				}
				var g *counterGroup
				for _, m := range members {
					if g == nil || src.groupPerEvent {
						if g != nil {
							d.plan.groups = append(d.plan.groups, g)
						}
						g = newGroup(name, cpu)
						g.reopenAfter = src.reopenAfter
					}
					m := *m
					key := seriesKey{
						combined:  src.combined,
						component: metadata.AttributeComponentCPUMemory,
						direction: m.direction,
						device:    dev, numa: numa,
					}
					if src.groupPerEvent && d.cfg.Memory.Granularity == GranularityController {
						// A Data Fabric event counts one channel: the controller is the channel.
						key.device = fmt.Sprintf("%s/%s%d", prefix, deviceBase(name), m.port)
					}
					m.agg = d.aggregate(key)
					g.add(&m)
				}
				d.plan.groups = append(d.plan.groups, g)
			}
		}
	}
}

func (d *discovery) pcie(names []string) {
	sources := d.overrides("pcie")
	var iio *iioTable
	if len(sources) == 0 {
		if d.plat.iio == nil {
			return
		}
		iio = d.plat.iio
		useOut := !iio.outOptIn || d.cfg.PCIe.SKXBandwidthOut
		sources = []source{{pmu: iioFree, events: iio.events(useOut)}}
		if iio.programmableTransmit && !(iio.outOptIn && useOut) {
			sources = append(sources, source{pmu: iioBox, groupPerPort: true,
				events: iio.programmableEvents(d.cfg.PCIe.Granularity == GranularityPort)})
		}
	}
	// The root ports of each stack and die are looked up once, whichever source asks first.
	type stackDie struct{ stack, die int }
	stacks := map[stackDie]map[int]portInfo{}
	var order []stackDie
	stackDevs := map[stackDie]string{}

	for _, src := range sources {
		for _, name := range names {
			if !src.pmu.MatchString(name) {
				continue
			}
			p, members := d.loadPMU(name, src)
			if p == nil {
				continue
			}
			d.plan.pciePMUs++
			stack := instance(name)
			var wrap time.Duration
			if iio != nil && iio.counterBits < 64 && src.pmu == iioFree {
				wrap = wrapWindow(iio.counterBits, iio.bytesPerCount)
			}
			mapped := d.mappingAgrees(name, len(p.CPUs))
			for die, cpu := range p.CPUs {
				place := d.place(cpu)
				sd := stackDie{stack, die}
				ports, ok := stacks[sd]
				if !ok {
					ports = map[int]portInfo{}
					stacks[sd] = ports
					order = append(order, sd)
					stackDevs[sd] = fmt.Sprintf("%s/iio%d", d.dieName(p, die, place), stack)
				}
				stackDev := stackDevs[sd]
				rootBus := ""
				if mapped {
					rootBus = d.rootBus(name, die)
				}
				var g *counterGroup
				for i, m := range members {
					if g == nil || (src.groupPerPort && m.port != members[i-1].port) {
						if g != nil {
							d.plan.groups = append(d.plan.groups, g)
						}
						g = newGroup(name, cpu)
						g.wrapWindow = wrap
						if wrap > 0 {
							g.counterBits = iio.counterBits
						}
					}
					m := *m
					key := seriesKey{
						component: metadata.AttributeComponentCPUPcie,
						direction: m.direction,
						device:    stackDev, numa: place.numa,
					}
					if n := m.port; n >= 0 {
						pi, ok := ports[n]
						if !ok {
							pi = d.rootPort(iio, rootBus, stack, n, place.numa)
							ports[n] = pi
						}
						if d.cfg.PCIe.Granularity == GranularityPort {
							key.device = fmt.Sprintf("%s/port%d", stackDev, n)
							key.busID, key.numa = pi.address, pi.numa
						}
					}
					m.agg = d.aggregate(key)
					g.add(&m)
				}
				d.plan.groups = append(d.plan.groups, g)
			}
		}
	}
	for _, sd := range order {
		d.attach(stackDevs[sd], stacks[sd])
	}
	if iio != nil && d.plan.pciePMUs == 0 && slices.ContainsFunc(names, genericIIO.MatchString) {
		d.note("CPU PCIe bytes are not collected: this kernel knows the IIO only as generic PMUs " +
			"(uncore_type_1_*), whose raw events keep config bits 0-31 (uncore_discovery.h " +
			"GENERIC_PMON_RAW_EVENT_MASK) while the IIO data events need the port mask in bits 36-47; " +
			"Linux 6.8 (632c4bf6d007) names the GNR uncore and has the free-running bandwidth counters")
	}
}

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
	s, err := d.r.ReadString(filepath.Join(d.paths.pmus, box, fmt.Sprintf("die%d", die)))
	if err != nil {
		return ""
	}
	if len(s) < 7 || s[4] != ':' {
		d.errs = append(d.errs, fmt.Errorf("%s: unexpected stack mapping %q", filepath.Join(d.paths.pmus, box, fmt.Sprintf("die%d", die)), s))
		return ""
	}
	return s
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
	d.note("%s: %d die mapping files but %d dies in the cpumask (a die without an online CPU): their ports are reported without pci.bus_id",
		pmuFamily(box), len(files), cpus)
	return false
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
		d.errs = append(d.errs, fmt.Errorf("listing devices behind root port %s: %w", addr, err))
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
			numa := pi.numa
			if v, err := d.r.ReadInt(filepath.Join(fn.Dir, "numa_node")); err == nil && v >= 0 {
				numa = v
			}
			d.plan.devices = append(d.plan.devices, attachedDevice{device: dev, rootPort: pi.address, busID: fn.Address, numa: numa})
		}
	}
}

// loadPMU loads one PMU and resolves the events of src on it; the caller places the members
// per die. A PMU that cannot be used costs only itself.
func (d *discovery) loadPMU(name string, src source) (*perf.PMU, []*member) {
	p, err := perf.LoadPMU(d.r, filepath.Join(d.paths.pmus, name))
	if err != nil {
		d.errs = append(d.errs, fmt.Errorf("PMU %s: %w", name, err))
		return nil, nil
	}
	if len(p.CPUs) == 0 {
		d.errs = append(d.errs, fmt.Errorf("PMU %s: empty cpumask: no CPU to open its events on", name))
		return nil, nil
	}
	var members []*member
	for _, def := range src.events {
		m, err := d.resolve(p, def, src.note)
		if err != nil {
			d.errs = append(d.errs, err)
			continue
		}
		if m == nil {
			continue
		}
		m.direction, m.port = metadata.MapAttributeDirection[def.direction], def.port
		members = append(members, m)
		d.plan.scales = append(d.plan.scales, scaleFact{pmu: name, event: m.event, bpc: m.bpc, source: m.source})
	}
	if len(members) == 0 {
		return nil, nil
	}
	return p, members
}

// resolve turns an event definition into a counter on one PMU, applying the correctness guards:
// an alias whose encoding differs from the known-good one (ICX cas_count before v5.17) is
// replaced by the raw encoding; a scale that differs from the known bytes per count (ICX/SPR IIO
// free-running before the 2025 fix: 4 instead of 32 bytes) is corrected; a missing alias (SPR
// kernels before v6.4, GNR subchannel 1 before the 2026 fix) is replaced by the raw encoding.
// Every such decision is noted once. A nil member with no error means the event is absent and
// optional.
func (d *discovery) resolve(p *perf.PMU, def eventDef, why string) (*member, error) {
	if def.alias != "" && p.HasEvent(def.alias) {
		ev, err := p.Event(d.r, def.alias)
		if err != nil {
			return nil, fmt.Errorf("PMU %s event %s: %w", p.Name, def.alias, err)
		}
		m := &member{event: def.alias, attr: ev.Attr, source: metadata.AttributeScaleSourceSysfs}
		if def.raw != "" {
			want, err := p.EncodeString(def.raw)
			if err != nil {
				return nil, fmt.Errorf("PMU %s event %s: %w", p.Name, def.alias, err)
			}
			if want != ev.Attr {
				d.note("%s/events/%s is %q but this CPU (%s) counts it as %q; counting the raw encoding%s",
					pmuFamily(p.Name), def.alias, ev.Desc, d.plat.name, def.raw, because(why))
				m.attr = want
			}
		}
		bpc, ok := ev.BytesPerCount()
		switch {
		case def.bytesPerCount > 0 && (!ok || bpc != def.bytesPerCount):
			d.note("%s/events/%s.scale is %v %s (%v bytes a count) but the hardware counts %v bytes a count on %s; "+
				"correcting it (kernel without the 2025 fix \"perf/x86/intel/uncore: Fix the scale of IIO free running counters\")",
				pmuFamily(p.Name), def.alias, ev.Scale, ev.Unit, bpc, def.bytesPerCount, d.plat.name)
			m.bpc, m.source = def.bytesPerCount, metadata.AttributeScaleSourceCorrected
		case ok:
			m.bpc = bpc
		default:
			return nil, fmt.Errorf("PMU %s event %s: unit %q is not a byte unit and no bytes_per_count is configured", p.Name, def.alias, ev.Unit)
		}
		return m, nil
	}
	if def.raw == "" || def.bytesPerCount <= 0 {
		if def.port >= 0 {
			// A port this CPU does not have (a generic table lists 8, some parts have 4).
			return nil, nil
		}
		return nil, fmt.Errorf("PMU %s has no event %s", p.Name, def.alias)
	}
	attr, err := p.EncodeString(def.raw)
	if err != nil {
		return nil, fmt.Errorf("PMU %s event %s: %w", p.Name, def.raw, err)
	}
	name := def.raw
	if def.name != "" {
		name = def.name
	}
	if def.alias != "" {
		name = def.alias
		d.note("%s has no event %s; counting its raw encoding %q%s", pmuFamily(p.Name), def.alias, def.raw, because(why))
	}
	return &member{event: name, attr: attr, bpc: def.bytesPerCount, source: metadata.AttributeScaleSourceBuiltin}, nil
}

// because formats an optional reason.
func because(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

func (d *discovery) aggregate(k seriesKey) *aggregate {
	if a, ok := d.aggs[k]; ok {
		return a
	}
	a := &aggregate{key: k}
	d.aggs[k] = a
	d.created = append(d.created, a)
	return a
}

func (d *discovery) place(cpu int) cpuPlace {
	if p, ok := d.places[cpu]; ok {
		return p
	}
	p, err := placeCPU(d.r, d.paths.cpus, cpu)
	if err != nil {
		d.errs = append(d.errs, fmt.Errorf("CPU %d topology: %w", cpu, err))
	}
	d.places[cpu] = p
	return p
}

// dieName names the die whose box CPU is p.CPUs[die]: "socket1" where the socket has one die,
// "socket1/die3" where it has several (the uncore driver has one box per die,
// uncore_max_dies()), "die3" where the socket is unknown.
func (d *discovery) dieName(p *perf.PMU, die int, place cpuPlace) string {
	if place.socket < 0 {
		return fmt.Sprintf("die%d", die)
	}
	n := 0
	for _, c := range p.CPUs {
		if d.place(c).socket == place.socket {
			n++
		}
	}
	if n > 1 {
		return fmt.Sprintf("socket%d/die%d", place.socket, die)
	}
	return fmt.Sprintf("socket%d", place.socket)
}

// deviceBase is the short name of a PMU type in device names.
func deviceBase(pmu string) string {
	base := pmu
	if i := strings.LastIndexByte(pmu, '_'); i > 0 {
		if _, err := strconv.Atoi(pmu[i+1:]); err == nil {
			base = pmu[:i]
		}
	}
	switch base {
	case "uncore_imc":
		return "imc"
	case "amd_umc":
		return "umc"
	case "uncore_iio_free_running", "uncore_iio":
		return "iio"
	case "uncore_type_6": // the GNR IMC under its generic discovery name (events.go gnrIMC)
		return "imc"
	case "amd_df":
		return "df"
	}
	return strings.TrimPrefix(strings.TrimPrefix(base, "uncore_"), "amd_")
}

// pmuFamily names all instances of a PMU in one-time messages (uncore_imc_3 -> uncore_imc_*), so
// that a fact true of every instance is said once.
func pmuFamily(pmu string) string {
	if i := strings.LastIndexByte(pmu, '_'); i > 0 {
		if _, err := strconv.Atoi(pmu[i+1:]); err == nil {
			return pmu[:i] + "_*"
		}
	}
	return pmu
}

// instance is the PMU's instance number (uncore_imc_3 -> 3; uncore_imc -> 0).
func instance(pmu string) int {
	if i := strings.LastIndexByte(pmu, '_'); i > 0 {
		if n, err := strconv.Atoi(pmu[i+1:]); err == nil {
			return n
		}
	}
	return 0
}

// pcie3x16 is the payload rate of a PCIe 3.0 x16 link: 8 GT/s x 16 lanes x 128/130 / 8.
const pcie3x16 = 8e9 * 16 * 128 / 130 / 8

// wrapWindow is how long a free-running counter of bits width takes to wrap when one port runs
// at PCIe 3.0 x16 line rate (the fastest link an SKX port has): 2^36 counts x 4 B = 256 GiB,
// about 17 s.
func wrapWindow(bits uint, bytesPerCount float64) time.Duration {
	if bits >= 64 || bytesPerCount <= 0 {
		return 0
	}
	secs := math.Ldexp(1, int(bits)) * bytesPerCount / pcie3x16
	if secs > 365*24*3600 {
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}
