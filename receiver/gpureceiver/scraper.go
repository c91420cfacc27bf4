package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// seriesKey identifies one series of one GPU across scrapes (and across reconnections, since the
// UUID, not DCGM's id, names the GPU).
type seriesKey struct {
	gpu string
	q   quantity
}

type xidKey struct {
	gpu string
	xid uint64
}

// xidSource is where XIDs come from: a GPU, or one of its MIG instances.
type xidSource struct {
	gpu    string
	entity uint32
}

type xidCount struct {
	count uint64
	start pcommon.Timestamp
}

// latest holds the newest valid value of every quantity of every GPU in one scrape.
type latest struct {
	set  [numQuantities]bool
	f    [numQuantities]float64
	u    [numQuantities]uint64
	bits [numQuantities]uint8
}

// link maps one interconnect.io series of a GPU onto its quantities.
type link struct {
	component     metadata.AttributeComponent
	direction     metadata.AttributeDirection
	rate, counter quantity
	hasCounter    bool
}

var links = []link{
	{metadata.AttributeComponentGpuPcie, metadata.AttributeDirectionTransmit, qPCIeTxRate, qPCIeTxBytes, true},
	{metadata.AttributeComponentGpuPcie, metadata.AttributeDirectionReceive, qPCIeRxRate, qPCIeRxBytes, true},
	{metadata.AttributeComponentGpuNvlink, metadata.AttributeDirectionTransmit, qNVLinkTxRate, qNVLinkTxBytes, true},
	{metadata.AttributeComponentGpuNvlink, metadata.AttributeDirectionReceive, qNVLinkRxRate, qNVLinkRxBytes, true},
	{metadata.AttributeComponentGpuC2c, metadata.AttributeDirectionTransmit, qC2CTxRate, 0, false},
	{metadata.AttributeComponentGpuC2c, metadata.AttributeDirectionReceive, qC2CRxRate, 0, false},
}

// handover is where a link's rate-integrated series stood when its counter took over.
type handover struct {
	bytes uint64
	start pcommon.Timestamp
}

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
}

// defaultCallTimeout: a DCGM or NVML poll answers in milliseconds; one that takes seconds is a
// hostengine or driver that hangs (an NVML call can block behind a GPU that fell off the bus).
const defaultCallTimeout = 5 * time.Second

