package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// The fast sampler (bursts.period, README.md "Microbursts") reads the perf groups that feed a
// cpu_memory or cpu_pcie series of interconnect.io, one read(2) per group, on the goroutine of a
// burst.Loop, and folds each series' bytes into its burst.Fold. It shares the open groups with the
// scrape through sharedGroup, whose lock is held for one read only: a scrape waits at most for one
// group read of the sampler (a perf read of an uncore PMU is a system call of a few microseconds),
// and a group the scrape has closed reads as closed, never through a descriptor number the kernel
// has since given to another file. The scrape takes what the folds hold under the sampler's mutex,
// which the sampler holds only to add a pass's readings.

// sharedGroup is an open counter group that the scrape and the fast sampler both read.
type sharedGroup struct {
	mu     sync.Mutex
	g      perf.Group // the scrape's: the recording's group while recording
	fast   perf.Group // the sampler's: the same counters, left out of the recording
	closed bool
}

// share wraps a group the opener returned. A recording's group records every read into the
// scrape's sample; the sampler reads the group beneath it, whose passes the recording keeps as
// sub-interval samples instead (recording.SubSamples).
func share(g perf.Group) *sharedGroup {
	fast := g
	if rg, ok := g.(*recordingGroup); ok {
		fast = rg.Group
	}
	return &sharedGroup{g: g, fast: fast}
}

func (s *sharedGroup) Read(r *perf.Reading) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return os.ErrClosed
	}
	return s.g.Read(r)
}

func (s *sharedGroup) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return os.ErrClosed
	}
	s.closed = true
	return s.g.Close()
}

func (s *sharedGroup) readFast(r *perf.Reading) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return os.ErrClosed
	}
	return s.fast.Read(r)
}

// burstGroup is one open group a pass reads, with the pass's reading.
type burstGroup struct {
	g       *sharedGroup
	reading perf.Reading
	ok      bool
	// events name its counters in a recording's sub-samples (eventName), in read order.
	events []string
}

// burstMember is one counter of a series: its group among the pass's, its place in the group's
// read, and its bytes per count.
type burstMember struct {
	group int
	i     int
	bpc   float64
	event string
}

// burstTarget is one interconnect.io series the sampler folds.
type burstTarget struct {
	key     seriesKey
	members []burstMember
	fold    *burst.Fold
}

// burstSampler owns the folds and, on a live node, the loop that feeds them.
type burstSampler struct {
	clock func() time.Time
	loop  *burst.Loop
	// onPass, when recording, receives each pass's raw counts by event name.
	onPass func(at time.Time, values map[string]uint64)

	mu      sync.Mutex
	groups  []*burstGroup
	targets []*burstTarget
	// window names burst.window: the configured period, or a replay's recorded one.
	window string
}

func newBurstSampler(period time.Duration, logger *zap.Logger, clock func() time.Time) *burstSampler {
	return &burstSampler{clock: clock, loop: burst.NewLoop(period, logger), window: period.String()}
}

// eventName names one counter in a recording's sub-samples: the PMU instance, the CPU and the
// perf_event_attr config words, as a replay matches a reading (eventKey).
func eventName(pmu string, cpu int, a perf.Attr) string {
	return fmt.Sprintf("%s@%d:%#x:%#x:%#x", pmu, cpu, a.Config, a.Config1, a.Config2)
}

// burstTargets are the plan's cpu_memory and cpu_pcie series of interconnect.io with the open
// groups that feed them (cpuuncore.memory.io adds the same counters together: it has no peak of
// its own). A series one of whose groups is not open is left out until it is.
func burstTargets(p *plan) ([]*burstGroup, []*burstTarget) {
	var groups []*burstGroup
	byAgg := map[*aggregate]*burstTarget{}
	var targets []*burstTarget
	for _, g := range p.groups {
		sh, ok := g.handle.(*sharedGroup)
		if !ok {
			continue // not open
		}
		bg := &burstGroup{g: sh, reading: perf.Reading{Values: make([]uint64, len(g.attrs))}}
		for _, a := range g.attrs {
			bg.events = append(bg.events, eventName(g.pmu, g.cpu, a))
		}
		groups = append(groups, bg)
		for i, m := range g.members {
			if m.agg.key.combined {
				continue
			}
			t := byAgg[m.agg]
			if t == nil {
				t = &burstTarget{key: m.agg.key}
				byAgg[m.agg] = t
				targets = append(targets, t)
			}
			t.members = append(t.members, burstMember{group: len(groups) - 1, i: i, bpc: m.bpc, event: bg.events[i]})
		}
	}
	return groups, targets
}

