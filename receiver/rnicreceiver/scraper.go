package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	cfg    *Config
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	reader sysfs.Reader
	disc   discovery
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
	// rec records the readings; replay stands in for the node (recording.go).
	rec    *rnicRecorder
	replay *rnicReplay

	newEthtool func() (ethtoolStats, error)
	ethtool    ethtoolStats
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

func (s *rnicScraper) start(context.Context, component.Host) error {
	s.startTime = pcommon.NewTimestampFromTime(s.clock())
	s.series = counter.NewSeries[string](func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) },
		s.startTime, counter.SinceFirstReading())
	return s.openSource()
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
	s.reader.CloseKept()
	closeGroups(s.groups)
	return s.closeSource()
}

func (s *rnicScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	at := s.clock()
	run := &scrapeRun{at: at, now: pcommon.NewTimestampFromTime(at)}

	if s.replay != nil {
		newTree, err := s.replay.step(at)
		if newTree {
			s.rediscovery.Request()
		}
		if err != nil {
			return pmetric.NewMetrics(), err
		}
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
	s.flushRecording(at)
	if run.unlisted > 0 {
		run.errs.AddPartial(run.unlistedPoints, fmt.Errorf("and %d more failures, not listed here", run.unlisted))
	}
	return s.mb.Emit(), run.errs.Combine()
}

// refresh lists the RDMA devices (one directory read, no firmware access) and discovers them
// again when the set changed or a rediscovery is due.
func (s *rnicScraper) refresh(ctx context.Context, run *scrapeRun) {
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

// readOutcome classifies a read.
type readOutcome uint8

const (
	readOK readOutcome = iota
	// readNotProvided: the hardware does not provide the counter (sysfs.ErrNotAvailable: "N/A (no
	// PMA)", EINVAL, EOPNOTSUPP): a fact, not a failure; the file leaves the plan.
	readNotProvided
	// readGone: the file is gone (ENOENT, or ENODEV on a descriptor kept open): the device went
	// away or was renamed.
	readGone
	readFailed
)

func classify(err error) readOutcome {
	switch {
	case err == nil:
		return readOK
	case errors.Is(err, sysfs.ErrNotAvailable), errors.Is(err, errors.ErrUnsupported):
		return readNotProvided
	case errors.Is(err, os.ErrNotExist):
		return readGone
	}
	return readFailed
}

// check handles the outcome of the read of key, which feeds points points, and reports whether
// its value can be recorded. A failure is returned with the scrape's error on every scrape it
// happens and logged when it starts or changes; a counter the hardware does not provide leaves
// the plan with one info line.
func (s *rnicScraper) check(run *scrapeRun, key string, points int, err error) bool {
	switch classify(err) {
	case readOK:
		s.log.Recover(key, "Readable again")
		return true
	case readNotProvided:
		s.unavailable[key] = true
		s.log.Once(key, zapcore.InfoLevel, "Counter not provided by the hardware; not read again", zap.Error(err))
		return false
	case readGone:
		run.gone = true
	}
	s.fail(run, key, points, err)
	return false
}

// fail adds err, which cost points points, to the scrape's error and logs it when it is news.
func (s *rnicScraper) fail(run *scrapeRun, key string, points int, err error) {
	s.log.Fail(key, "Read failed; its points are missing", err)
	if run.listed < maxListedErrors {
		run.listed++
		run.errs.AddPartial(points, err)
		return
	}
	// One log line holds all of a scrape's errors: past maxListedErrors (a node-wide failure on
	// thousands of ports) they are counted there.
	run.unlisted++
	run.unlistedPoints += points
}

// readPort reads the port's files into its readings; it runs on the device's reading goroutine
// (readgroup.go) and touches nothing but r and the port.
func (s *rnicScraper) readPort(r *sysfs.Reader, p *port, slow bool) {
	for i := range p.gauges {
		g := &p.gauges[i]
		if g.off {
			continue
		}
		var b []byte
		if b, g.err = r.ReadBytesKept(g.path); g.err == nil {
			g.v, g.extra, g.err = g.def.parse(g.path, b)
		}
	}
	for i := range p.counters {
		cf := &p.counters[i]
		if cf.off || (cf.slow && !slow) {
			continue
		}
		s.readCounter(r, cf)
	}
}

func (s *rnicScraper) scrapePort(p *port, run *scrapeRun) {
	for i := range p.gauges {
		g := &p.gauges[i]
		if g.off {
			continue
		}
		if !s.check(run, g.path, g.def.points, g.err) {
			g.off = s.unavailable[g.path]
			continue
		}
		s.series.Gauge(func() { g.def.record(s.mb, run.now, p.name, g.v, g.extra) })
	}
	if run.slow {
		// Static facts, resolved at discovery: they follow the slow cadence (README.md, "Slow counters").
		s.series.Gauge(func() {
			s.mb.RecordRnicPortInfoDataPoint(run.now, 1, p.name, p.linkLayer, p.netdev, p.pciBusID, p.numaNode,
				p.hcaType, p.fwVersion, p.nodeGUID, p.boardID, p.plane)
		})
	}

	for i := range p.counters {
		cf := &p.counters[i]
		if cf.off || (cf.slow && !run.slow) {
			continue
		}
		if !s.counterRead(cf, run) {
			s.series.Hold(cf.key) // a failed read costs the point, not the series
			continue
		}
		if cf.primer {
			continue
		}
		unrepresentable := false
		pt := s.series.Record(cf.key, cf.raw, cf.spec, run.now, func(v int64) {
			// v is the count as an int64; one of 2^63 and above (negative here) or one that does not
			// fit after scaling is no count an integer point can hold.
			scaled, ok := counter.Scaled(uint64(v), cf.scale)
			if !ok {
				unrepresentable = true
				return
			}
			s.recordCounter(p, cf, uint64(v), scaled, run.now)
		})
		s.recordSaturation(&cf.flagged, !pt.Report() || unrepresentable, cf.owner, cf.name, run.now)
	}
}

// recordSaturation records rnic.counter.saturated: 1 for a counter stuck at all ones (or a value
// no integer point can hold after scaling, a 64-bit PMA counter at 2^61 and above times 4: the
// rate it would imply is not traffic), and 0 from then on once it reads normally again (a reset,
// perfquery -R).
func (s *rnicScraper) recordSaturation(flagged *bool, saturated bool, owner, name string, now pcommon.Timestamp) {
	switch {
	case saturated:
		*flagged = true
		s.series.Gauge(func() { s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, owner, name) })
	case *flagged:
		s.series.Gauge(func() { s.mb.RecordRnicCounterSaturatedDataPoint(now, 0, owner, name) })
	}
}

// readCounter reads a counter file and the files summed into it, keeping each file's error.
func (s *rnicScraper) readCounter(r *sysfs.Reader, cf *counterFile) {
	if cf.errs == nil {
		cf.errs = make([]error, 1+len(cf.sum))
	}
	cf.raw = 0
	for i := range cf.errs {
		v, err := s.readCounterFile(r, cf, cf.file(i))
		cf.errs[i] = err
		cf.raw += v
	}
}

// counterRead checks the reads of the counter's files; a failure of any of them costs the point
// and is reported against the file that failed. A file the hardware does not provide takes the
// counter out of the plan (a sum without one of its terms is not the total).
func (s *rnicScraper) counterRead(cf *counterFile, run *scrapeRun) bool {
	ok := true
	for i, err := range cf.errs {
		path := cf.file(i)
		if !s.check(run, path, cf.points(), err) {
			ok = false
			if s.unavailable[path] {
				cf.off = true
				s.unavailable[cf.key] = true
			}
		}
	}
	return ok
}

// readCounterFile reads one counter file. The ones read on every scrape keep their descriptor
// open between scrapes (sysfs.Reader.ReadBytesKept); the slow ones, read every slow_interval, are
// opened each time, so that a node does not hold a descriptor and a sysfs buffer for each of them.
func (s *rnicScraper) readCounterFile(r *sysfs.Reader, cf *counterFile, path string) (uint64, error) {
	if cf.slow && s.cfg.SlowInterval > 0 {
		return r.ReadUint(path)
	}
	return r.ReadUintKept(path)
}

// recordCounter records a counter's point: raw in the counter's unit, scaled in the metric's
// (counter.Scaled checked that both fit).
func (s *rnicScraper) recordCounter(p *port, cf *counterFile, raw uint64, scaled int64, now pcommon.Timestamp) {
	v := int64(raw)
	if cf.driver {
		s.mb.RecordRnicDriverCounterDataPoint(now, v, cf.owner, cf.name, cf.source)
	}
	switch cf.kind {
	case kindBytes:
		if p.plane {
			return // a plane of a multi-plane device: its bytes are counted by the device itself
		}
		s.mb.RecordInterconnectIoDataPoint(now, scaled, metadata.AttributeComponentRnic, cf.direction,
			cf.owner, p.pciBusID, p.numaNode)
	case kindPackets:
		if p.plane {
			return
		}
		s.mb.RecordRnicPacketsDataPoint(now, v, cf.owner, cf.direction)
	case kindPortError:
		s.mb.RecordRnicPortErrorsDataPoint(now, v, cf.owner, cf.label)
	case kindXmitWait:
		s.mb.RecordRnicPortXmitWaitDataPoint(now, v, cf.owner)
	case kindCNP:
		s.mb.RecordRnicRoceCnpDataPoint(now, v, cf.owner, cf.label)
	case kindECN:
		s.mb.RecordRnicRoceEcnMarkedDataPoint(now, v, cf.owner)
	case kindTransportEvent:
		s.mb.RecordRnicTransportEventsDataPoint(now, v, cf.owner, cf.label)
	case kindTransportError:
		s.mb.RecordRnicTransportErrorsDataPoint(now, v, cf.owner, cf.label)
	}
}

func (s *rnicScraper) scrapeNetdev(nd *netdev, run *scrapeRun) {
	if s.cfg.Metrics.InterconnectIo.Enabled {
		s.netdevBytes(nd, nd.txBytes, nd.tx, metadata.AttributeDirectionTransmit, run)
		s.netdevBytes(nd, nd.rxBytes, nd.rx, metadata.AttributeDirectionReceive, run)
	}
	if s.ethtool != nil {
		for _, tg := range nd.ethtool {
			if !tg.off {
				s.scrapeEthtoolTarget(tg, run)
			}
		}
	}
}

func (s *rnicScraper) netdevBytes(nd *netdev, path string, rd uintReading, dir metadata.AttributeDirection, run *scrapeRun) {
	if !s.check(run, path, 1, rd.err) {
		s.series.Hold(path)
		return
	}
	s.recordMonotonic(path, rd.raw, nd.name, filepath.Base(path), run.now, func(v int64) {
		s.mb.RecordInterconnectIoDataPoint(run.now, v, metadata.AttributeComponentNetdev, dir, nd.name, nd.pciBusID, nd.numaNode)
	})
}

// recordMonotonic records a plain monotonic counter (netdev and ethtool statistics); one above
// 2^63-1, which no integer point can hold, is flagged instead.
func (s *rnicScraper) recordMonotonic(key string, raw uint64, owner, name string, now pcommon.Timestamp, record func(v int64)) {
	over := false
	s.series.Record(key, raw, counter.Spec{Kind: counter.Monotonic}, now, func(v int64) {
		if over = v < 0; !over {
			record(v)
		}
	})
	if over {
		s.series.Gauge(func() { s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, owner, name) })
	}
}

