package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	"github.com/otelcol-iclens/otelcol-iclens/internal/schedule"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

type rnicScraper struct {
	id     component.ID // the receiver's, which a capture is named by
	cfg    *Config
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	reader sysfs.Reader
	// unregisterCapture takes the ring back from the capture extension (bursts.capture).
	unregisterCapture func()
	disc              discovery
	// clock is read once per scrape (and once at start, for the gauges' start time).
	clock     func() time.Time
	startTime pcommon.Timestamp
	series    *counter.Series[string]
	log       *errtrack.Log

	// plan is what the last discovery produced; rediscovery says when to discover again (a read
	// found a device gone, a stuck discovery returned, a replay discovered again).
	plan        *plan
	rediscovery *schedule.Schedule
	// unavailable are the files and ethtool netdevs the hardware does not provide
	// (sysfs.ErrNotAvailable, EOPNOTSUPP): left out of every plan from then on.
	unavailable map[string]bool

	// groups are the ports by device and the netdevs, each read on a goroutine of its own with a
	// deadline; stuck are the groups whose reads did not return in time (readgroup.go).
	groups []*readGroup
	stuck  map[string]*stuckRead
	timer  *time.Timer
	// discStuck are the devices whose discovery reads did not return in time, each with the
	// channel closed when they do (readgroup.go discoverDeviceWithin).
	discStuck map[string]chan struct{}

	topo      *topology
	topoSched *schedule.Schedule

	// slowAt is when the slow counters were last read (zero: read them on the next scrape).
	slowAt time.Time

	// root is the host root the scraper reads: root_path, or a replay's materialized tree.
	root string
	// confined: every read resolves inside root (confine).
	confined bool
	// rec records the readings; replay stands in for the node (recording.go).
	rec    *rnicRecorder
	replay *rnicReplay

	newEthtool func() (ethtoolStats, error)
	ethtool    ethtoolStats

	// bursts is the fast sampler (bursts.period), or on a replay the fold of the recorded
	// sub-interval samples; nil when neither.
	bursts *burstSampler
	// newBurstTicker, when set, makes the fast sampler's ticker (tests drive it).
	newBurstTicker func(time.Duration) (<-chan time.Time, func())
}

// scrapeRun is the state of one scrape, handed down instead of kept in the scraper: its clock
// reading, whether it reads the slow counters, and its errors.
type scrapeRun struct {
	at   time.Time
	now  pcommon.Timestamp
	slow bool
	errs scrapererror.ScrapeErrors
	// listed counts the errors put into the scrape's error; past maxListedErrors they are counted
	// in unlisted and their points in unlistedPoints.
	listed, unlisted, unlistedPoints int
	// gone: a read found a device gone; the scrape asks for a rediscovery.
	gone bool
}

// maxListedErrors caps the errors joined into a scrape's error (one log line).
const maxListedErrors = 20

func newScraper(cfg *Config, set receiver.Settings) *rnicScraper {
	s := &rnicScraper{
		id:          set.ID,
		cfg:         cfg,
		logger:      set.Logger,
		mb:          metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		clock:       time.Now,
		log:         errtrack.NewLog(set.Logger),
		plan:        &plan{},
		rediscovery: schedule.New(0),
		topoSched:   schedule.New(cfg.Topology.RefreshInterval),
		unavailable: map[string]bool{},
		newEthtool:  newIoctlEthtool,
		stuck:       map[string]*stuckRead{},
		discStuck:   map[string]chan struct{}{},
	}
	s.disc = discovery{sys: cfg.sysRoot(), cfg: cfg, metrics: cfg.Metrics, reader: &s.reader}
	s.reader.SetMaxKept(maxKeptFiles())
	s.root = cfg.rootPath()
	return s
}

func (s *rnicScraper) start(_ context.Context, host component.Host) error {
	s.startTime = pcommon.NewTimestampFromTime(s.clock())
	s.series = counter.NewSeries[string](func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) },
		s.startTime, counter.SinceFirstReading())
	if err := s.openSource(); err != nil {
		return err
	}
	if err := s.registerCapture(host); err != nil {
		return errors.Join(err, s.closeSource())
	}
	s.startBursts()
	return nil
}

// startBursts starts the fast sampler on a live node with bursts.period set. A replay never reads
// fast: it folds the sub-interval samples its recording carries, whatever its own period.
func (s *rnicScraper) startBursts() {
	switch {
	case s.replay != nil:
		s.bursts = newBurstSampler(s.cfg.Bursts, s.logger, s.clock)
	case s.cfg.Bursts.Period > 0:
		s.bursts = newBurstSampler(s.cfg.Bursts, s.logger, s.clock)
		if s.newBurstTicker != nil {
			s.bursts.loop.NewTicker = s.newBurstTicker
		}
		if s.rec != nil {
			s.rec.burstPeriod = s.cfg.Bursts.Period
			s.bursts.onPass = s.rec.addPass
		}
		s.bursts.start(s.root)
	}
}

