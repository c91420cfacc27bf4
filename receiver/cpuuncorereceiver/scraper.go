package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// rediscoverEvery is how often discovery is retried while something is missing (no uncore PMU
// yet, a group that could not be opened or read). Discovery reads a few hundred small sysfs files,
// so it is kept off the scrape path otherwise.
const rediscoverEvery = time.Minute

// errWrapRisk is the stable part of the wrap warning, so that errtrack reports it once.
var errWrapRisk = errors.New("read interval longer than the counters take to wrap at line rate")

// uncoreScraper reads the uncore counters. Data flows one way: perf counter groups (source) ->
// per-counter deltas -> per-series byte totals -> counter.Tracker (start timestamps) -> builder.
type uncoreScraper struct {
	// mu serialises scrapes, discovery, shutdown and the background reader of fold.go.
	mu sync.Mutex

	cfg    *Config
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	opener perf.Opener
	reader *sysfs.Reader
	paths  hostPaths
	now    func() time.Time

	cpu  cpuID
	plat platform

	plan    *plan
	aggs    map[seriesKey]*aggregate
	tracker *counter.Tracker[seriesKey]
	errs    *errtrack.Tracker
	// said holds the one-time messages already logged.
	said map[string]bool

	scrapes         uint64
	lastDiscovery   time.Time
	needDiscovery   bool
	rediscoverEvery time.Duration
	// starts points the builder at each series' start timestamp.
	starts *counter.StartTimes

	// foldStop and foldDone control the background reader (fold.go), nil when none runs.
	foldStop, foldDone chan struct{}
}

func newScraper(cfg *Config, set receiver.Settings, opener perf.Opener) *uncoreScraper {
	s := &uncoreScraper{
		cfg:    cfg,
		logger: set.Logger,
		mb:     metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		opener: opener,
		reader: &sysfs.Reader{},
		paths:  newHostPaths(cfg.RootPath),
		now:    time.Now,
		plan:   &plan{},
		aggs:   map[seriesKey]*aggregate{},
		// The start-time rule (metadata/start-time.md): a series counts from its first reading.
		tracker:         counter.NewTracker[seriesKey](counter.SinceFirstReading()),
		errs:            errtrack.New(),
		said:            map[string]bool{},
		rediscoverEvery: rediscoverEvery,
	}
	s.starts = counter.NewStartTimes(func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) })
	return s
}

// start identifies the CPU and runs the first discovery. It never fails: a host without uncore
// PMUs gets one log line and an empty scrape until they appear.
func (s *uncoreScraper) start(context.Context, component.Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := readCPUID(s.paths.cpuinfo)
	if err != nil {
		s.once(zap.InfoLevel, fmt.Sprintf("cannot identify the CPU (%v); using the kernel's own event aliases and scales without corrections", err))
		id = cpuID{vendor: "unknown"}
		s.plat = genericIntel
	} else {
		s.plat = platformFor(id)
	}
	s.cpu = id
	s.discover(s.now())
	return nil
}

func (s *uncoreScraper) shutdown(context.Context) error {
	s.stopFolding()
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, g := range s.plan.groups {
		if g.handle != nil {
			if err := g.handle.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing %s: %w", g.key, err))
			}
			g.handle = nil
		}
	}
	return errors.Join(errs...)
}

// once logs msg at level the first time it is seen.
func (s *uncoreScraper) once(level zapcore.Level, msg string, fields ...zap.Field) {
	if s.said[msg] {
		return
	}
	s.said[msg] = true
	if ce := s.logger.Check(level, msg); ce != nil {
		ce.Write(fields...)
	}
}