func ethtoolKey(netdev string) string { return "ethtool:" + netdev }

// resolveTable picks the target's statistics by its driver, asked once.
func (s *rnicScraper) resolveTable(tg *ethtoolTarget) {
	if tg.table != nil {
		return
	}
	if drv, err := s.ethtool.Driver(tg.name); err == nil {
		tg.driver = drv
	}
	tg.table = ethtoolTable(tg.driver)
	tg.keys = make([]string, len(tg.table))
	for i, st := range tg.table {
		tg.keys[i] = ethtoolKey(tg.name) + ":" + st.name
	}
}

func (s *rnicScraper) scrapeEthtoolTarget(tg *ethtoolTarget, run *scrapeRun) {
	key := ethtoolKey(tg.name)
	stats, err := s.ethtool.Stats(tg.name)
	if err != nil {
		err = fmt.Errorf("ethtool statistics of %s: %w", tg.name, err)
	}
	if !s.check(run, key, max(len(tg.keys), 1), err) {
		tg.off = s.unavailable[key]
		for _, k := range tg.keys {
			s.series.Hold(k)
		}
		return
	}
	s.resolveTable(tg)
	for i := range tg.table {
		st := &tg.table[i]
		raw, ok := stats[st.name]
		if !ok {
			continue
		}
		s.recordMonotonic(tg.keys[i], raw, tg.name, st.name, run.now, func(v int64) { st.record(s.mb, run.now, tg.name, v) })
	}
}