// checkRoot says at start when root_path does not lead to a sysfs: a typo or a missing mount
// would otherwise look like a node without RDMA hardware. The receiver keeps running (the mount
// may come later).
func (s *rnicScraper) checkRoot() {
	if fi, err := os.Stat(s.root); err != nil || !fi.IsDir() {
		s.logger.Warn("root_path does not exist or is not a directory; nothing will be found until it does",
			zap.String("root_path", s.root), zap.Error(err))
		return
	}
	if _, err := os.Stat(filepath.Join(s.root, "sys", "class")); err != nil {
		s.logger.Warn("root_path has no sys/class: mount the host's /sys at root_path/sys",
			zap.String("root_path", s.root), zap.Error(err))
	}
}

func (s *rnicScraper) shutdown(context.Context) error {
	// A stuck group's descriptors stay with its goroutine: closing them under a blocked read could
	// hand the number to another file. The process is going away anyway.
	if s.bursts != nil {
		s.bursts.shutdown()
	}
	if s.unregisterCapture != nil {
		s.unregisterCapture()
		s.unregisterCapture = nil
	}
	s.reader.CloseKept()
	closeGroups(s.groups)
	return s.closeSource()
}

func (s *rnicScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	at := s.clock()
	run := &scrapeRun{at: at, now: pcommon.NewTimestampFromTime(at)}

	if s.replay != nil {
		newTree, stamp, err := s.replay.step(at)
		if newTree {
			s.rediscovery.Request()
		}
		if err != nil {
			return pmetric.NewMetrics(), err
		}
		// The points carry the time the sample was recorded at (on the replay's clock), so that
		// every rate over a replay is the recorded one however late this scrape runs; the
		// schedules (slow counters, rediscovery) keep the collection clock.
		run.now = pcommon.NewTimestampFromTime(stamp)
	}
	s.checkStuckDiscoveries(run)
	// The device list is read with the slow counters, on every scrape while there is no port, and
	// when a rediscovery is due (README.md, "Slow counters").
	if s.rediscovery.Due(at) || len(s.plan.ports) == 0 || s.slowCountersDue(at) {
		s.refresh(ctx, run)
	}
	s.refreshTopology(run)
	run.slow = s.slowCountersDue(at)
	if s.topo != nil {
		s.series.Gauge(func() { s.topo.record(s.mb, run.now) })
	}
	for _, g := range s.groups {
		if !s.readGroupFiles(ctx, g, run) {
			continue
		}
		for _, p := range g.ports {
			s.scrapePort(p, run)
		}
		for _, nd := range g.netdevs {
			s.scrapeNetdev(nd, run)
		}
	}
	if run.slow {
		// Only now has every live series been observed since the last sweep (README.md, "Slow counters").
		s.series.Sweep()
		s.slowAt = at
	}
	if run.gone {
		// A file that was there at discovery is gone: the device went away or was renamed.
		s.rediscovery.Request()
	}
	hists := s.recordBursts(run)
	// On the points' time: the collection clock live, the replay's clock in a replay (whose
	// captured passes are on it too).
	s.flushRecording(run.now.AsTime())
	if run.unlisted > 0 {
		run.errs.AddPartial(run.unlistedPoints, fmt.Errorf("and %d more failures, not listed here", run.unlisted))
	}
	md := s.mb.Emit()
	appendBurstHistograms(md, hists, run.now)
	return md, run.errs.Combine()
}

// refresh lists the RDMA devices (one directory read, no firmware access) and discovers them
// again when the set changed or a rediscovery is due.
func (s *rnicScraper) refresh(ctx context.Context, run *scrapeRun) {
	if s.replay == nil {
		s.confine()
	}
	devices, err := s.disc.listDevices()
	if err != nil {
		s.fail(run, s.disc.classDir(), 0, fmt.Errorf("listing RDMA devices: %w", err))
		return
	}
	// One directory read per device: a port added to a device that is already known (a port
	// brought up, a multi-plane device growing planes) is found as a new device is.
	portNums := s.disc.portNumbersOf(devices)
	if !s.rediscovery.Due(run.at) && s.plan.sameDevices(devices, portNums) {
		return
	}
	s.rediscovery.Done(run.at)
	// The kept descriptors belong to the old plan: a path may now lead to another device.
	s.reader.CloseKept()
	closeGroups(s.groups)
	next, derrs := s.disc.discover(devices, portNums, func(dev string) ([]*port, error) {
		return s.discoverDeviceWithin(ctx, dev, run)
	})
	for _, de := range derrs {
		s.fail(run, "discovery:"+de.device, 0, de.err)
	}
	s.reconcile(s.plan, next)
	s.plan = next
	s.groups = s.groupsOf(next)
	if s.bursts != nil {
		s.bursts.setTargets(s.burstTargets(next))
	}
	// New ports are read in full on their first scrape, and the topology follows the devices.
	s.slowAt = time.Time{}
	s.topoSched.Request()
	if s.rec != nil {
		if err := s.rec.snapshot(run.at, next.ports, next.netdevs, s.cfg.Topology.Enabled && topologyEnabled(s.cfg.Metrics)); err != nil {
			s.log.Fail("recording", "Cannot record the device tree", err)
		}
	}
	s.forgetGone(devices)
	s.logPlan(next)
}

