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

	"github.com/otelcol-iclens/otelcol-iclens/internal/counter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"
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

// link maps the interconnect.io series of a GPU onto their quantities.
var links = []struct {
	component     metadata.AttributeComponent
	direction     metadata.AttributeDirection
	rate, counter quantity
	hasCounter    bool
}{
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
	open   sourceOpener
	now    func() time.Time
	want   quantitySet

	src         source
	lastAttempt time.Time
	lastRefresh time.Time
	// problems says each failure of the source as a whole once.
	problems *errtrack.Tracker

	counters *counter.Tracker[seriesKey]
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
	// starts points the builder at each series' start timestamp.
	starts   *counter.StartTimes
	sampleUs int64
	maxGapUs int64
	// resync: samples may have been lost before this poll's (a new connection, or the source
	// said so); each integrator clamps the gap to its next sample.
	resync bool
}

func newScraper(cfg *Config, set receiver.Settings) *gpuScraper {
	s := &gpuScraper{
		cfg:      cfg,
		logger:   set.Logger,
		mb:       metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		open:     openerFor(cfg),
		now:      time.Now,
		want:     wantedQuantities(cfg.Metrics),
		problems: errtrack.New(),
		// The start-time rule (metadata/start-time.md): a counter read since boot reports what it
		// counted since the series began.
		counters:  counter.NewTracker[seriesKey](counter.SinceFirstReading()),
		handover:  map[seriesKey]handover{},
		byCounter: map[seriesKey]bool{},
		integ:     map[seriesKey]*integrator{},
		xids:      map[xidKey]*xidCount{},
		lastXID:   map[xidSource]int64{},
		firstSeen: map[string]pcommon.Timestamp{},
		sampleUs:  cfg.DCGM.SampleInterval.Microseconds(),
		maxGapUs:  3 * cfg.DCGM.SampleInterval.Microseconds(),
	}
	s.starts = counter.NewStartTimes(func(t pcommon.Timestamp) { s.mb.Reset(metadata.WithStartTime(t)) })
	return s
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

func (s *gpuScraper) start(context.Context, component.Host) error {
	// Never fail the collector: a node without GPUs, or whose hostengine starts later, is normal.
	s.connect(s.now())
	return nil
}

// connect tries to open a GPU library; on failure it says why, once, and leaves the next try to a
// scrape at least retry_interval later.
func (s *gpuScraper) connect(now time.Time) {
	s.lastAttempt = now
	src, err := s.open(s.cfg, s.logger, s.want, s.numaNode)
	if err != nil {
		if s.problems.Fail("source", err) {
			s.logger.Info("No GPU metrics: no GPU library could be used; trying again later",
				zap.String("reason", err.Error()), zap.Duration("retry_interval", s.cfg.RetryInterval))
		}
		return
	}
	s.problems.Recover("source")
	s.src = src
	s.resync = true
	// A replay integrates with the sampling period of the recorded library.
	if r, ok := src.(interface{ sampleInterval() time.Duration }); ok && r.sampleInterval() > 0 {
		s.sampleUs = r.sampleInterval().Microseconds()
		s.maxGapUs = 3 * s.sampleUs
	}
	s.lastRefresh = now
	s.logger.Info("Reading GPU metrics", zap.String("source", src.kind()), zap.Int("gpus", len(src.devices())))
}

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
	if s.src == nil {
		return nil
	}
	err := s.src.close()
	s.src = nil
	return err
}

