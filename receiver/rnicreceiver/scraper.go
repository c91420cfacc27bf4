package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

type rnicScraper struct {
	cfg      *Config
	logger   *zap.Logger
	mb       *metadata.MetricsBuilder
	reader   sysfs.Reader
	disc     discovery
	series   *counter.Tracker[string]
	failures *errtrack.Tracker

	// The device set the current plan was built from; the plan is rebuilt when it changes or when a
	// read says a device went away.
	devices    []string
	portNums   map[string][]string // the port numbers of each device at the last discovery
	ports      []*port
	netdevs    []*netdev
	rediscover bool

	// groups are the ports by device and the netdevs, each read on a goroutine of its own with a
	// deadline; stuck are the groups whose reads did not return in time (readgroup.go).
	groups []*readGroup
	stuck  map[string]*stuckRead
	timer  *time.Timer
	// discStuck are the devices whose discovery reads did not return in time, each with the
	// channel closed when they do (readgroup.go discoverDeviceWithin).
	discStuck map[string]chan struct{}

	topo   *topology
	topoAt time.Time

	// slowAt is when the slow counters were last read (zero: read them on the next scrape);
	// slowDue says whether the current scrape reads them (cadence.go).
	slowAt  time.Time
	slowDue bool

	// root is the host root the scraper reads: root_path, or a replay's materialized tree.
	root string
	// rec records the readings; replay stands in for the node (recording.go).
	rec    *rnicRecorder
	replay *rnicReplay

	newEthtool func() (ethtoolStats, error)
	ethtool    ethtoolStats

	// hardwareLogged is set once the absence (or presence) of devices was logged, so that a node
	// without RDMA hardware says so once and then stays quiet.
	hardwareLogged bool
	hadDevices     bool
	// noCountersLogged: the warning about ports without counter directories was given.
	noCountersLogged bool

	// listed and unlisted count the errors of the current scrape put into its error, and those
	// past maxListedErrors.
	listed, unlisted int

	// starts points the builder at each series' start timestamp.
	starts *counter.StartTimes
}

// maxListedErrors caps the errors joined into a scrape's error (one log line).
const maxListedErrors = 20

// maxKeptFiles caps the descriptors kept open between scrapes (sysfs.Reader.SetMaxKept): a
// quarter of the process's descriptor limit, and at most 8192 (about 540 RoCE ports of 15 files
// read on every scrape); past it the files are read with open-read-close.
func maxKeptFiles() int {
	const most = 8192
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return most
	}
	return int(min(lim.Cur/4, most))
}

func newScraper(cfg *Config, set receiver.Settings) *rnicScraper {
	s := &rnicScraper{
		cfg:        cfg,
		logger:     set.Logger,
		mb:         metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		series:     counter.NewTracker[string](counter.SinceFirstReading()),
		failures:   errtrack.New(),
		newEthtool: newIoctlEthtool,
		rediscover: true,
		stuck:      map[string]*stuckRead{},
		discStuck:  map[string]chan struct{}{},
	}
	s.starts = counter.NewStartTimes(func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) })
	s.disc = discovery{sys: cfg.sysRoot(), cfg: cfg, metrics: cfg.Metrics, reader: &s.reader}
	s.reader.SetMaxKept(maxKeptFiles())
	s.root = cfg.rootPath()
	return s
}