// discover rebuilds the plan, keeping the groups that are open and unchanged, opening new ones
// and closing the rest.
func (s *uncoreScraper) discover(now time.Time) {
	s.lastDiscovery = now
	d := &discovery{cfg: s.cfg, r: s.reader, paths: s.paths, plat: s.plat, aggs: s.aggs}
	d.run()
	for _, n := range d.notes {
		s.once(zap.WarnLevel, n)
	}
	for _, err := range d.errs {
		s.once(zap.WarnLevel, err.Error())
	}

	old := map[string]*counterGroup{}
	for _, g := range s.plan.groups {
		if g.handle != nil {
			old[g.signature()] = g
		}
	}
	var denied []string
	var firstDenied error
	missing := false
	for _, g := range d.plan.groups {
		if o, ok := old[g.signature()]; ok {
			g.handle, g.reading, g.lastRead = o.handle, o.reading, o.lastRead
			for i, m := range g.members {
				m.last = o.members[i].last
			}
			delete(old, g.signature())
			continue
		}
		if err := s.open(g); err != nil {
			missing = true
			if perf.IsPermission(err) {
				denied = append(denied, g.key)
				if firstDenied == nil {
					firstDenied = err
				}
				continue
			}
			s.once(zap.WarnLevel, fmt.Sprintf("cannot open the counters of %s: %v", g.key, err))
		}
	}
	for _, o := range old {
		_ = o.handle.Close()
	}
	if len(denied) > 0 {
		s.once(zap.WarnLevel, fmt.Sprintf("perf_event_open was denied for %d counter groups (%s): %s",
			len(denied), abbreviate(denied, 3), perf.Hint(firstDenied)), zap.Error(firstDenied))
	}

	// Series that left the plan are forgotten: if they come back, they start anew.
	keep := map[seriesKey]bool{}
	for _, a := range d.plan.aggs {
		keep[a.key] = true
	}
	for k := range s.aggs {
		if !keep[k] {
			delete(s.aggs, k)
		}
	}
	// A new series starts when its counters were opened, not at the first scrape after.
	ts := pcommon.NewTimestampFromTime(now)
	for _, a := range d.created {
		if keep[a.key] {
			s.tracker.Observe(a.key, 0, counter.Spec{Kind: counter.Monotonic}, ts)
		}
	}

	// Failures of groups and files that are no longer in the plan are forgotten.
	current := map[string]bool{"wrap": true}
	for _, g := range d.plan.groups {
		current[g.key], current[g.key+" reopen"] = true, true
	}
	for _, m := range d.plan.mbm {
		current[m.path] = true
	}
	s.errs.Forget(func(k string) bool { return current[k] })

	s.plan = d.plan
	s.needDiscovery = missing || len(d.plan.groups) == 0 && len(d.plan.mbm) == 0
	s.logStatus(len(d.errs) > 0 || missing)
	s.ensureFolding()
}

// open opens one group.
func (s *uncoreScraper) open(g *counterGroup) error {
	h, err := s.opener.OpenGroup(g.cpu, g.attrs)
	if err != nil {
		return err
	}
	g.handle = h
	g.reading = perf.Reading{Values: make([]uint64, len(g.attrs))}
	g.lastRead = time.Time{}
	for _, m := range g.members {
		m.last = 0
	}
	return nil
}

