package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	ports      []*port
	netdevs    []*netdev
	rediscover bool

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

	// starts points the builder at each series' start timestamp.
	starts *counter.StartTimes
}

func newScraper(cfg *Config, set receiver.Settings) *rnicScraper {
	s := &rnicScraper{
		cfg:        cfg,
		logger:     set.Logger,
		mb:         metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		series:     counter.NewTracker[string](),
		failures:   errtrack.New(),
		newEthtool: newIoctlEthtool,
		rediscover: true,
	}
	s.starts = counter.NewStartTimes(func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) })
	s.disc = discovery{sys: cfg.sysRoot(), cfg: cfg, metrics: cfg.Metrics, reader: &s.reader}
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
		s.reader.OnOpen = rp.player.Fault
		s.ethtool = rp
	case s.cfg.Recording.Write != "":
		rc, err := newRNICRecorder(s.cfg)
		if err != nil {
			return err
		}
		s.rec = rc
		s.reader.OnRead = rc.onRead
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

func (s *rnicScraper) shutdown(context.Context) error {
	s.reader.CloseKept()
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

func (s *rnicScraper) scrape(context.Context) (pmetric.Metrics, error) {
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
	if s.listDue(now.AsTime()) {
		s.refresh(&errs)
	} else {
		s.refreshTopology(&errs, false)
	}
	s.slowDue = s.slowCountersDue(now.AsTime())
	if s.topo != nil {
		s.topo.record(s.mb, now)
	}
	for _, p := range s.ports {
		s.scrapePort(p, now, &errs)
	}
	for _, nd := range s.netdevs {
		s.scrapeNetdev(nd, now, &errs)
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
	return s.mb.Emit(), errs.Combine()
}

// refresh lists the RDMA devices (one directory read, no firmware access) and rebuilds the plan
// when the set changed. Static facts are resolved only then.
func (s *rnicScraper) refresh(errs *scrapererror.ScrapeErrors) {
	devices, err := s.disc.listDevices()
	if err != nil {
		s.report(errs, s.disc.classDir(), fmt.Errorf("listing RDMA devices: %w", err))
		return
	}
	if !s.rediscover && slices.Equal(devices, s.devices) {
		s.refreshTopology(errs, false)
		return
	}
	s.rediscover = false
	s.devices = devices
	// The kept descriptors belong to the old plan: a path may now lead to another device.
	s.reader.CloseKept()
	// New ports are read in full on their first scrape.
	s.slowAt = time.Time{}
	ports, netdevs, derrs := s.disc.discover(devices)
	for _, err := range derrs {
		s.report(errs, "discovery:"+err.Error(), err)
	}
	s.ports, s.netdevs = ports, netdevs
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
		errs.AddPartial(1, err)
		return
	}
	s.logger.Debug("still failing", zap.Error(err))
}

func (s *rnicScraper) ok(key string) {
	if s.failures.Recover(key) {
		s.logger.Info("counter readable again", zap.String("path", key))
	}
}

func (s *rnicScraper) scrapePort(p *port, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	if p.statePath != "" {
		if id, err := s.readStateID(p.statePath); err != nil {
			s.report(errs, p.statePath, err)
		} else {
			s.ok(p.statePath)
			s.mb.RecordRnicPortStateDataPoint(now, id, p.name)
		}
	}
	if p.physStatePath != "" {
		if id, err := s.readStateID(p.physStatePath); err != nil {
			s.report(errs, p.physStatePath, err)
		} else {
			s.ok(p.physStatePath)
			s.mb.RecordRnicPortPhysicalStateDataPoint(now, id, p.name)
		}
	}
	if p.ratePath != "" {
		if rate, lanes, err := s.readRate(p.ratePath); err != nil {
			s.report(errs, p.ratePath, err)
		} else {
			s.ok(p.ratePath)
			s.mb.RecordRnicPortRateDataPoint(now, rate, p.name)
			if lanes > 0 {
				s.mb.RecordRnicPortWidthDataPoint(now, lanes, p.name)
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
		raw, ok := s.readCounter(cf, errs)
		if !ok || cf.primer {
			continue
		}
		pt := s.series.Observe(cf.key, raw, cf.spec, now)
		if !pt.Report() {
			// Stuck at all ones: the rate it would imply is not traffic. Say so instead.
			s.mb.RecordRnicCounterSaturatedDataPoint(now, 1, cf.owner, cf.name)
			continue
		}
		s.starts.Use(pt.Start)
		s.recordCounter(p, cf, pt.Value, now)
	}
}

// readCounter reads a counter file and the files summed into it; a failure of any of them costs
// the point and is reported against the file that failed.
func (s *rnicScraper) readCounter(cf *counterFile, errs *scrapererror.ScrapeErrors) (uint64, bool) {
	total, ok := uint64(0), true
	for i := -1; i < len(cf.sum); i++ {
		path := cf.path
		if i >= 0 {
			path = cf.sum[i]
		}
		v, err := s.readCounterFile(cf, path)
		if err != nil {
			s.report(errs, path, err)
			ok = false
			continue
		}
		s.ok(path)
		total += v
	}
	return total, ok
}

// readCounterFile reads one counter file. The ones read on every scrape keep their descriptor
// open between scrapes (sysfs.Reader.ReadBytesKept); the slow ones, read every slow_interval, are
// opened each time, so that a node does not hold a descriptor and a sysfs buffer for each of them.
func (s *rnicScraper) readCounterFile(cf *counterFile, path string) (uint64, error) {
	if cf.slow && s.cfg.SlowInterval > 0 {
		return s.reader.ReadUint(path)
	}
	return s.reader.ReadUintKept(path)
}

func (s *rnicScraper) recordCounter(p *port, cf *counterFile, v uint64, now pcommon.Timestamp) {
	if cf.driver {
		s.mb.RecordRnicDriverCounterDataPoint(now, int64(v), cf.owner, cf.name, cf.source)
	}
	switch cf.kind {
	case kindBytes:
		if p.plane {
			return // a plane of a multi-plane device: its bytes are counted by the device itself
		}
		s.mb.RecordInterconnectIoDataPoint(now, int64(v*cf.scale), metadata.AttributeComponentRnic, cf.direction,
			cf.owner, p.pciBusID, p.numaNode)
	case kindPackets:
		if p.plane {
			return
		}
		s.mb.RecordRnicPacketsDataPoint(now, int64(v), cf.owner, cf.direction)
	case kindPortError:
		s.mb.RecordRnicPortErrorsDataPoint(now, int64(v), cf.owner, cf.label)
	case kindXmitWait:
		s.mb.RecordRnicPortXmitWaitDataPoint(now, int64(v), cf.owner)
	case kindCNP:
		s.mb.RecordRnicRoceCnpDataPoint(now, int64(v), cf.owner, cf.label)
	case kindECN:
		s.mb.RecordRnicRoceEcnMarkedDataPoint(now, int64(v), cf.owner)
	case kindTransportEvent:
		s.mb.RecordRnicTransportEventsDataPoint(now, int64(v), cf.owner, cf.label)
	case kindTransportError:
		s.mb.RecordRnicTransportErrorsDataPoint(now, int64(v), cf.owner, cf.label)
	}
}

func (s *rnicScraper) scrapeNetdev(nd *netdev, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	if s.cfg.Metrics.InterconnectIo.Enabled {
		s.netdevBytes(nd, nd.txBytes, metadata.AttributeDirectionTransmit, now, errs)
		s.netdevBytes(nd, nd.rxBytes, metadata.AttributeDirectionReceive, now, errs)
	}
	if s.ethtool != nil {
		s.scrapeEthtool(nd, now, errs)
	}
}

func (s *rnicScraper) netdevBytes(nd *netdev, path string, dir metadata.AttributeDirection, now pcommon.Timestamp, errs *scrapererror.ScrapeErrors) {
	raw, err := s.reader.ReadUintKept(path)
	if err != nil {
		s.report(errs, path, err)
		return
	}
	s.ok(path)
	pt := s.series.Observe(path, raw, counter.Spec{Kind: counter.Monotonic}, now)
	s.starts.Use(pt.Start)
	s.mb.RecordInterconnectIoDataPoint(now, int64(pt.Value), metadata.AttributeComponentNetdev, dir,
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
		s.starts.Use(pt.Start)
		v := int64(pt.Value)
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
func (s *rnicScraper) readStateID(path string) (int64, error) {
	b, err := s.reader.ReadBytesKept(path)
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

func (s *rnicScraper) readRate(path string) (int64, int64, error) {
	b, err := s.reader.ReadBytesKept(path)
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