func (s *rnicScraper) start(context.Context, component.Host) error {
	switch {
	case s.cfg.Recording.Replay != "":
		// Asked for explicitly: a replay that cannot be read fails the start.
		rp, err := newRNICReplay(s.cfg)
		if err != nil {
			return err
		}
		s.replay, s.root = rp, rp.player.Root()
		s.disc.sys = filepath.Join(s.root, "sys")
		// The recording came from elsewhere: no read may leave its tree.
		if err := s.reader.Confine(s.root); err != nil {
			_ = rp.close()
			return err
		}
		s.reader.OnOpen = rp.player.Fault
		s.ethtool = rp
	case s.cfg.Recording.Write != "":
		rc, err := newRNICRecorder(s.cfg)
		if err != nil {
			return err
		}
		s.rec = rc
		s.reader.OnRead = rc.onRead
		s.logger.Info("Recording the readings", zap.String("path", rc.w.Path()))
	}
	if s.replay == nil {
		s.checkRoot()
	}
	if s.ethtool == nil && s.cfg.Ethtool.Enabled && ethtoolEnabled(s.cfg.Metrics) {
		e, err := s.newEthtool()
		if err != nil {
			// Not fatal: the sysfs metrics do not need it.
			s.logger.Warn("ethtool statistics unavailable; PFC and pause metrics will be missing", zap.Error(err))
		} else {
			s.ethtool = e
			if s.rec != nil {
				s.ethtool = &recordingEthtool{ethtoolStats: e, r: s.rec}
			}
		}
	}
	return nil
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
	if s.ethtool != nil {
		s.ethtool.Close()
		s.ethtool = nil
	}
	var err error
	if s.rec != nil {
		err = s.rec.close()
		s.rec = nil
	}
	if s.replay != nil {
		err = errors.Join(err, s.replay.close())
		s.replay = nil
	}
	return err
}

func (s *rnicScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	now := pcommon.NewTimestampFromTime(time.Now())
	var errs scrapererror.ScrapeErrors

	if s.replay != nil {
		newTree, err := s.replay.step(now.AsTime())
		if newTree {
			s.rediscover = true
		}
		if err != nil {
			return pmetric.NewMetrics(), err
		}
	}
	s.checkStuckDiscoveries()
	if s.listDue(now.AsTime()) {
		s.refresh(ctx, &errs)
	} else {
		s.refreshTopology(&errs, false)
	}
	s.slowDue = s.slowCountersDue(now.AsTime())
	if s.topo != nil {
		s.topo.record(s.mb, now)
	}
	for _, g := range s.groups {
		if !s.readGroupFiles(ctx, g, &errs) {
			continue
		}
		for _, p := range g.ports {
			s.scrapePort(p, now, &errs)
		}
		for _, nd := range g.netdevs {
			s.scrapeNetdev(nd, now, &errs)
		}
	}
	if s.slowDue {
		// Only now has every live series been observed since the last sweep (cadence.go).
		s.series.Sweep()
		s.slowAt = now.AsTime()
	}
	if s.rec != nil {
		if err := s.rec.flush(); err != nil {
			s.logger.Warn("cannot write the recording", zap.Error(err))
		}
	}
	if s.unlisted > 0 {
		errs.AddPartial(s.unlisted, fmt.Errorf("and %d more failures, not listed here (logged at debug level)", s.unlisted))
	}
	s.listed, s.unlisted = 0, 0
	return s.mb.Emit(), errs.Combine()
}

// refresh lists the RDMA devices (one directory read, no firmware access) and rebuilds the plan
// when the set changed. Static facts are resolved only then.
func (s *rnicScraper) refresh(ctx context.Context, errs *scrapererror.ScrapeErrors) {
	devices, err := s.disc.listDevices()
	if err != nil {
		s.report(errs, s.disc.classDir(), fmt.Errorf("listing RDMA devices: %w", err))
		return
	}
	portNums := make(map[string][]string, len(devices))
	for _, dev := range devices {
		// One directory read per device: a port added to a device that is already known (a
		// port brought up, a multi-plane device growing planes) is found as a new device is.
		portNums[dev] = s.disc.portNumbers(dev)
	}
	if !s.rediscover && slices.Equal(devices, s.devices) && maps.EqualFunc(portNums, s.portNums, slices.Equal) {
		s.refreshTopology(errs, false)
		return
	}
	s.rediscover = false
	s.devices, s.portNums = devices, portNums
	// The kept descriptors belong to the old plan: a path may now lead to another device.
	s.reader.CloseKept()
	closeGroups(s.groups)
	// New ports are read in full on their first scrape.
	s.slowAt = time.Time{}
	ports, netdevs, derrs := s.disc.discover(devices, func(dev string) ([]*port, error) {
		return s.discoverDeviceWithin(ctx, dev, errs)
	})
	for _, err := range derrs {
		s.report(errs, "discovery:"+err.Error(), err)
	}
	s.ports, s.netdevs = ports, netdevs
	s.groups = s.groupsOf(ports, netdevs)
	if s.rec != nil {
		if err := s.rec.snapshot(ports, netdevs, s.cfg.Topology.Enabled && topologyEnabled(s.cfg.Metrics)); err != nil {
			s.logger.Warn("cannot record the device tree", zap.Error(err))
		}
	}
	// Failures are reported again against the new plan, once.
	s.failures = errtrack.New()
	s.logHardware()
	if withoutCounters(ports) && !s.noCountersLogged {
		s.noCountersLogged = true
		s.logger.Warn("RDMA ports have no counters/ or hw_counters/ directories: this sysfs shows the compat devices of "+
			"a network namespace other than the host's (RDMA netns \"shared\" mode), which carry state and rate only. "+
			"Run the collector in the host network namespace (hostNetwork: true) or mount the host's /sys at root_path/sys.",
			zap.String("path", s.disc.classDir()))
	}
	s.refreshTopology(errs, true)
}