// logStatus says once, in plain words, what the receiver collects or why it collects nothing.
func (s *uncoreScraper) logStatus(problems bool) {
	p := s.plan
	if len(p.groups) > 0 || len(p.mbm) > 0 {
		open := 0
		for _, g := range p.groups {
			if g.handle != nil {
				open++
			}
		}
		s.once(zap.InfoLevel, fmt.Sprintf("collecting from %d memory and %d PCIe uncore PMUs and %d resctrl MBM domains on %s (%s): %d of %d counter groups open",
			p.memoryPMUs, p.pciePMUs, len(p.mbm), s.plat.name, s.cpu, open, len(p.groups)))
		return
	}
	var want []string
	if s.cfg.Memory.Enabled {
		want = append(want, "uncore_imc", "amd_umc")
		if s.plat.memoryFallback != nil {
			want = append(want, "amd_df")
		}
	}
	if s.cfg.PCIe.Enabled {
		want = append(want, "uncore_iio_free_running")
	}
	msg := fmt.Sprintf("no usable %s PMU under %s", strings.Join(want, " / "), s.paths.pmus)
	switch {
	case problems:
		msg += ": see the warnings above"
	case s.cpu.hypervisor:
		msg += ": running under a hypervisor (cpuinfo flag \"hypervisor\"), where the Intel uncore driver does not load and AMD's is not exposed"
	case s.cpu.vendor == "AuthenticAMD":
		msg += ": amd_umc needs an AMD Zen 4 or later CPU and Linux 6.7 or later"
	case s.cpu.vendor == "GenuineIntel":
		msg += fmt.Sprintf(": no uncore support for %s in this kernel, or the intel_uncore module is not loaded", s.cpu)
	default:
		msg += fmt.Sprintf(": no supported uncore PMU on %s", s.cpu)
	}
	s.once(zap.InfoLevel, msg+"; nothing to report, will look again every "+s.rediscoverEvery.String())
}

