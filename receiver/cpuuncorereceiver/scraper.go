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
	"github.com/otelcol-iclens/otelcol-iclens/internal/schedule"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// rediscoverEvery is how often discovery runs again while something is missing (no uncore PMU
// yet, a group that could not be opened or read). Discovery reads a few hundred small sysfs files,
// so it is kept off the scrape path otherwise. It is not an option: nothing an operator tunes
// changes how fast a driver loads or a CPU comes back online.
const rediscoverEvery = time.Minute

// errWrapRisk is why a scrape reports counters read later than they take to wrap.
var errWrapRisk = errors.New("read interval longer than the counters take to wrap at line rate")

// monotonic is the counter spec of every uncore series: the byte totals are the receiver's own
// 64-bit sums, and mbm_total_bytes is a 64-bit count.
var monotonic = counter.Spec{Kind: counter.Monotonic}

// uncoreScraper reads the uncore counters. Data flows one way: perf counter groups (source) ->
// per-counter deltas -> per-series byte totals -> counter.Series (start timestamps) -> builder.
type uncoreScraper struct {
	// mu serialises scrapes, discovery, shutdown and the background reader of fold.go.
	mu sync.Mutex

	cfg *Config
	log *errtrack.Log
	mb  *metadata.MetricsBuilder
	// live opens the kernel's perf_event_open (factory_linux.go); start wraps it for recording
	// or replaces it with a replay (recording.go).
	live   func() (perf.Opener, error)
	src    *seam
	opener perf.Opener
	reader *sysfs.Reader
	paths  hostPaths
	now    func() time.Time

	cpu  cpuID
	plat platform

	plan   *plan
	series *counter.Series[seriesKey]

	scrapes     uint64
	rediscovery *schedule.Schedule
	// incomplete: the last discovery missed something (a group not open, no PMU at all), so
	// discovery runs again when rediscovery is due.
	incomplete bool

	// foldStop and foldDone control the background reader (fold.go), nil when none runs.
	foldStop, foldDone chan struct{}

	// bursts is the fast sampler (bursts.period), or on a replay the fold of the recorded
	// sub-interval samples; nil otherwise.
	bursts *burstSampler
	// regrouped: a group was opened or closed since the sampler was last given the plan's.
	regrouped bool
	// newBurstTicker, when set, gives the fast sampler its ticks (tests); unset, burst.Loop's own.
	newBurstTicker func(time.Duration) (<-chan time.Time, func())
	logger         *zap.Logger

	// id is the receiver's, under which its capture ring registers (bursts.capture).
	id component.ID
	// unregisterCapture takes the ring back from the capture extension; nil without one.
	unregisterCapture func()
}

func newScraper(cfg *Config, set receiver.Settings, live func() (perf.Opener, error)) *uncoreScraper {
	return &uncoreScraper{
		cfg:         cfg,
		log:         errtrack.NewLog(set.Logger),
		logger:      set.Logger,
		id:          set.ID,
		mb:          metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		live:        live,
		reader:      &sysfs.Reader{},
		paths:       newHostPaths(cfg.RootPath),
		now:         time.Now,
		plan:        &plan{},
		rediscovery: schedule.New(rediscoverEvery),
	}
}

// start chooses the source (live, recorded or replayed), identifies the CPU and runs the first
// discovery. It fails only on a replay that cannot be read, a recording that cannot be created
// or a bursts.capture extension the host does not have: a host without uncore PMUs gets one log
// line and an empty scrape until they appear.
func (s *uncoreScraper) start(_ context.Context, host component.Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	// The start-time rule (metadata/start-time.md): a series counts from its first reading; the
	// gauges carry the moment the receiver started.
	s.series = counter.NewSeries[seriesKey](func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) },
		pcommon.NewTimestampFromTime(now), counter.SinceFirstReading())
	src, err := openSeam(s.cfg, s.live, now)
	if errors.Is(err, errUnsupportedPlatform) {
		s.log.Once("platform", zapcore.InfoLevel, "Unsupported platform: the cpuuncore receiver reads Linux perf uncore PMUs and reports nothing here")
		return nil
	}
	if err != nil {
		return err
	}
	if src.replayed {
		// A crafted link in a recording must not expose a file of the replaying host.
		if err := s.reader.Confine(src.root); err != nil {
			return errors.Join(err, src.close())
		}
	}
	s.src, s.opener, s.paths = src, src.opener, newHostPaths(src.root)
	if err := s.registerCapture(host); err != nil {
		s.src = nil
		return errors.Join(err, src.close())
	}

	id, err := readCPUID(s.paths.cpuinfo)
	if err != nil {
		// arm64 names its CPU in the MIDR too (a cpuinfo that a container or a recording lacks).
		if midr, merr := readMIDR(s.reader, s.paths.cpus); merr == nil {
			id, err = midr, nil
		}
	}
	if err != nil {
		s.log.Once("cpuinfo", zapcore.InfoLevel, "Cannot identify the CPU: using the kernel's own event aliases and scales without corrections", zap.Error(err))
		id = cpuID{vendor: "unknown"}
		s.plat = genericIntel
	} else {
		s.plat = platformFor(id)
	}
	s.cpu = id
	s.startBursts()
	s.discover(now)
	return nil
}

