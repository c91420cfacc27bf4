package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/schedule"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// sourceOpener opens a GPU library. Production code uses openLibraries; tests inject fakes.
type sourceOpener func(cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (source, error)

type gpuScraper struct {
	cfg    *Config
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	// live opens the GPU library (openLibraries; tests inject fakes). Start composes open from it:
	// the library as it is, the library recorded, or a replay instead.
	live sourceOpener
	open func(now time.Time) (source, error)
	now  func() time.Time
	want quantitySet

	src source
	// discovery says when to look for a library again (while there is none) or to rediscover
	// the GPUs (while there is one): every retry_interval, and at once after a lost library.
	discovery *schedule.Schedule
	// log says each failure of the source as a whole once.
	log *errtrack.Log
	// rec is the recording Start created (recording.write): one per Start, handed to every
	// source opened, however often the library is reconnected. replay is the replay Start
	// opened (recording.replay), handed to the first open.
	rec    *recording.Writer
	replay *replaySource

	// series records the counters, the integrated totals and the gauges with their starts.
	series *counter.Series[seriesKey]
	// handover holds, per counter series, the bytes its link had counted from the rate before
	// the counter produced its first value, and that series' start: the link stays one series.
	handover map[seriesKey]handover
	// byCounter: links whose series comes from their cumulative counter.
	byCounter map[seriesKey]bool
	integ     map[seriesKey]*integrator
	xids      map[xidKey]*xidCount
	lastXID   map[xidSource]int64          // per GPU and MIG instance: timestamp of the last XID counted
	firstSeen map[string]pcommon.Timestamp // per GPU: when the receiver started watching it
	buf       []sample
	cur       []latest
	sampleUs  int64
	maxGapUs  int64
	// resync: samples may have been lost before this poll's (a new connection, or the source
	// said so); each integrator clamps the gap to its next sample.
	resync bool

	// callTimeout bounds a poll of the GPU library (never past the scrape's deadline); stuck is
	// closed when a poll that did not return in time finally does (pollWithDeadline).
	callTimeout time.Duration
	stuck       chan struct{}

	// bursts is the fast sampler (bursts.period, bursts.go), or on a replay the fold of the
	// recorded passes; nil otherwise. passes keeps its passes for the recording (recording.write).
	bursts *burstSampler
	passes *burstPasses
	// burstsSaid: the source kinds already told that the sampler does not run with them.
	burstsSaid map[string]bool
	// newBurstTicker, when set, gives the fast sampler its ticks (tests); unset, burst.Loop's own.
	newBurstTicker func(time.Duration) (<-chan time.Time, func())

	// id is the receiver's, under which its capture ring registers (bursts.capture, capture.go);
	// ring is that ring, unregisterCapture what takes it back from the extension.
	id                component.ID
	ring              *recording.Ring
	unregisterCapture func()
}

func newScraper(cfg *Config, set receiver.Settings) *gpuScraper {
	s := &gpuScraper{
		callTimeout: defaultCallTimeout,
		id:          set.ID,
		cfg:         cfg,
		logger:      set.Logger,
		mb:          metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		live:        openLibraries,
		now:         time.Now,
		want:        wantedQuantities(cfg.Metrics),
		discovery:   schedule.New(cfg.RetryInterval),
		log:         errtrack.NewLog(set.Logger),
		handover:    map[seriesKey]handover{},
		byCounter:   map[seriesKey]bool{},
		integ:       map[seriesKey]*integrator{},
		xids:        map[xidKey]*xidCount{},
		lastXID:     map[xidSource]int64{},
		firstSeen:   map[string]pcommon.Timestamp{},
		sampleUs:    cfg.DCGM.SampleInterval.Microseconds(),
		maxGapUs:    3 * cfg.DCGM.SampleInterval.Microseconds(),
		burstsSaid:  map[string]bool{},
	}
	s.series = s.newSeries(0)
	return s
}

// newSeries returns the series bookkeeping with gauges starting at start. The start-time rule
// (metadata/start-time.md): a counter read since boot reports what it counted since the series
// began.
func (s *gpuScraper) newSeries(start pcommon.Timestamp) *counter.Series[seriesKey] {
	return counter.NewSeries[seriesKey](func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) }, start, counter.SinceFirstReading())
}

