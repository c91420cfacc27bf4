package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/histogram"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// metricBurstUtilization is declared here rather than in metadata.yaml: the mdatagen this
// repository builds with generates histogram code that does not compile (the nccl receiver builds
// its histograms the same way, histogram.go).
const (
	metricBurstUtilization      = "rnic.burst.utilization"
	metricBurstUtilizationUnit  = "1"
	metricBurstUtilizationDescr = "Utilization of the port's line rate (rnic.port.rate) over each window of the fast sampler " +
		"(bursts.period), as shares of it: 0.1, 0.25, 0.5, 0.75, 0.9 and 1 bound the buckets. " +
		"Cumulative since the counter's first sample; emitted only with bursts.period set and a known rate."
)

// burstTargets are the byte counters of the plan the fast sampler reads: every port's data counter
// that feeds interconnect.io{component=rnic} (a plane's bytes are its device's and are left out)
// and each netdev's tx/rx bytes, whose line rate is that of the port it belongs to.
func (s *rnicScraper) burstTargets(pl *plan) []*burstTarget {
	var out []*burstTarget
	rel := func(p string) string {
		r, err := filepath.Rel(s.root, p)
		if err != nil {
			return p
		}
		return r
	}
	byNetdev := map[string]*port{}
	for _, p := range pl.ports {
		if p.plane {
			continue
		}
		if p.netdev != "" && byNetdev[p.netdev] == nil {
			byNetdev[p.netdev] = p
		}
		for i := range p.counters {
			cf := &p.counters[i]
			if cf.kind != kindBytes || cf.off {
				continue
			}
			t := &burstTarget{key: cf.key, scale: cf.scale, component: metadata.AttributeComponentRnic,
				direction: cf.direction, device: cf.owner, port: p}
			for j := range 1 + len(cf.sum) {
				t.paths = append(t.paths, cf.file(j))
				t.rels = append(t.rels, rel(cf.file(j)))
			}
			out = append(out, t)
		}
	}
	if !s.cfg.Metrics.InterconnectIo.Enabled {
		return out
	}
	for _, nd := range pl.netdevs {
		for _, f := range []struct {
			path string
			dir  metadata.AttributeDirection
		}{{nd.txBytes, metadata.AttributeDirectionTransmit}, {nd.rxBytes, metadata.AttributeDirectionReceive}} {
			out = append(out, &burstTarget{key: f.path, paths: []string{f.path}, rels: []string{rel(f.path)}, scale: 1,
				component: metadata.AttributeComponentNetdev, direction: f.dir, device: nd.name, port: byNetdev[nd.name]})
		}
	}
	return out
}

// burstPoint is one target's histogram point of a scrape, appended after the builder's Emit.
type burstPoint struct {
	t     *burstTarget
	start pcommon.Timestamp
	h     histogram.Explicit
}

// recordBursts folds what the sampler (or the replayed sub-samples) gathered since the last
// scrape into the scrape's points: rnic.burst.peak_rate and rnic.burst.time_above through the
// builder, the utilization histograms returned for appendBurstHistograms.
func (s *rnicScraper) recordBursts(run *scrapeRun) []burstPoint {
	b := s.bursts
	if b == nil {
		return nil
	}
	if s.replay != nil && s.replay.cur.Bursts != nil {
		subs := s.replay.cur.Bursts
		s.replay.cur.Bursts = nil
		// The recorded period names the window: the replaying receiver's own is not the one
		// the samples were taken at.
		if p := time.Duration(subs.Period); p > 0 {
			b.period = p
		}
		b.replay(subs, s.replay.player.Time)
		if s.rec != nil {
			s.rec.keepReplayedPasses(subs, s.replay.player.Time)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var hists []burstPoint
	m := s.cfg.Metrics
	for _, t := range b.targets {
		if t.port != nil {
			t.fold.SetLineRate(t.port.lineRate)
		}
		iv := t.fold.Take()
		if iv.Windows > 0 && m.RnicBurstPeakRate.Enabled {
			s.series.Gauge(func() {
				s.mb.RecordRnicBurstPeakRateDataPoint(run.now, iv.Peak, t.component, t.direction, t.device, b.window())
			})
		}
		h := t.fold.Histogram()
		if h.Count == 0 {
			continue // no window measured against a line rate yet
		}
		start := pcommon.NewTimestampFromTime(t.fold.Start())
		if m.RnicBurstTimeAbove.Enabled {
			for i, above := range t.fold.Above() {
				s.series.RecordValue(start, func() {
					s.mb.RecordRnicBurstTimeAboveDataPoint(run.now, above.Seconds(), t.component, t.direction, t.device, b.shares[i])
				})
			}
		}
		hists = append(hists, burstPoint{t: t, start: start, h: h})
	}
	return hists
}

// appendBurstHistograms adds rnic.burst.utilization to the scrape's metrics, in the builder's
// scope (a resource and scope of their own where the builder emitted nothing).
func appendBurstHistograms(md pmetric.Metrics, points []burstPoint, now pcommon.Timestamp) {
	if len(points) == 0 {
		return
	}
	var sm pmetric.ScopeMetrics
	if rms := md.ResourceMetrics(); rms.Len() > 0 && rms.At(0).ScopeMetrics().Len() > 0 {
		sm = rms.At(0).ScopeMetrics().At(0)
	} else {
		sm = md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(metadata.ScopeName)
	}
	h := histogram.AddCumulative(sm, metricBurstUtilization, metricBurstUtilizationUnit, metricBurstUtilizationDescr)
	for _, p := range points {
		dp := h.DataPoints().AppendEmpty()
		p.h.Fill(dp, burst.Bounds, p.start, now)
		a := dp.Attributes()
		a.PutStr("component", p.t.component.String())
		a.PutStr("direction", p.t.direction.String())
		a.PutStr("device", p.t.device)
	}
}