// refreshTopology resolves the PCIe topology after a discovery (force) or when the refresh
// interval has passed.
func (s *rnicScraper) refreshTopology(errs *scrapererror.ScrapeErrors, force bool) {
	tc := s.cfg.Topology
	if !tc.Enabled || !topologyEnabled(s.cfg.Metrics) {
		return
	}
	if !force && (tc.RefreshInterval == 0 || time.Since(s.topoAt) < tc.RefreshInterval) {
		return
	}
	topo, err := resolveTopology(&s.reader, s.root, s.disc.sys, s.ports, tc.AllPairs)
	if err != nil {
		s.report(errs, "topology", fmt.Errorf("PCI topology: %w", err))
	}
	s.topo, s.topoAt = topo, time.Now()
}

func (s *rnicScraper) logHardware() {
	switch {
	case len(s.ports) == 0 && !s.hardwareLogged:
		s.logger.Info("No RDMA ports found; the receiver stays idle and picks devices up when they appear.",
			zap.String("path", s.disc.classDir()))
		s.hardwareLogged, s.hadDevices = true, false
	case len(s.ports) > 0:
		names := make([]string, len(s.ports))
		for i, p := range s.ports {
			names[i] = p.name
		}
		s.logger.Info("RDMA ports found", zap.Strings("ports", names), zap.Int("netdevs", len(s.netdevs)))
		s.hardwareLogged, s.hadDevices = true, true
	case s.hadDevices:
		s.logger.Info("All RDMA ports are gone; the receiver stays idle until devices appear.")
		s.hadDevices = false
	}
}

// report adds err to the scrape's errors the first time key fails this way; repeats of the same
// failure are logged at debug level only, so a counter that always fails does not flood the log.
func (s *rnicScraper) report(errs *scrapererror.ScrapeErrors, key string, err error) {
	if errors.Is(err, os.ErrNotExist) {
		// A file that was there at discovery is gone: the device went away or was renamed.
		s.rediscover = true
	}
	if s.failures.Fail(key, err) {
		if s.listed < maxListedErrors {
			s.listed++
			errs.AddPartial(1, err)
			return
		}
		// One log line holds all of a scrape's errors: past maxListedErrors (a node-wide failure
		// on thousands of ports) they are counted there and logged at debug level each.
		s.unlisted++
		s.logger.Debug("failure not listed in the scrape's error", zap.Error(err))
		return
	}
	s.logger.Debug("still failing", zap.Error(err))
}

func (s *rnicScraper) ok(key string) {
	if s.failures.Recover(key) {
		s.logger.Info("counter readable again", zap.String("path", key))
	}
}