// wantedQuantities returns what the enabled metrics need: nothing else is read.
func wantedQuantities(m metadata.MetricsConfig) quantitySet {
	var w quantitySet
	if m.InterconnectIo.Enabled {
		for q := qPCIeTxRate; q <= qXGMIRxBytes; q++ {
			w.add(q)
		}
	}
	if m.GpuNvlinkLinkIo.Enabled {
		w = w.with(qNVLinkLinkTxRate, qNVLinkLinkRxRate, qNVLinkLinkTxBytes, qNVLinkLinkRxBytes)
	}
	if m.GpuXgmiLinkIo.Enabled {
		w = w.with(qXGMILinkTxBytes, qXGMILinkRxBytes)
	}
	if m.GpuNvlinkLinkErrors.Enabled {
		w = w.with(qNVLinkLinkCRCErrors, qNVLinkLinkReplays, qNVLinkLinkRecoveries)
	}
	w |= healthQuantities(m)
	for _, e := range []struct {
		on bool
		q  quantity
	}{
		{m.GpuDramActive.Enabled, qDRAMActive},
		{m.GpuMemoryCopyUtilization.Enabled, qMemCopyUtil},
		{m.GpuSmActive.Enabled, qSMActive},
		{m.GpuGraphicsEngineActive.Enabled, qGREngineActive},
		{m.GpuUtilization.Enabled, qGPUUtil},
		{m.GpuPcieReplays.Enabled, qPCIeReplays},
		{m.GpuPcieLinkGeneration.Enabled, qPCIeLinkGen},
		{m.GpuPcieLinkWidth.Enabled, qPCIeLinkWidth},
		{m.GpuPcieLinkMaxGeneration.Enabled, qPCIeMaxLinkGen},
		{m.GpuPcieLinkMaxWidth.Enabled, qPCIeMaxLinkWidth},
		{m.GpuXidErrors.Enabled, qXID},
	} {
		if e.on {
			w.add(e.q)
		}
	}
	return w
}

// start chooses the source once: a replay, the live library recorded (to a file, to the capture
// ring, or both), or the live library. A replay that cannot be read, a recording that cannot be
// created or a bursts.capture extension the host does not have fails Start, naming it; a node
// without GPUs, or whose hostengine starts later, does not.
func (s *gpuScraper) start(ctx context.Context, host component.Host) error {
	now := s.now()
	s.series = s.newSeries(pcommon.NewTimestampFromTime(now))
	want, numa := s.want, s.numaNode
	s.ring = newCaptureRing(s.cfg)
	switch rc := s.cfg.Recording; {
	case rc.Replay != "":
		open := func() (*replaySource, error) {
			r, err := openReplay(rc.Replay, rc.Loop, s.cfg.CollectionInterval)
			if err == nil {
				r.keepIn(s.ring)
			}
			return r, err
		}
		r, err := open()
		if err != nil {
			return err
		}
		s.replay = r
		s.open = func(time.Time) (source, error) {
			if r := s.replay; r != nil {
				s.replay = nil
				return r, nil
			}
			return open()
		}
	case rc.Write != "" || s.ring != nil:
		var w *recording.Writer
		if rc.Write != "" {
			var err error
			if w, err = recording.CreateFor(rc.Write, metadata.Type.String(), s.cfg.CollectionInterval); err != nil {
				return err
			}
			s.rec = w
		}
		rl := newRecordLog(s.logger, w, s.ring)
		if s.burstsWanted() {
			s.passes = &burstPasses{period: s.cfg.Bursts.Period}
			rl.passes = s.passes
		}
		s.open = func(now time.Time) (source, error) {
			src, err := s.live(s.cfg, s.logger, want, numa)
			if err != nil {
				return nil, err
			}
			return newRecordingSource(src, rl, s.cfg.DCGM.SampleInterval, now), nil
		}
	default:
		s.open = func(time.Time) (source, error) { return s.live(s.cfg, s.logger, want, numa) }
	}
	if err := s.registerCapture(host); err != nil {
		return errors.Join(err, s.shutdown(ctx))
	}
	s.startBursts(s.cfg.Recording.Replay != "")
	s.connect(now)
	return nil
}