// setTargets replaces what the sampler reads, keeping the fold of every series that stays, so that
// a rediscovery or a reopened group does not restart its windows.
func (b *burstSampler) setTargets(groups []*burstGroup, targets []*burstTarget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := make(map[seriesKey]*burst.Fold, len(b.targets))
	for _, t := range b.targets {
		old[t.key] = t.fold
	}
	for _, t := range targets {
		if t.fold = old[t.key]; t.fold == nil {
			// No line rate: the uncore does not state one (BurstsConfig).
			t.fold = burst.New(0, nil)
		}
	}
	b.groups, b.targets = groups, targets
	b.loop.Wake()
}

func (b *burstSampler) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.targets) == 0
}

// start runs the loop on the live node.
func (b *burstSampler) start() { b.loop.Start(burst.Work{Pass: b.pass, Idle: b.idle}) }

// shutdown stops the loop.
func (b *burstSampler) shutdown() { b.loop.Stop() }

// pass reads every group once and folds each series' bytes, stamped with the pass's start. The
// groups and targets of a pass are the ones setTargets gave last; only this goroutine touches the
// groups' readings.
func (b *burstSampler) pass() {
	b.mu.Lock()
	groups, targets := b.groups, b.targets
	b.mu.Unlock()
	at := b.clock()
	var rec map[string]uint64
	if b.onPass != nil {
		rec = map[string]uint64{}
	}
	for _, g := range groups {
		// A failed read costs that group's series this window; the scrape reads the same group
		// and reports the failure.
		g.ok = g.g.readFast(&g.reading) == nil
		if g.ok && rec != nil {
			for i, e := range g.events {
				rec[e] = g.reading.Values[i]
			}
		}
	}
	b.mu.Lock()
	for _, t := range targets {
		var bytes float64
		ok := true
		for _, m := range t.members {
			g := groups[m.group]
			if !g.ok {
				ok = false
				break
			}
			bytes += float64(g.reading.Values[m.i]) * m.bpc
		}
		if ok {
			t.fold.Add(burst.Sample{T: at, Bytes: uint64(bytes)})
		}
	}
	b.mu.Unlock()
	b.loop.Paced(at)
	if len(rec) > 0 {
		b.onPass(at, rec)
	}
}

// replay folds a recording's sub-interval samples, their recorded times moved to the replay's
// clock by at. Nothing is read: the fold runs on exactly what was recorded.
func (b *burstSampler) replay(subs *recording.SubSamples, at func(time.Time) time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := time.Duration(subs.Period); p > 0 {
		// The recorded period names the window: the replaying receiver's own is not the one the
		// samples were taken at.
		b.window = p.String()
	}
	for i := range subs.Len() {
		ts := at(subs.Time(i))
		for _, t := range b.targets {
			var bytes float64
			ok := true
			for _, m := range t.members {
				v, vok := subs.Value(i, m.event)
				if !vok {
					ok = false
					break
				}
				bytes += float64(v) * m.bpc
			}
			if ok {
				t.fold.Add(burst.Sample{T: ts, Bytes: uint64(bytes)})
			}
		}
	}
}

// recordBursts adds cpuuncore.burst.peak_rate for every series whose windows ended in this interval.
func (s *uncoreScraper) recordBursts(ts pcommon.Timestamp) {
	b := s.bursts
	if b == nil {
		return
	}
	if s.src != nil && s.src.takeBursts != nil {
		if subs, at := s.src.takeBursts(); subs != nil {
			b.replay(subs, at)
		}
	}
	if !s.cfg.Metrics.CpuuncoreBurstPeakRate.Enabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.targets {
		iv := t.fold.Take()
		if iv.Windows == 0 {
			continue
		}
		k := t.key
		s.series.Gauge(func() {
			s.mb.RecordCpuuncoreBurstPeakRateDataPoint(ts, iv.Peak, k.component, k.direction, k.device, k.busID, k.numa, b.window)
		})
	}
}

// syncBursts hands the sampler the series and open groups of the plan, after a discovery or a
// scrape that opened or closed a group.
func (s *uncoreScraper) syncBursts() {
	if s.bursts == nil {
		return
	}
	s.bursts.setTargets(burstTargets(s.plan))
}