func (s *gpuScraper) scrape(context.Context) (pmetric.Metrics, error) {
	now := s.now()
	if s.src == nil {
		if now.Sub(s.lastAttempt) < s.cfg.RetryInterval {
			return pmetric.NewMetrics(), nil
		}
		s.connect(now)
		if s.src == nil {
			return pmetric.NewMetrics(), nil
		}
	} else if now.Sub(s.lastRefresh) >= s.cfg.RetryInterval {
		s.lastRefresh = now
		if err := s.src.refresh(); err != nil {
			if s.problems.Fail("refresh", err) {
				s.logger.Warn("GPU rediscovery failed; trying again after retry_interval", zap.Error(err))
			}
		} else {
			s.problems.Recover("refresh")
		}
	}

	var err error
	s.buf, err = s.src.poll(s.buf[:0])
	if err != nil {
		// The source as a whole is gone (hostengine restarted, connection lost): close it and
		// reconnect at the next scrape.
		s.logger.Warn("Lost the GPU library; reconnecting at the next scrape", zap.String("source", s.src.kind()), zap.Error(err))
		_ = s.src.close()
		s.src = nil
		s.lastAttempt = time.Time{}
		return pmetric.NewMetrics(), nil
	}
	if l, ok := s.src.(interface{ historyLost() bool }); ok && l.historyLost() {
		s.resync = true
	}
	s.record(pcommon.NewTimestampFromTime(now))
	return s.mb.Emit(), nil
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
		s.mb.RecordGpuInfoDataPoint(now, 1, d.name, d.busID, d.numaNode, d.uuid, d.model, metadata.MapAttributeSource[s.src.kind()])

		for _, ln := range links {
			if ln.hasCounter && l.set[ln.counter] {
				ck := seriesKey{key, ln.counter}
				p := s.counters.Observe(ck, l.u[ln.counter], counterSpec(l.bits[ln.counter]), now)
				switch p.Status {
				case counter.First:
					// The counter takes over from the rate (DCGM 4.6 GPM counters produce their
					// first value two GPM samples after the watch): the link's series goes on
					// from the bytes the rate counted, with the rate's start.
					if g := s.integ[seriesKey{key, ln.rate}]; g != nil && g.lastTS != 0 {
						s.handover[ck] = handover{bytes: g.whole, start: g.start}
						delete(s.integ, seriesKey{key, ln.rate})
					}
				case counter.Reset:
					delete(s.handover, ck)
				}
				s.byCounter[ck] = true
				start, v := p.Start, p.Value
				if h, ok := s.handover[ck]; ok {
					start, v = h.start, h.bytes+p.Value
				}
				s.starts.Use(start)
				s.mb.RecordInterconnectIoDataPoint(now, int64(v), ln.component, ln.direction, d.name, d.busID, d.numaNode)
				continue
			}
			if ln.hasCounter && s.byCounter[seriesKey{key, ln.counter}] {
				// The link's series is the counter's now: a rate sample left over (or a blank
				// counter this scrape) must not start a second series with the same attributes.
				continue
			}
			if g := s.integ[seriesKey{key, ln.rate}]; g != nil && g.updated {
				g.updated = false
				s.starts.Use(g.start)
				s.mb.RecordInterconnectIoDataPoint(now, int64(g.whole), ln.component, ln.direction, d.name, d.busID, d.numaNode)
			}
		}

		if l.set[qPCIeReplays] {
			p := s.counters.Observe(seriesKey{key, qPCIeReplays}, l.u[qPCIeReplays], counter.Spec{Kind: counter.Monotonic}, now)
			s.starts.Use(p.Start)
			s.mb.RecordGpuPcieReplaysDataPoint(now, int64(p.Value), d.name)
		}
		s.starts.Use(s.firstSeen[key])
		if l.set[qDRAMActive] {
			s.mb.RecordGpuDramActiveDataPoint(now, l.f[qDRAMActive], d.name)
		}
		if l.set[qMemCopyUtil] {
			s.mb.RecordGpuMemoryCopyUtilizationDataPoint(now, l.f[qMemCopyUtil], d.name)
		}
		if l.set[qSMActive] {
			s.mb.RecordGpuSmActiveDataPoint(now, l.f[qSMActive], d.name)
		}
		if l.set[qGREngineActive] {
			s.mb.RecordGpuGraphicsEngineActiveDataPoint(now, l.f[qGREngineActive], d.name)
		}
		if l.set[qGPUUtil] {
			s.mb.RecordGpuUtilizationDataPoint(now, l.f[qGPUUtil], d.name)
		}
		if l.set[qPCIeLinkGen] {
			s.mb.RecordGpuPcieLinkGenerationDataPoint(now, int64(l.u[qPCIeLinkGen]), d.name)
		}
		if l.set[qPCIeMaxLinkGen] {
			s.mb.RecordGpuPcieLinkMaxGenerationDataPoint(now, int64(l.u[qPCIeMaxLinkGen]), d.name)
		}
		if l.set[qPCIeLinkWidth] {
			s.mb.RecordGpuPcieLinkWidthDataPoint(now, int64(l.u[qPCIeLinkWidth]), d.name)
		}
		if l.set[qPCIeMaxLinkWidth] {
			s.mb.RecordGpuPcieLinkMaxWidthDataPoint(now, int64(l.u[qPCIeMaxLinkWidth]), d.name)
		}
	}
	for k, c := range s.xids {
		if !present[k.gpu] {
			continue
		}
		s.starts.Use(c.start)
		s.mb.RecordGpuXidErrorsDataPoint(now, int64(c.count), s.deviceName(devs, keys, k.gpu), int64(k.xid))
	}

	// A GPU that is gone loses its state, so that one that comes back starts new series.
	s.counters.Sweep()
	for k := range s.handover {
		if !present[k.gpu] {
			delete(s.handover, k)
		}
	}
	for k := range s.byCounter {
		if !present[k.gpu] {
			delete(s.byCounter, k)
		}
	}
	for k := range s.integ {
		if !present[k.gpu] {
			delete(s.integ, k)
		}
	}
	for k := range s.xids {
		if !present[k.gpu] {
			delete(s.xids, k)
		}
	}
	for k := range s.firstSeen {
		if !present[k] {
			delete(s.firstSeen, k)
		}
	}
	for k := range s.lastXID {
		if !present[k.gpu] {
			delete(s.lastXID, k)
		}
	}
}

func (s *gpuScraper) deviceName(devs []gpuDevice, keys []string, key string) string {
	for i, k := range keys {
		if k == key {
			return devs[i].name
		}
	}
	return key
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