// connect tries to open a GPU library; on failure it says why, once, and leaves the next try to
// the discovery schedule (retry_interval).
func (s *gpuScraper) connect(now time.Time) {
	s.discovery.Done(now)
	src, err := s.open(now)
	if err != nil {
		s.log.Once(keyNoLibrary, zapcore.InfoLevel, msgNoLibrary,
			zap.String("reason", err.Error()), zap.Duration("retry_interval", s.cfg.RetryInterval))
		return
	}
	// Said again if the library goes away later.
	s.log.Forget(func(k string) bool { return k != keyNoLibrary })
	s.src = src
	s.resync = true
	// A replay integrates with the sampling period of the recorded library.
	if r, ok := src.(interface{ sampleInterval() time.Duration }); ok && r.sampleInterval() > 0 {
		s.sampleUs = r.sampleInterval().Microseconds()
		s.maxGapUs = 3 * s.sampleUs
	}
	s.logger.Info("Reading GPU metrics", zap.String("source", src.kind()), zap.Int("gpus", len(src.devices())))
	s.syncBursts()
}

// Keys of the receiver-wide log lines.
const (
	keyNoLibrary = "source"
	keyLost      = "source/lost"
	keyRefresh   = "source/refresh"
	keyStuck     = "source/stuck"
)

// numaNode reads the NUMA node of a PCI function from sysfs under root_path, -1 where unknown.
func (s *gpuScraper) numaNode(busID string) int64 {
	var r sysfs.Reader
	n, err := r.ReadInt(filepath.Join(s.cfg.rootPath(), "sys", "bus", "pci", "devices", busID, "numa_node"))
	if err != nil {
		return -1
	}
	return n
}

func (s *gpuScraper) shutdown(context.Context) error {
	if s.unregisterCapture != nil {
		// First: a trigger from now on does not see this ring.
		s.unregisterCapture()
		s.unregisterCapture = nil
	}
	if s.bursts != nil {
		// First: its goroutine lets go of its own hold on the library as it ends.
		s.bursts.shutdown()
	}
	var errs []error
	if s.replay != nil {
		errs = append(errs, s.replay.close())
		s.replay = nil
	}
	// A call still blocked in the library holds the source: never wait for it at shutdown.
	if s.src != nil && !s.isStuck() {
		errs = append(errs, s.src.close())
		s.src = nil
	}
	if s.rec != nil {
		errs = append(errs, s.rec.Close())
		s.rec = nil
	}
	return errors.Join(errs...)
}

func (s *gpuScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	now := s.now()
	if s.isStuck() {
		return pmetric.NewMetrics(), errStuck
	}
	if s.src == nil {
		if !s.discovery.Due(now) {
			return pmetric.NewMetrics(), nil
		}
		s.connect(now)
		if s.src == nil {
			return pmetric.NewMetrics(), nil
		}
	}
	var refreshErr error
	if s.discovery.Due(now) {
		s.discovery.Done(now)
		// A failed rediscovery is an error of this scrape: what it could not set up is not read.
		if refreshErr = s.src.refresh(); refreshErr != nil {
			s.log.Fail(keyRefresh, msgRediscoveryFailed, refreshErr)
			refreshErr = fmt.Errorf("rediscovery: %w", refreshErr)
		} else {
			s.log.Recover(keyRefresh, "GPU rediscovery works again")
			s.syncBursts()
		}
	}

	buf, err, ok := s.pollWithDeadline(ctx, now)
	if !ok {
		return pmetric.NewMetrics(), errStuck
	}
	s.buf = buf
	if isSourceLost(err) {
		// The source as a whole is gone (hostengine restarted, connection lost): close it and
		// reconnect at the next scrape. This scrape's GPU metrics are lost: an error.
		kind := s.src.kind()
		s.log.Fail(keyLost, msgLost, err, zap.String("source", kind))
		_ = s.src.close()
		s.src = nil
		s.syncBursts()
		s.discovery.Request()
		return pmetric.NewMetrics(), fmt.Errorf("%s: %w", kind, err)
	}
	s.log.Recover(keyLost, "Reading GPU metrics again")
	if l, ok := s.src.(interface{ historyLost() bool }); ok && l.historyLost() {
		s.resync = true
	}
	at := now
	if r, ok := s.src.(interface{ pointTime() time.Time }); ok {
		// A replay: the points carry the time the poll was recorded at, on the replay's clock.
		at = r.pointTime()
	}
	s.record(pcommon.NewTimestampFromTime(at))
	s.recordBursts(pcommon.NewTimestampFromTime(at))
	return s.mb.Emit(), joinPollErrors(refreshErr, err)
}