// readPort reads the port's files into its readings; it runs on the device's reading goroutine
// (readgroup.go) and touches nothing but r and the port.
func (s *rnicScraper) readPort(r *sysfs.Reader, p *port, slow bool) {
	if p.statePath != "" {
		p.state.v, p.state.err = readStateID(r, p.statePath)
	}
	if p.physStatePath != "" {
		p.physState.v, p.physState.err = readStateID(r, p.physStatePath)
	}
	if p.ratePath != "" {
		p.rate.v, p.lanes, p.rate.err = readRate(r, p.ratePath)
	}
	for i := range p.counters {
		cf := &p.counters[i]
		if cf.slow && !slow {
			continue
		}
		s.readCounter(r, cf)
	}
}

func (s *rnicScraper) scrapePort(p *port, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	if p.statePath != "" {
		if p.state.err != nil {
			s.report(errs, p.statePath, p.state.err)
		} else {
			s.ok(p.statePath)
			s.mb.RecordRnicPortStateDataPoint(now, p.state.v, p.name)
		}
	}
	if p.physStatePath != "" {
		if p.physState.err != nil {
			s.report(errs, p.physStatePath, p.physState.err)
		} else {
			s.ok(p.physStatePath)
			s.mb.RecordRnicPortPhysicalStateDataPoint(now, p.physState.v, p.name)
		}
	}
	if p.ratePath != "" {
		if p.rate.err != nil {
			s.report(errs, p.ratePath, p.rate.err)
		} else {
			s.ok(p.ratePath)
			s.mb.RecordRnicPortRateDataPoint(now, p.rate.v, p.name)
			if p.lanes > 0 {
				s.mb.RecordRnicPortWidthDataPoint(now, p.lanes, p.name)
			}
		}
	}
	if s.slowDue {
		// Static facts, resolved at discovery: they follow the slow cadence (cadence.go).
		s.mb.RecordRnicPortInfoDataPoint(now, 1, p.name, p.linkLayer, p.netdev, p.pciBusID, p.numaNode,
			p.hcaType, p.fwVersion, p.nodeGUID, p.boardID, p.plane)
	}

	for i := range p.counters {
		cf := &p.counters[i]
		if cf.slow && !s.slowDue {
			continue
		}
		if !s.counterRead(cf, errs) {
			s.series.Hold(cf.key) // a failed read costs the point, not the series (metadata/start-time.md)
			continue
		}
		if cf.primer {
			continue
		}
		pt := s.series.Observe(cf.key, cf.raw, cf.spec, now)
		v, representable := counter.Scaled(pt.Value, cf.scale)
		if !pt.Report() || !representable {
			// Stuck at all ones, or a value no integer point can hold after scaling (a 64-bit
			// PMA counter at 2^61 and above times 4): the rate it would imply is not traffic.
			// Say so instead.
			s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, cf.owner, cf.name)
			cf.flagged = true
			continue
		}
		if cf.flagged {
			// Out of saturation (a reset, perfquery -R): the flag says so from now on.
			s.mb.RecordRnicCounterSaturatedDataPoint(now, 0, cf.owner, cf.name)
		}
		s.starts.Use(pt.Start)
		s.recordCounter(p, cf, pt.Value, v, now)
	}
}

// readCounter reads a counter file and the files summed into it, keeping each file's error.
func (s *rnicScraper) readCounter(r *sysfs.Reader, cf *counterFile) {
	if cf.errs == nil {
		cf.errs = make([]error, 1+len(cf.sum))
	}
	cf.raw = 0
	for i := range cf.errs {
		path := cf.path
		if i > 0 {
			path = cf.sum[i-1]
		}
		v, err := s.readCounterFile(r, cf, path)
		cf.errs[i] = err
		cf.raw += v
	}
}

