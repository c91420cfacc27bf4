package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// Discovery turns what sysfs shows (PMUs, their cpumask, formats and event aliases, the IIO
// stack to root bus mapping and the PCI tree) and the CPU's event table into a plan: the counter
// groups to open, which series each counter adds to, and the devices behind each root port. It
// runs at start and again when something was missing or failed, never on every scrape.

// discovery holds what one discovery run needs and what it found out.
type discovery struct {
	cfg   *Config
	r     *sysfs.Reader
	paths hostPaths
	plat  platform
	// series are the series of this run, by key: every counter of a series adds to one aggregate.
	series map[seriesKey]*aggregate
	plan   *plan
	// said are what the scraper logs once each: facts at Info (a kernel bug corrected, a raw
	// encoding used), PMUs or events that cannot be used at Warn.
	said []logLine
	// places caches cpu -> socket/NUMA for this run.
	places map[int]cpuPlace
	// nodesPerSocket counts the NUMA nodes with CPUs of each socket (nil until asked).
	nodesPerSocket map[int]int
}

// logLine is one thing to log once, under its key.
type logLine struct {
	key    string
	level  zapcore.Level
	msg    string
	fields []zap.Field
}

// note records a fact about this host worth one Info line: a kernel bug corrected, a fallback
// taken. msg is constant; the values go in fields.
func (d *discovery) note(key, msg string, fields ...zap.Field) {
	d.said = append(d.said, logLine{key: key, level: zapcore.InfoLevel, msg: msg, fields: fields})
}

// problem records a PMU, event or file that cannot be used (its series are lost): one Warn line.
func (d *discovery) problem(key string, err error) {
	d.said = append(d.said, logLine{key: key, level: zapcore.WarnLevel, msg: "Cannot use part of the uncore", fields: []zap.Field{zap.Error(err)}})
}

// run builds the plan from the PMUs present.
func (d *discovery) run() {
	d.plan = &plan{}
	d.places = map[int]cpuPlace{}
	d.series = map[seriesKey]*aggregate{}
	names, err := perf.ListPMUs(d.paths.pmus)
	if err != nil {
		d.problem(d.paths.pmus, err)
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
	// device names the series instead of the PMU's short name; product is the PMIIDR product id
	// an arm_cspmu PMU's identifier must carry (memoryTable).
	device  string
	product uint32
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
		var sources []source
		for part := t; part != nil; part = part.also {
			sources = append(sources, source{pmu: part.pmu, events: part.events, note: part.note, reopenAfter: part.reopenAfter,
				combined: part.combined, groupPerEvent: part.groupPerEvent, device: part.device, product: part.product})
		}
		d.memorySources(names, sources)
		if d.plan.memoryPMUs > 0 {
			return
		}
	}
	d.resctrl()
}

// forEachPMU calls fn for every PMU in names that a source matches and that has events to count
// (loadPMU resolved them), source by source.
func (d *discovery) forEachPMU(names []string, sources []source, fn func(name string, src source, p *perf.PMU, members []*member)) {
	for _, src := range sources {
		for _, name := range names {
			if !src.pmu.MatchString(name) {
				continue
			}
			if p, members := d.loadPMU(name, src); p != nil {
				fn(name, src, p, members)
			}
		}
	}
}

func (d *discovery) memorySources(names []string, sources []source) {
	d.forEachPMU(names, sources, func(name string, src source, p *perf.PMU, members []*member) {
		d.plan.memoryPMUs++
		for die, cpu := range p.CPUs {
			place := d.place(cpu)
			prefix := d.dieName(p, die, place)
			dev := prefix + "/" + deviceBase(name)
			switch {
			case src.device != "":
				// Several PMUs count into one memory (Grace): one series, no controllers to name.
				dev = prefix + "/" + src.device
			case d.cfg.Memory.Granularity == GranularityController:
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
	})
}

func (d *discovery) pcie(names []string) {
	sources := d.overrides("pcie")
	if len(sources) == 0 && d.plat.cspmuPCIe != nil {
		d.cspmuPCIe(names, d.plat.cspmuPCIe)
		return
	}
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

	d.forEachPMU(names, sources, func(name string, src source, p *perf.PMU, members []*member) {
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
				if rootBus != "" && !d.busOnSocket(name, rootBus, place.socket) {
					rootBus = ""
				}
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
	})
	for _, sd := range order {
		d.attach(stackDevs[sd], stacks[sd])
	}
	if iio != nil && d.plan.pciePMUs == 0 && slices.ContainsFunc(names, genericIIO.MatchString) {
		d.note("generic-iio", "CPU PCIe bytes are not collected: this kernel knows the IIO only as generic PMUs "+
			"(uncore_type_1_*), whose raw events keep config bits 0-31 (uncore_discovery.h "+
			"GENERIC_PMON_RAW_EVENT_MASK) while the IIO data events need the port mask in bits 36-47; "+
			"Linux 6.8 (632c4bf6d007) names the GNR uncore and has the free-running bandwidth counters")
	}
}

// aggregate returns this run's series for k: every counter of a series adds to one aggregate.
// Totals are the scraper's business (reconcile carries them over from the previous plan).
func (d *discovery) aggregate(k seriesKey) *aggregate {
	if a, ok := d.series[k]; ok {
		return a
	}
	a := &aggregate{key: k}
	d.series[k] = a
	return a
}