// startBursts starts the fast sampler on a live node with bursts.period set. A replay never reads
// the counters in between scrapes: it folds the sub-interval samples its recording holds.
func (s *uncoreScraper) startBursts() {
	switch {
	case s.src.replayed:
		s.bursts = newBurstSampler(s.cfg.Bursts.Period, s.logger, s.now)
	case s.cfg.Bursts.Period > 0:
		s.bursts = newBurstSampler(s.cfg.Bursts.Period, s.logger, s.now)
		s.bursts.loop.NewTicker = s.newBurstTicker
		if s.src.addPass != nil {
			s.bursts.onPass = s.src.addPass
		}
		s.bursts.start()
	}
}

func (s *uncoreScraper) shutdown(context.Context) error {
	if s.unregisterCapture != nil {
		// First: a trigger from now on does not see this ring.
		s.unregisterCapture()
		s.unregisterCapture = nil
	}
	if s.bursts != nil {
		// Before the groups close: its reads would only fail.
		s.bursts.shutdown()
	}
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
	if s.src != nil {
		errs = append(errs, s.src.close())
		s.src = nil
	}
	return errors.Join(errs...)
}

// discover runs discovery and reconciles its plan with the current one.
func (s *uncoreScraper) discover(now time.Time) {
	s.rediscovery.Done(now)
	d := &discovery{cfg: s.cfg, r: s.reader, paths: s.paths, plat: s.plat}
	d.run()
	for _, l := range d.said {
		s.log.Once(l.key, l.level, l.msg, l.fields...)
	}
	missing := s.reconcile(s.plan, d.plan, now)
	s.plan = d.plan
	s.incomplete = missing || len(d.plan.groups) == 0 && len(d.plan.mbm) == 0
	s.logStatus(missing || anyAtLeast(d.said, zapcore.WarnLevel))
	s.ensureFolding()
	s.syncBursts()
	s.regrouped = false
}

// anyAtLeast reports whether a line is logged at level or above.
func anyAtLeast(lines []logLine, level zapcore.Level) bool {
	for _, l := range lines {
		if l.level >= level {
			return true
		}
	}
	return false
}

// open opens one group.
func (s *uncoreScraper) open(g *counterGroup) error {
	h, err := s.opener.OpenGroup(g.cpu, g.attrs)
	if err != nil {
		g.openErr = err
		return err
	}
	// Shared with the fast sampler (burstsampler.go), whether or not one runs: one uncontended
	// lock per read.
	g.handle, g.openErr = share(h), nil
	s.regrouped = true
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
		s.log.Once(fmt.Sprintf("status/%d/%d/%d/%d/%d", p.memoryPMUs, p.pciePMUs, len(p.mbm), open, len(p.groups)), zapcore.InfoLevel,
			"Collecting uncore counters",
			zap.Int("memory_pmus", p.memoryPMUs), zap.Int("pcie_pmus", p.pciePMUs), zap.Int("mbm_domains", len(p.mbm)),
			zap.String("platform", s.plat.name), zap.Stringer("cpu", s.cpu), zap.Int("open_groups", open), zap.Int("groups", len(p.groups)))
		return
	}
	var want []string
	switch {
	case s.cpu.vendor == vendorARM64:
		if s.cfg.Memory.Enabled {
			want = append(want, "nvidia_scf_pmu")
		}
		if s.cfg.PCIe.Enabled {
			want = append(want, "nvidia_pcie_pmu")
		}
	default:
		if s.cfg.Memory.Enabled {
			want = append(want, "uncore_imc", "amd_umc")
			if s.plat.memoryFallback != nil {
				want = append(want, "amd_df")
			}
		}
		if s.cfg.PCIe.Enabled {
			want = append(want, "uncore_iio_free_running")
		}
	}
	var reason string
	switch {
	case problems:
		reason = "see the warnings above"
	case s.cpu.hypervisor:
		reason = "running under a hypervisor (cpuinfo flag \"hypervisor\"), where the Intel uncore driver does not load and AMD's is not exposed"
	case s.cpu.vendor == "AuthenticAMD":
		reason = "amd_umc needs an AMD Zen 4 or later CPU and Linux 6.7 or later"
	case s.cpu.vendor == vendorARM64:
		reason = "no NVIDIA CoreSight PMU (nvidia_cspmu, on NVIDIA Grace only; kernel options ARM_CORESIGHT_PMU_ARCH_SYSTEM_PMU and NVIDIA_CORESIGHT_PMU_ARCH_SYSTEM_PMU)"
	case s.cpu.vendor == "GenuineIntel":
		reason = "no uncore support for this CPU in this kernel, or the intel_uncore module is not loaded"
	default:
		reason = "no supported uncore PMU on this CPU"
	}
	s.log.Once("status/none", zapcore.InfoLevel, "Nothing to report: no usable uncore PMU",
		zap.String("pmus", strings.Join(want, " / ")), zap.String("dir", s.paths.pmus), zap.String("reason", reason),
		zap.Stringer("cpu", s.cpu), zap.Duration("retry_every", rediscoverEvery))
}