func newScraper(cfg *Config, set receiver.Settings) *gpuScraper {
	s := &gpuScraper{
		callTimeout: defaultCallTimeout,
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

// counterSpec is how a driver counter behaves at the end of its range: one whose value type is
// narrower than 64 bits wraps at that width (NVML FI_DEV_PCIE_COUNT_TX/RX_BYTES: "Value can be
// wrapped", nvml.h); a 64-bit one only goes back on a reset.
func counterSpec(wrapBits uint8) counter.Spec {
	if wrapBits > 0 && wrapBits < 64 {
		return counter.Spec{Kind: counter.Wrapping, Width: wrapBits}
	}
	return counter.Spec{Kind: counter.Monotonic}
}

// wantedQuantities returns what the enabled metrics need: nothing else is read.
func wantedQuantities(m metadata.MetricsConfig) quantitySet {
	var w quantitySet
	if m.InterconnectIo.Enabled {
		for q := qPCIeTxRate; q <= qNVLinkRxBytes; q++ {
			w.add(q)
		}
	}
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

// start chooses the source once: a replay, the live library recorded, or the live library. A
// replay that cannot be read or a recording that cannot be created fails Start, naming the file;
// a node without GPUs, or whose hostengine starts later, does not.
func (s *gpuScraper) start(context.Context, component.Host) error {
	now := s.now()
	s.series = s.newSeries(pcommon.NewTimestampFromTime(now))
	want, numa := s.want, s.numaNode
	switch rc := s.cfg.Recording; {
	case rc.Replay != "":
		r, err := openReplay(rc.Replay, rc.Loop)
		if err != nil {
			return err
		}
		s.replay = r
		s.open = func(time.Time) (source, error) {
			if r := s.replay; r != nil {
				s.replay = nil
				return r, nil
			}
			return openReplay(rc.Replay, rc.Loop)
		}
	case rc.Write != "":
		w, err := recording.CreateFor(rc.Write, metadata.Type.String(), s.cfg.CollectionInterval)
		if err != nil {
			return err
		}
		s.rec = w
		rl := newRecordLog(s.logger, w)
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
}

// errStuck is the error of a scrape skipped because a GPU library call has not returned.
var errStuck = errors.New("a GPU library call has not returned; GPU metrics skipped")

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
		s.discovery.Request()
		return pmetric.NewMetrics(), fmt.Errorf("%s: %w", kind, err)
	}
	s.log.Recover(keyLost, "Reading GPU metrics again")
	if l, ok := s.src.(interface{ historyLost() bool }); ok && l.historyLost() {
		s.resync = true
	}
	s.record(pcommon.NewTimestampFromTime(now))
	return s.mb.Emit(), joinPollErrors(refreshErr, err)
}

// isStuck reports whether a poll that did not return in time is still blocked; when it has
// returned since, GPU metrics are read again (its late samples are dropped: the integrators
// bridge the gap or start over, as after any gap).
func (s *gpuScraper) isStuck() bool {
	if s.stuck == nil {
		return false
	}
	select {
	case <-s.stuck:
		s.stuck = nil
		s.log.Recover(keyStuck, "The GPU library answered again; reading GPU metrics")
		return false
	default:
		return true
	}
}

// pollWithDeadline polls the source on a goroutine and waits for it until callTimeout (or the
// scrape's deadline). A poll that does not return in time is reported once and left to finish;
// ok is false then, and the scrapes skip the GPUs until it has returned.
func (s *gpuScraper) pollWithDeadline(ctx context.Context, now time.Time) (buf []sample, err error, ok bool) {
	type result struct {
		buf []sample
		err error
	}
	timeout := s.callTimeout
	// The deadline is the wall clock's, not the scrape's (injected) now.
	if d, has := ctx.Deadline(); has && time.Until(d) < timeout {
		timeout = max(time.Until(d), 0)
	}
	done := make(chan result, 1)
	src, in := s.src, s.buf[:0]
	go func() {
		b, err := src.poll(now, in)
		done <- result{b, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.buf, r.err, true
	case <-t.C:
	}
	stuck := make(chan struct{})
	go func() {
		<-done
		close(stuck)
	}()
	s.stuck, s.buf = stuck, nil // the blocked poll owns the old buffer
	s.log.Fail(keyStuck, "A GPU library call did not return in time; GPU metrics are skipped until it does",
		errStuck, zap.String("source", src.kind()), zap.Duration("timeout", timeout))
	return nil, nil, false
}

// record turns the samples of one poll into metrics.
func (s *gpuScraper) record(now pcommon.Timestamp) {
	devs := s.src.devices()
	if cap(s.cur) < len(devs) {
		s.cur = make([]latest, len(devs))
	}
	s.cur = s.cur[:len(devs)]
	clear(s.cur)

	keys := make([]string, len(devs))
	for i, d := range devs {
		keys[i] = d.uuid
		if keys[i] == "" {
			keys[i] = d.name
		}
		if _, ok := s.firstSeen[keys[i]]; !ok {
			s.firstSeen[keys[i]] = now
		}
	}

	if s.resync {
		for _, g := range s.integ {
			g.resync = true
		}
		s.resync = false
	}
	for _, smp := range s.buf {
		if smp.gpu < 0 || smp.gpu >= len(devs) {
			continue
		}
		key := keys[smp.gpu]
		switch {
		case smp.q.isRate():
			g := s.integ[seriesKey{key, smp.q}]
			if g == nil {
				g = &integrator{}
				s.integ[seriesKey{key, smp.q}] = g
			}
			g.add(smp, s.sampleUs, s.maxGapUs)
		case smp.q == qXID:
			src := xidSource{key, smp.entity}
			if !smp.valid || smp.ts <= s.lastXID[src] {
				continue
			}
			s.lastXID[src] = smp.ts
			c := s.xids[xidKey{key, smp.u}]
			if c == nil {
				c = &xidCount{start: s.firstSeen[key]}
				s.xids[xidKey{key, smp.u}] = c
			}
			c.count++
		case smp.valid:
			l := &s.cur[smp.gpu]
			l.set[smp.q], l.f[smp.q], l.u[smp.q], l.bits[smp.q] = true, smp.f, smp.u, smp.wrapBits
		}
	}

	present := make(map[string]bool, len(devs))
	for i, d := range devs {
		key := keys[i]
		present[key] = true
		l := &s.cur[i]
		s.series.Gauge(func() {
			s.mb.RecordGpuInfoDataPoint(now, 1, d.name, d.busID, d.numaNode, d.uuid, d.model, metadata.MapAttributeSource[s.src.kind()])
		})

		for _, ln := range links {
			if ln.hasCounter && l.set[ln.counter] {
				s.recordCounterLink(now, key, d, ln, l)
				continue
			}
			if ln.hasCounter && s.byCounter[seriesKey{key, ln.counter}] {
				// The link's series is the counter's now: a rate sample left over (or a blank
				// counter this scrape) must not start a second series with the same attributes.
				continue
			}
			if g := s.integ[seriesKey{key, ln.rate}]; g != nil && g.updated {
				g.updated = false
				s.series.RecordValue(g.start, func() {
					s.mb.RecordInterconnectIoDataPoint(now, int64(g.bytes.Total()), ln.component, ln.direction, d.name, d.busID, d.numaNode)
				})
			}
		}

		if l.set[qPCIeReplays] {
			s.series.Record(seriesKey{key, qPCIeReplays}, l.u[qPCIeReplays], counter.Spec{Kind: counter.Monotonic}, now, func(v int64) {
				s.mb.RecordGpuPcieReplaysDataPoint(now, v, d.name, d.busID)
			})
		}
		for _, g := range ratioGauges {
			if l.set[g.q] {
				s.series.Gauge(func() { g.record(s.mb, now, l.f[g.q], d.name, d.busID) })
			}
		}
		for _, g := range levelGauges {
			if l.set[g.q] {
				s.series.Gauge(func() { g.record(s.mb, now, int64(l.u[g.q]), d.name, d.busID) })
			}
		}
	}
	for k, c := range s.xids {
		if !present[k.gpu] {
			continue
		}
		d := s.device(devs, keys, k.gpu)
		s.series.RecordValue(c.start, func() {
			s.mb.RecordGpuXidErrorsDataPoint(now, int64(c.count), d.name, d.busID, int64(k.xid))
		})
	}

	// A GPU that is gone loses its state, so that one that comes back starts new series.
	s.series.Sweep()
	maps.DeleteFunc(s.handover, func(k seriesKey, _ handover) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.byCounter, func(k seriesKey, _ bool) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.integ, func(k seriesKey, _ *integrator) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.xids, func(k xidKey, _ *xidCount) bool { return !present[k.gpu] })
	maps.DeleteFunc(s.firstSeen, func(k string, _ pcommon.Timestamp) bool { return !present[k] })
	maps.DeleteFunc(s.lastXID, func(k xidSource, _ int64) bool { return !present[k.gpu] })
}

// recordCounterLink records a link whose bytes come from its cumulative counter.
func (s *gpuScraper) recordCounterLink(now pcommon.Timestamp, key string, d gpuDevice, ln link, l *latest) {
	ck := seriesKey{key, ln.counter}
	p := s.series.Observe(ck, l.u[ln.counter], counterSpec(l.bits[ln.counter]), now)
	switch p.Status {
	case counter.First:
		// The counter takes over from the rate (DCGM 4.6 GPM counters produce their first value
		// two GPM samples after the watch): the link's series goes on from the bytes the rate
		// counted, with the rate's start.
		if g := s.integ[seriesKey{key, ln.rate}]; g != nil && g.lastTS != 0 {
			s.handover[ck] = handover{bytes: g.bytes.Total(), start: g.start}
			delete(s.integ, seriesKey{key, ln.rate})
		}
	case counter.Reset:
		delete(s.handover, ck)
	}
	s.byCounter[ck] = true
	if !p.Report() {
		return
	}
	start, v := p.Start, p.Value
	if h, ok := s.handover[ck]; ok {
		start, v = h.start, h.bytes+p.Value
	}
	s.series.RecordValue(start, func() {
		s.mb.RecordInterconnectIoDataPoint(now, int64(v), ln.component, ln.direction, d.name, d.busID, d.numaNode)
	})
}

// ratioGauges and levelGauges are the per-GPU gauges, each the latest value of its quantity.
var ratioGauges = []struct {
	q      quantity
	record func(*metadata.MetricsBuilder, pcommon.Timestamp, float64, string, string)
}{
	{qDRAMActive, (*metadata.MetricsBuilder).RecordGpuDramActiveDataPoint},
	{qMemCopyUtil, (*metadata.MetricsBuilder).RecordGpuMemoryCopyUtilizationDataPoint},
	{qSMActive, (*metadata.MetricsBuilder).RecordGpuSmActiveDataPoint},
	{qGREngineActive, (*metadata.MetricsBuilder).RecordGpuGraphicsEngineActiveDataPoint},
	{qGPUUtil, (*metadata.MetricsBuilder).RecordGpuUtilizationDataPoint},
}

var levelGauges = []struct {
	q      quantity
	record func(*metadata.MetricsBuilder, pcommon.Timestamp, int64, string, string)
}{
	{qPCIeLinkGen, (*metadata.MetricsBuilder).RecordGpuPcieLinkGenerationDataPoint},
	{qPCIeMaxLinkGen, (*metadata.MetricsBuilder).RecordGpuPcieLinkMaxGenerationDataPoint},
	{qPCIeLinkWidth, (*metadata.MetricsBuilder).RecordGpuPcieLinkWidthDataPoint},
	{qPCIeMaxLinkWidth, (*metadata.MetricsBuilder).RecordGpuPcieLinkMaxWidthDataPoint},
}

// device returns the GPU whose key is key (present this scrape).
func (s *gpuScraper) device(devs []gpuDevice, keys []string, key string) gpuDevice {
	for i, k := range keys {
		if k == key {
			return devs[i]
		}
	}
	return gpuDevice{name: key}
}

// openLibraries opens DCGM, else NVML, as the configuration allows.
func openLibraries(cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (source, error) {
	var errs []error
	if cfg.Source != sourceNVML {
		api, err := newDCGMAPI()
		if err == nil {
			var src *dcgmSource
			if src, err = openDCGM(api, cfg, logger, want, numaNode); err == nil {
				if cfg.Source == sourceDCGM {
					return src, nil
				}
				// DCGM is up; NVML fills in, per GPU, the link bytes DCGM cannot supply.
				return withNVMLFallback(src, logger, func() (source, error) {
					return openNVMLFallback(cfg, logger, want, numaNode)
				}), nil
			}
		}
		if errors.Is(err, errBuiltWithoutGPU) {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("DCGM (%s mode, %s): %w", cfg.DCGM.Mode, cfg.DCGM.Endpoint, err))
	}
	if cfg.Source != sourceDCGM {
		src, err := openNVMLLibrary(cfg, logger, want, numaNode)
		if err == nil {
			if len(errs) > 0 {
				logger.Info("DCGM is not available, reading GPUs through NVML instead (no XIDs; DRAM, SM and engine activity only where the GPU has GPM)",
					zap.String("reason", errors.Join(errs...).Error()))
			}
			return src, nil
		}
		if errors.Is(err, errBuiltWithoutGPU) {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("NVML: %w", err))
	}
	return nil, errors.Join(errs...)
}
