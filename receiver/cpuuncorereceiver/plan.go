package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// The plan is what one discovery run found: the counter groups to open, the series each counter
// adds to, the devices behind each root port and the scale of every event. Discovery builds it and
// nothing else; the scraper reconciles it with the plan it had (reconcile.go).

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
	total counter.Accumulator
	// failedAt is the scrape in which one of its counters could not be read; the series is not
	// reported in that scrape rather than reported short.
	failedAt uint64
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
	// openErr is why the group is not open (nil while it is, or before the first try).
	openErr error
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

// signature is the group's key across discoveries: the PMU, the CPU and the events in the order
// they were opened (the order of a PERF_FORMAT_GROUP read), so that an open group is kept.
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