func (s *uncoreScraper) scrape(context.Context) (pmetric.Metrics, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ts := pcommon.NewTimestampFromTime(now)
	if s.src != nil && s.src.stamp != nil {
		// A replay: the points carry the time the sample was recorded at, on the replay's clock.
		ts = pcommon.NewTimestampFromTime(s.src.stamp(now))
	}
	s.scrapes++
	var errs scrapererror.ScrapeErrors

	ratioPMU, ratio := "", 1.0
	var wrapped, closed []string
	var closedErr error
	var gap, window time.Duration
	var bits uint
	// lost are the series a failed group costs in this scrape, so that each counts once.
	lost := map[*aggregate]bool{}
	var readErrs []error
	for _, g := range s.plan.groups {
		if g.handle == nil {
			// Not open (the open failed, or a read or reopen failed): rediscovery tries again.
			s.fail(g, lost)
			closed = append(closed, g.key)
			if closedErr == nil {
				closedErr = g.openErr
			}
			continue
		}
		if err := g.handle.Read(&g.reading); err != nil {
			// A PMU that disappeared (driver unloaded, box gone): drop the group and look again.
			_ = g.handle.Close()
			g.handle, g.openErr = nil, err
			s.regrouped = true
			s.fail(g, lost)
			s.incomplete = true
			s.log.Fail(g.key, "Cannot read uncore counters", err, zap.String("group", g.key))
			readErrs = append(readErrs, fmt.Errorf("reading %s: %w", g.key, err))
			continue
		}
		s.log.Recover(g.key, "Uncore counters readable again", zap.String("group", g.key))
		if g.wrapWindow > 0 && !g.lastRead.IsZero() && now.Sub(g.lastRead) > g.wrapWindow {
			wrapped = append(wrapped, g.key)
			gap, window, bits = now.Sub(g.lastRead), g.wrapWindow, g.counterBits
		}
		g.lastRead = now
		var maxRaw uint64
		for i, m := range g.members {
			v, ok := g.reading.Scaled(i)
			if !ok {
				// The group never ran (time_running 0): nothing to extrapolate from.
				m.agg.failedAt = s.scrapes
				continue
			}
			if v < m.last {
				// Extrapolated counts of a multiplexed group can dip when the running ratio
				// changes; the kernel's own count never goes backwards for an open event.
				v = m.last
			}
			m.agg.total.AddCounts(v-m.last, m.bpc)
			m.last = v
			maxRaw = max(maxRaw, g.reading.Values[i])
		}
		if g.reopenAfter > 0 && maxRaw >= g.reopenAfter {
			s.reopen(g)
		}
		if g.pmu != ratioPMU {
			s.recordRatio(ts, ratioPMU, ratio)
			ratioPMU, ratio = g.pmu, 1
		}
		ratio = min(ratio, g.reading.RunningRatio())
	}
	s.recordRatio(ts, ratioPMU, ratio)
	if len(closed) > 0 {
		readErrs = append(readErrs, fmt.Errorf("%d counter groups not open (%s): %w", len(closed), abbreviate(closed, 3), closedErr))
	}
	if len(readErrs) > 0 {
		errs.AddPartial(len(lost), errors.Join(readErrs...))
	}
	// Counters read further apart than they take to wrap at line rate (the background reader of
	// fold.go could not keep up, or the host was suspended): the kernel folds each read's delta
	// modulo 2^36, so whole wraps in between are lost. The values are still a lower bound of the
	// traffic (never inflated, never a reset), so no point is lost; the scrape says so.
	if len(wrapped) > 0 {
		err := fmt.Errorf("%d IIO free-running groups (%s) read %s after the previous read, longer than their %d-bit counters take to wrap at line rate (%s): bytes beyond a wrap are lost, so those series may be short: %w",
			len(wrapped), abbreviate(wrapped, 3), gap.Round(time.Second), bits, window.Round(time.Second), errWrapRisk)
		errs.AddPartial(0, err)
		s.log.Fail("wrap", "IIO free-running counters read less often than they wrap at line rate", errWrapRisk,
			zap.Int("groups", len(wrapped)), zap.Duration("gap", gap), zap.Duration("wrap_window", window), zap.Uint("bits", bits))
	} else {
		s.log.Recover("wrap", "IIO free-running counters are read often enough again not to lose wraps")
	}

	for _, a := range s.plan.aggs {
		if a.failedAt == s.scrapes {
			// Its bytes keep counting from where they were: the series goes on after the failure.
			s.series.Hold(a.key)
			continue
		}
		if a.key.combined {
			s.series.Record(a.key, a.total.Total(), monotonic, ts, func(v int64) {
				s.mb.RecordCpuuncoreMemoryIoDataPoint(ts, v, a.key.device, a.key.numa)
			})
			continue
		}
		s.series.Record(a.key, a.total.Total(), monotonic, ts, func(v int64) {
			s.mb.RecordInterconnectIoDataPoint(ts, v, a.key.component, a.key.direction, a.key.device, a.key.busID, a.key.numa)
		})
	}
	for _, m := range s.plan.mbm {
		// A plain 64-bit byte counter; it restarts when resctrl is remounted, which the series
		// turns into a new start.
		v, err := s.reader.ReadUint(m.path)
		if err != nil {
			// "Unavailable" while the RMID is not available, "Error" on a failed read.
			s.log.Fail(m.path, "Cannot read resctrl MBM counter", err)
			errs.AddPartial(1, err)
			s.series.Hold(m.key)
			continue
		}
		s.log.Recover(m.path, "resctrl MBM counter readable again")
		s.series.Record(m.key, v, monotonic, ts, func(v int64) {
			s.mb.RecordCpuuncoreMemoryIoDataPoint(ts, v, m.device, m.key.numa)
		})
	}
	s.series.Sweep()
	for _, dev := range s.plan.devices {
		s.series.Gauge(func() { s.mb.RecordCpuuncorePcieDeviceDataPoint(ts, 1, dev.device, dev.rootPort, dev.busID, dev.numa) })
	}
	for _, f := range s.plan.scales {
		s.series.Gauge(func() { s.mb.RecordCpuuncoreEventBytesPerCountDataPoint(ts, f.bpc, f.pmu, f.event, f.source) })
	}
	s.recordBursts(ts)
	md := s.mb.Emit()
	if s.src != nil && s.src.afterScrape != nil {
		if err := s.src.afterScrape(now); err != nil {
			s.log.Fail("recording", "Cannot write the recording", err)
		} else {
			s.log.Recover("recording", "Recording written again")
		}
	}

	// Rediscovery runs after the reads, so that groups kept open lose nothing.
	if s.incomplete && s.rediscovery.Due(now) {
		s.discover(now)
	}
	if s.regrouped {
		s.syncBursts()
		s.regrouped = false
	}
	return md, errs.Combine()
}