// counterRead reports the errors of the counter's files; a failure of any of them costs the point
// and is reported against the file that failed.
func (s *rnicScraper) counterRead(cf *counterFile, errs *scrapererror.ScrapeErrors) bool {
	ok := true
	for i, err := range cf.errs {
		path := cf.path
		if i > 0 {
			path = cf.sum[i-1]
		}
		if err != nil {
			s.report(errs, path, err)
			ok = false
			continue
		}
		s.ok(path)
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

func (s *rnicScraper) scrapeNetdev(nd *netdev, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	if s.cfg.Metrics.InterconnectIo.Enabled {
		s.netdevBytes(nd, nd.txBytes, nd.tx, metadata.AttributeDirectionTransmit, now, errs)
		s.netdevBytes(nd, nd.rxBytes, nd.rx, metadata.AttributeDirectionReceive, now, errs)
	}
	if s.ethtool != nil {
		s.scrapeEthtool(nd, now, errs)
	}
}

func (s *rnicScraper) netdevBytes(nd *netdev, path string, rd uintReading, dir metadata.AttributeDirection, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	raw, err := rd.raw, rd.err
	if err != nil {
		s.report(errs, path, err)
		s.series.Hold(path)
		return
	}
	s.ok(path)
	pt := s.series.Observe(path, raw, counter.Spec{Kind: counter.Monotonic}, now)
	v, ok := counter.Scaled(pt.Value, 1)
	if !ok {
		// Above 2^63-1: no integer point can hold it.
		s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, nd.name, filepath.Base(path))
		return
	}
	s.starts.Use(pt.Start)
	s.mb.RecordInterconnectIoDataPoint(now, v, metadata.AttributeComponentNetdev, dir,
		nd.name, nd.pciBusID, nd.numaNode)
}

func (s *rnicScraper) scrapeEthtool(nd *netdev, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	for _, tg := range nd.ethtool {
		s.scrapeEthtoolTarget(tg, now, errs)
	}
}

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
		tg.keys[i] = "ethtool:" + tg.name + ":" + st.name
	}
}

func (s *rnicScraper) scrapeEthtoolTarget(tg *ethtoolTarget, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	key := "ethtool:" + tg.name
	stats, err := s.ethtool.Stats(tg.name)
	if err != nil {
		s.report(errs, key, fmt.Errorf("ethtool statistics of %s: %w", tg.name, err))
		for _, k := range tg.keys {
			s.series.Hold(k)
		}
		return
	}
	s.ok(key)
	s.resolveTable(tg)
	for i := range tg.table {
		st := &tg.table[i]
		raw, ok := stats[st.name]
		if !ok {
			continue
		}
		pt := s.series.Observe(tg.keys[i], raw, counter.Spec{Kind: counter.Monotonic}, now)
		v, ok := counter.Scaled(pt.Value, 1)
		if !ok {
			s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, tg.name, st.name)
			continue
		}
		s.starts.Use(pt.Start)
		switch st.metric {
		case ethPFCPause:
			s.mb.RecordRnicPfcPauseFramesDataPoint(now, v, tg.name, st.direction, st.priority)
		case ethPFCPauseDuration:
			s.mb.RecordRnicPfcPauseDurationDataPoint(now, v, tg.name, st.direction, st.priority)
		case ethPause:
			s.mb.RecordRnicPauseFramesDataPoint(now, v, tg.name, st.direction)
		case ethPauseDuration:
			s.mb.RecordRnicPauseDurationDataPoint(now, v, tg.name, st.direction)
		case ethPauseStorm:
			s.mb.RecordRnicPauseStormEventsDataPoint(now, v, tg.name, st.severity)
		case ethPhyBytes:
			s.mb.RecordRnicPhyIoDataPoint(now, v, tg.name, st.direction)
		case ethPhyDiscards:
			s.mb.RecordRnicPhyDiscardsDataPoint(now, v, tg.name, st.direction)
		}
	}
}

// readStateID parses a state or phys_state file: "4: ACTIVE", "5: LinkUp" (core sysfs.c state_show
// and phys_state_show print "%d: %s").
func readStateID(r *sysfs.Reader, path string) (int64, error) {
	b, err := r.ReadBytesKept(path)
	if err != nil {
		return 0, err
	}
	return parseStateID(path, b)
}

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

func readRate(r *sysfs.Reader, path string) (int64, int64, error) {
	b, err := r.ReadBytesKept(path)
	if err != nil {
		return 0, 0, err
	}
	return parseRate(path, b)
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