func (s *uncoreScraper) scrape(context.Context) (pmetric.Metrics, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ts := pcommon.NewTimestampFromTime(now)
	s.scrapes++
	var errs []error
	failed := 0

	ratioPMU, ratio := "", 1.0
	var wrapped []string
	var gap, window time.Duration
	var bits uint
	for _, g := range s.plan.groups {
		if g.handle == nil {
			s.fail(g)
			continue
		}
		if err := g.handle.Read(&g.reading); err != nil {
			// A PMU that disappeared (driver unloaded, box gone): drop the group and look again.
			_ = g.handle.Close()
			g.handle = nil
			s.fail(g)
			failed += len(g.members)
			s.needDiscovery = true
			if s.errs.Fail(g.key, err) {
				errs = append(errs, fmt.Errorf("reading %s: %w", g.key, err))
			}
			continue
		}
		if s.errs.Recover(g.key) {
			s.logger.Info("counters readable again", zap.String("group", g.key))
		}
		if g.wrapWindow > 0 && !g.lastRead.IsZero() && now.Sub(g.lastRead) > g.wrapWindow {
			wrapped = append(wrapped, g.key)
			gap, window, bits = now.Sub(g.lastRead), g.wrapWindow, g.counterBits
		}
		g.lastRead = now
		var maxRaw uint64
		for i, m := range g.members {
			v, ok := g.reading.Scaled(i)
			if !ok {
				m.agg.failedAt = s.scrapes
				continue
			}
			if v < m.last {
				// Extrapolated counts of a multiplexed group can dip when the running ratio
				// changes; the kernel's own count never goes backwards for an open event.
				v = m.last
			}
			m.agg.add(v-m.last, m.bpc)
			m.last = v
			maxRaw = max(maxRaw, g.reading.Values[i])
		}
		if g.reopenAfter > 0 && maxRaw >= g.reopenAfter {
			s.reopen(g)
		}
		if g.pmu != ratioPMU {
			if ratioPMU != "" {
				s.mb.RecordCpuuncoreCounterRunningRatioDataPoint(ts, ratio, ratioPMU)
			}
			ratioPMU, ratio = g.pmu, 1
		}
		ratio = min(ratio, g.reading.RunningRatio())
	}
	if ratioPMU != "" {
		s.mb.RecordCpuuncoreCounterRunningRatioDataPoint(ts, ratio, ratioPMU)
	}
	// Counters read further apart than they take to wrap at line rate (the background reader of
	// fold.go could not keep up, or the host was suspended): the kernel folds each read's delta
	// modulo 2^36, so whole wraps in between are lost. The values are still a lower bound of the
	// traffic (never inflated, never a reset); say so once.
	if len(wrapped) > 0 {
		if s.errs.Fail("wrap", errWrapRisk) {
			errs = append(errs, fmt.Errorf("%d IIO free-running groups (%s) read %s after the previous read, longer than their %d-bit counters take to wrap at line rate (%s): bytes beyond a wrap are lost, so those series may be short: %w",
				len(wrapped), abbreviate(wrapped, 3), gap.Round(time.Second), bits, window.Round(time.Second), errWrapRisk))
		}
	} else if s.errs.Recover("wrap") {
		s.logger.Info("IIO free-running counters are read often enough again not to lose wraps")
	}

	for _, a := range s.plan.aggs {
		if a.failedAt == s.scrapes {
			// Its bytes keep counting from where they were: the series goes on after the failure.
			s.tracker.Hold(a.key)
			continue
		}
		p := s.tracker.Observe(a.key, a.bytes, counter.Spec{Kind: counter.Monotonic}, ts)
		if !p.Report() {
			continue
		}
		s.starts.Use(p.Start)
		if a.key.combined {
			s.mb.RecordCpuuncoreMemoryIoDataPoint(ts, int64(p.Value), a.key.device, a.key.numa)
			continue
		}
		s.mb.RecordInterconnectIoDataPoint(ts, int64(p.Value), a.key.component, a.key.direction, a.key.device, a.key.busID, a.key.numa)
	}
	for _, m := range s.plan.mbm {
		// A plain 64-bit byte counter; it restarts when resctrl is remounted, which the tracker
		// turns into a new series start.
		v, err := s.reader.ReadUint(m.path)
		if err != nil {
			// "Unavailable" while the RMID is not available, "Error" on a failed read.
			if s.errs.Fail(m.path, err) {
				errs = append(errs, err)
			}
			s.tracker.Hold(m.key)
			failed++
			continue
		}
		s.errs.Recover(m.path)
		p := s.tracker.Observe(m.key, v, counter.Spec{Kind: counter.Monotonic}, ts)
		s.starts.Use(p.Start)
		s.mb.RecordCpuuncoreMemoryIoDataPoint(ts, int64(p.Value), m.device, m.key.numa)
	}
	s.tracker.Sweep()
	for _, dev := range s.plan.devices {
		s.mb.RecordCpuuncorePcieDeviceDataPoint(ts, 1, dev.device, dev.rootPort, dev.busID, dev.numa)
	}
	for _, f := range s.plan.scales {
		s.mb.RecordCpuuncoreEventBytesPerCountDataPoint(ts, f.bpc, f.pmu, f.event, f.source)
	}
	md := s.mb.Emit()

	// Rediscovery runs after the reads, so that groups kept open lose nothing.
	if s.needDiscovery && now.Sub(s.lastDiscovery) >= s.rediscoverEvery {
		s.discover(now)
	}
	if len(errs) > 0 {
		return md, scrapererror.NewPartialScrapeError(errors.Join(errs...), failed)
	}
	return md, nil
}

// fail marks the series of a group that could not be read in this scrape.
func (s *uncoreScraper) fail(g *counterGroup) {
	for _, m := range g.members {
		m.agg.failedAt = s.scrapes
	}
}

// reopen closes and reopens a group whose hardware counters approach saturation (AMD UMC
// before upstream 2492e5aba2be). A new event restarts its hardware counter at 0; the deltas
// already taken stay in the series, which continues without a reset.
func (s *uncoreScraper) reopen(g *counterGroup) {
	_ = g.handle.Close()
	g.handle = nil
	if err := s.open(g); err != nil {
		s.needDiscovery = true
		if s.errs.Fail(g.key+" reopen", err) {
			s.logger.Warn("cannot reopen counters before they saturate", zap.String("group", g.key), zap.Error(err))
		}
		return
	}
	s.once(zap.InfoLevel, fmt.Sprintf("reopened %s before its 48-bit counters saturate (kernels without upstream 2492e5aba2be stop counting there); this repeats every 2^47 counts", g.key))
}