// recordRatio records the running ratio of one PMU's groups (nothing before the first PMU).
func (s *uncoreScraper) recordRatio(ts pcommon.Timestamp, pmu string, ratio float64) {
	if pmu == "" {
		return
	}
	s.series.Gauge(func() { s.mb.RecordCpuuncoreCounterRunningRatioDataPoint(ts, ratio, pmu) })
}

// fail marks the series of a group that could not be read in this scrape.
func (s *uncoreScraper) fail(g *counterGroup, lost map[*aggregate]bool) {
	for _, m := range g.members {
		m.agg.failedAt = s.scrapes
		lost[m.agg] = true
	}
}

// reopen closes and reopens a group whose hardware counters approach saturation (AMD UMC
// before upstream 2492e5aba2be). A new event restarts its hardware counter at 0; the deltas
// already taken stay in the series, which continues without a reset.
func (s *uncoreScraper) reopen(g *counterGroup) {
	_ = g.handle.Close()
	g.handle = nil
	if err := s.open(g); err != nil {
		s.incomplete = true
		s.log.Fail(g.key, "Cannot reopen counters before they saturate", err, zap.String("group", g.key))
		return
	}
	s.log.Once("reopen/"+g.key, zapcore.InfoLevel,
		"Reopened counters before their 48-bit hardware counters saturate (kernels without upstream 2492e5aba2be stop counting there); this repeats every 2^47 counts",
		zap.String("group", g.key))
}