// portGauge is an attribute file of a port read as a gauge on every scrape: what feeds it, how it
// parses and what it records.
type portGauge struct {
	file    string
	enabled func(metadata.MetricsConfig) bool
	// points is how many points the file feeds (what a failed read costs).
	points int
	// parse returns the file's value and, for rate, the lane count.
	parse  func(path string, b []byte) (v, extra int64, err error)
	record func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, extra int64)
}

// portGauges are the gauges of every port: state and phys_state print "%d: %s" and rate
// "<Gb/s> Gb/sec (<lanes>X <speed>)" (core sysfs.c state_show, phys_state_show, rate_show).
var portGauges = []portGauge{
	{
		file: "state", points: 1, parse: parseState,
		enabled: func(m metadata.MetricsConfig) bool { return m.RnicPortState.Enabled },
		record: func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, _ int64) {
			mb.RecordRnicPortStateDataPoint(now, v, port)
		},
	},
	{
		file: "phys_state", points: 1, parse: parseState,
		enabled: func(m metadata.MetricsConfig) bool { return m.RnicPortPhysicalState.Enabled },
		record: func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, _ int64) {
			mb.RecordRnicPortPhysicalStateDataPoint(now, v, port)
		},
	},
	{
		file: "rate", points: 2, parse: parseRate,
		enabled: func(m metadata.MetricsConfig) bool { return m.RnicPortRate.Enabled || m.RnicPortWidth.Enabled },
		record: func(mb *metadata.MetricsBuilder, now pcommon.Timestamp, port string, v, lanes int64) {
			mb.RecordRnicPortRateDataPoint(now, v, port)
			if lanes > 0 {
				mb.RecordRnicPortWidthDataPoint(now, lanes, port)
			}
		},
	},
}