// reconcile carries what the scraper learned about each series across a rediscovery, by series
// key: a counter flagged saturated, the ethtool table of a netdev, and what the hardware does not
// provide.
func (s *rnicScraper) reconcile(old, next *plan) {
	flagged := map[string]bool{}
	tables := map[string]*ethtoolTarget{}
	for _, p := range old.ports {
		for i := range p.counters {
			if p.counters[i].flagged {
				flagged[p.counters[i].key] = true
			}
		}
	}
	for _, nd := range old.netdevs {
		for _, tg := range nd.ethtool {
			tables[tg.name] = tg
		}
	}
	for _, p := range next.ports {
		for i := range p.gauges {
			p.gauges[i].off = s.unavailable[p.gauges[i].path]
		}
		for i := range p.counters {
			cf := &p.counters[i]
			cf.flagged = flagged[cf.key]
			cf.off = s.unavailable[cf.key]
		}
	}
	for _, nd := range next.netdevs {
		for _, tg := range nd.ethtool {
			if o := tables[tg.name]; o != nil {
				tg.driver, tg.table, tg.keys = o.driver, o.table, o.keys
			}
			tg.off = s.unavailable[ethtoolKey(tg.name)]
		}
	}
}

// forgetGone drops what the Log holds about devices that are no longer listed, so that it does
// not grow and a device that comes back is reported afresh.
func (s *rnicScraper) forgetGone(devices []string) {
	class := s.disc.classDir() + string(filepath.Separator)
	listed := map[string]bool{}
	for _, d := range devices {
		listed[d] = true
	}
	s.log.Forget(func(key string) bool {
		rest, ok := strings.CutPrefix(key, class)
		if !ok {
			return true
		}
		dev, _, _ := strings.Cut(rest, string(filepath.Separator))
		return listed[dev]
	})
}

// logPlan says what a discovery found, and what the hardware does not provide.
func (s *rnicScraper) logPlan(pl *plan) {
	if len(pl.ports) == 0 {
		s.log.Once("rdma:none", zapcore.InfoLevel, "No RDMA ports found; the receiver stays idle and picks devices up when they appear.",
			zap.String("path", s.disc.classDir()))
	} else {
		names := make([]string, len(pl.ports))
		for i, p := range pl.ports {
			names[i] = p.name
		}
		s.logger.Info("RDMA ports found", zap.Strings("ports", names), zap.Int("netdevs", len(pl.netdevs)))
		s.log.Forget(func(key string) bool { return key != "rdma:none" })
	}
	for _, p := range pl.ports {
		if len(p.missingAttrs) > 0 {
			s.log.Once(p.dir+":attrs", zapcore.InfoLevel, "Port attribute files missing; the port is reported without them",
				zap.String("port", p.name), zap.Strings("missing", p.missingAttrs), zap.String("path", p.dir))
		}
		for _, na := range p.notProvided {
			s.log.Once(na.path, zapcore.InfoLevel, "Counters not provided by the hardware; not read", zap.String("port", p.name), zap.Error(na.err))
		}
	}
	if withoutCounters(pl.ports) {
		s.log.Once("rdma:compat", zapcore.WarnLevel, "RDMA ports have no counters/ or hw_counters/ directories: this sysfs shows the compat devices of "+
			"a network namespace other than the host's (RDMA netns \"shared\" mode), which carry state and rate only. "+
			"Run the collector in the host network namespace (hostNetwork: true) or mount the host's /sys at root_path/sys.",
			zap.String("path", s.disc.classDir()))
	}
}

// refreshTopology resolves the PCIe topology after a discovery and every refresh interval.
func (s *rnicScraper) refreshTopology(run *scrapeRun) {
	tc := s.cfg.Topology
	if !tc.Enabled || !topologyEnabled(s.cfg.Metrics) || !s.topoSched.Due(run.at) {
		return
	}
	s.topoSched.Done(run.at)
	topo, err := resolveTopology(&s.reader, s.root, s.disc.sys, s.plan.ports, tc.AllPairs)
	if err != nil {
		s.fail(run, "topology", 0, fmt.Errorf("PCI topology: %w", err))
	} else {
		s.log.Recover("topology", "PCI topology readable again")
	}
	s.topo = topo
}