// parseState fits portGauge.parse.
func parseState(path string, b []byte) (int64, int64, error) {
	v, err := parseStateID(path, b)
	return v, 0, err
}

// parseStateID parses a state or phys_state file: "4: ACTIVE", "5: LinkUp".
func parseStateID(path string, b []byte) (int64, error) {
	id, _, ok := bytes.Cut(b, []byte(":"))
	if !ok {
		return 0, &sysfs.ValueError{Path: path, Value: string(b), Err: errors.New(`want "<id>: <name>"`)}
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(id)), 10, 64)
	if err != nil {
		return 0, &sysfs.ValueError{Path: path, Value: string(b), Err: err}
	}
	return v, nil
}

// parseRate parses the rate file: "<Gb/s> Gb/sec (<lanes>X <speed>)", e.g. "100 Gb/sec (4X EDR)",
// "2.5 Gb/sec (1X SDR)", "25 Gb/sec (1X EDR)" (core sysfs.c rate_show). Gb is 10^9 bits. An
// unpopulated port may print "0 GB/sec" or omit the lane part; both parse, with lanes 0.
func parseRate(path string, b []byte) (bytesPerSecond, lanes int64, err error) {
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0, 0, &sysfs.ValueError{Path: path, Value: string(b), Err: errors.New(`want "<n> Gb/sec (<lanes>X <speed>)"`)}
	}
	gbps, perr := strconv.ParseFloat(string(fields[0]), 64)
	// The fastest link there is runs at 1.6 Tb/s; anything not in [0, 1e5] Gb/s (NaN included) is garbage.
	if perr != nil || !(gbps >= 0 && gbps <= 1e5) {
		return 0, 0, &sysfs.ValueError{Path: path, Value: string(b), Err: errors.New("bad rate")}
	}
	if len(fields) >= 4 && eightBTenB[string(bytes.TrimSuffix(fields[3], []byte(")")))] {
		// rate_show prints the signalling rate; SDR, DDR and QDR are 8b/10b coded, so the data
		// rate is 80 % of it (FDR10 and later use 64b/66b or better, about the data rate).
		gbps *= 0.8
	}
	bytesPerSecond = int64(gbps * 1e9 / 8)
	if len(fields) >= 3 {
		l := bytes.TrimPrefix(fields[2], []byte("("))
		if x := bytes.IndexByte(l, 'X'); x > 0 {
			if n, err := strconv.ParseInt(string(l[:x]), 10, 64); err == nil && n > 0 {
				lanes = n
			}
		}
	}
	return bytesPerSecond, lanes, nil
}

// eightBTenB are the InfiniBand speeds with 8b/10b line coding (IBA vol 2, 5.2.2; core sysfs.c
// rate_show prints 25/50/100 deci-Gb/s per lane for them).
var eightBTenB = map[string]bool{"SDR": true, "DDR": true, "QDR": true}
