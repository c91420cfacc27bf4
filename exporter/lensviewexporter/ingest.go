package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

func attr(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func ms(ts pcommon.Timestamp) int64 { return int64(ts) / 1e6 }

// consumeMetrics keeps what the view shows of md.
func (s *store) consumeMetrics(md pmetric.Metrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		n := s.node(nodestate.Key(rm.Resource()))
		if n == nil {
			continue
		}
		n.lastSeen = now
		// The node's ports, GPUs and topology: its state as the diagnosis connector reads it.
		s.refuseSkewed(rm.ScopeMetrics(), now)
		n.state.Ingest(rm.Resource(), rm.ScopeMetrics(), now.UnixNano())
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				s.consumeMetric(n, ms.At(k))
			}
		}
	}
}

func numberPoints(m pmetric.Metric) (pmetric.NumberDataPointSlice, bool) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints(), m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityCumulative
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints(), false
	}
	return pmetric.NewNumberDataPointSlice(), false
}

// draws reports whether the view draws a metric's points on its charts.
func draws(name string) bool {
	return name == nodestate.MetricIO || name == nodestate.MetricDRAMActive || strings.HasPrefix(name, "rnic.") ||
		name == nodestate.MetricUncoreBurstPeak || name == nodestate.MetricGPUBurstPeak ||
		name == verdict.MetricVerdict || name == verdict.MetricEvidence || name == nodestate.MetricCollBusBandwidth
}

// skewed reports whether a point is stamped further than max_clock_skew from now: a point 31
// years ahead would stay the newest of its ring, and every later one would be read as past.
func (s *store) skewed(ts pcommon.Timestamp, now time.Time) bool {
	d := ts.AsTime().Sub(now)
	return s.maxSkew > 0 && (d > s.maxSkew || d < -s.maxSkew)
}

// refuseSkewed counts the points the view and the node's state refuse for their time stamp,
// and says it once.
func (s *store) refuseSkewed(sms pmetric.ScopeMetricsSlice, now time.Time) {
	var refused int
	for i := range sms.Len() {
		ms := sms.At(i).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			if !draws(m.Name()) && !nodestate.Reads(m.Name()) {
				continue
			}
			nodestate.NumberPoints(m, func(dp pmetric.NumberDataPoint) {
				if s.skewed(dp.Timestamp(), now) {
					refused++
				}
			})
		}
	}
	if refused == 0 {
		return
	}
	s.telemetry.refused(int64(refused))
	if !s.warnedSkew {
		s.warnedSkew = true
		s.logger.Warn("lensview: refusing points stamped far from this collector's clock (check the sender's clock); said once, counted in otelcol_exporter_lensview_points_refused",
			zap.Duration("max_clock_skew", s.maxSkew), zap.Int("refused", refused))
	}
}

func (s *store) consumeMetric(n *node, m pmetric.Metric) {
	name := m.Name()
	if !draws(name) {
		return
	}
	now := s.now()
	dps, cumulative := numberPoints(m)
	for i := range dps.Len() {
		dp := dps.At(i)
		if s.skewed(dp.Timestamp(), now) {
			continue
		}
		a := dp.Attributes()
		t := ms(dp.Timestamp())
		switch name {
		case nodestate.MetricIO:
			if !cumulative {
				continue
			}
			comp, dir, dev := attr(a, "component"), attr(a, "direction"), attr(a, "device")
			r, ok := s.rate(n, name+"|"+comp+"|"+dir+"|"+dev, dp)
			if !ok {
				continue
			}
			bus := attr(a, nodestate.AttrBusID)
			id, label, summed := bandwidthSeries(comp, dir, dev)
			if summed {
				dev, bus = "", ""
			}
			sr := s.seriesFor(n, series{id: id, label: label, component: comp, direction: dir, device: dev, bus: bus, unit: "By/s", axis: axisBytes})
			if sr != nil {
				sr.ring.push(t, r)
			}
		case nodestate.MetricCollBusBandwidth:
			s.collectiveBusBandwidth(n, a, dp)
		case nodestate.MetricBurstPeak, nodestate.MetricUncoreBurstPeak, nodestate.MetricGPUBurstPeak:
			s.burstPeak(n, a, dp)
		case nodestate.MetricBurstTimeAbove:
			if cumulative {
				s.burstTimeAbove(n, a, dp)
			}
		case nodestate.MetricDRAMActive:
			dev := attr(a, "device")
			sr := s.seriesFor(n, series{id: "gpu_dram_active/" + dev, label: gpuName(dev) + " MEM BW[RD/WR]", component: "gpu_dram_active",
				device: dev, unit: "1", axis: axisRatio})
			if sr != nil && s.stepped(sr.ring, t) {
				sr.ring.set(t, nodestate.PointValue(dp))
			}
		case nodestate.MetricPortRate, nodestate.MetricPortWidth, nodestate.MetricPortState:
			p := s.portFor(n, attr(a, "device"))
			if p == nil {
				continue
			}
			p.seen = s.now()
			v := nodestate.PointValue(dp)
			switch name {
			case nodestate.MetricPortRate:
				p.rate = v
			case nodestate.MetricPortWidth:
				p.width = int64(v)
			case nodestate.MetricPortState:
				p.state = int64(v)
			}
		case nodestate.MetricPortInfo:
			// The port's Ethernet device, whose ethtool statistics carry the PFC counters.
			if p := s.portFor(n, attr(a, "device")); p != nil && attr(a, "netdev") != "" {
				p.netdev = attr(a, "netdev")
			}
		case nodestate.MetricSaturated:
			if p := s.portFor(n, attr(a, "device")); p != nil && nodestate.PointValue(dp) == 1 && room(s, p.saturated, attr(a, "counter")) {
				p.saturated[attr(a, "counter")] = dp.Timestamp().AsTime()
			}
		case nodestate.MetricCNP, nodestate.MetricECN, nodestate.MetricXmitWait, nodestate.MetricPFCFrames:
			if cumulative {
				s.portCounter(n, name, a, dp)
			}
		case verdict.MetricVerdict:
			k, which := diagKey{owner: verdictOwner(a), device: attr(a, verdict.AttrDevice)}, attr(a, verdict.AttrVerdict)
			if nodestate.PointValue(dp) != 1 {
				// The verdict that held stopped holding (a port came back to full rate).
				n.diag.clearVerdict(k, which, t)
				continue
			}
			if !room(s, n.diag.verdicts, k) {
				continue
			}
			n.diag.setVerdict(k, which, t)
			if k == (diagKey{}) {
				if code := s.verdictIndex(which); code >= 0 && s.stepped(n.diag.history, t) {
					n.diag.history.set(t, float64(code))
				}
			}
		case verdict.MetricEvidence:
			k, ratio := diagKey{owner: verdictOwner(a), device: attr(a, verdict.AttrDevice)}, attr(a, verdict.AttrRatio)
			if room(s, n.diag.evidence, k) && room(s, n.diag.evidence[k], ratio) {
				n.diag.setEvidence(k, ratio, nodestate.PointValue(dp), t)
			}
		}
	}
}

// stepped reports whether a gauge point at t is at least 0.8 x resolution after the ring's
// newest point (or at its time, replacing it): the ring then keeps one point per step however
// fast the pipeline sends them.
func (s *store) stepped(r *ring, t int64) bool {
	lt, _, ok := r.last()
	return !ok || t == lt || t-lt >= s.minStep().Milliseconds()
}

// minStep is the shortest span a rate is taken over: 0.8 x resolution, so that a collection
// interval equal to the resolution, which jitters by a few milliseconds, yields a rate on
// every collection.
func (s *store) minStep() time.Duration { return s.resolution * 8 / 10 }

// rate updates the counter state of key with a cumulative point.
func (s *store) rate(n *node, key string, dp pmetric.NumberDataPoint) (float64, bool) {
	c := n.counters[key]
	if c == nil {
		if len(n.counters) >= 4*s.maxSeries {
			return 0, false
		}
		c = &counterState{}
		n.counters[key] = c
	}
	return c.rate(dp.StartTimestamp(), dp.Timestamp(), nodestate.PointValue(dp), int64(s.minStep()))
}

// portCounter turns an RDMA port's congestion counter into a per-second series on the port
// chart: CNPs sent (this node saw ECN marks) and handled (it slowed down), ECN-marked packets,
// xmit_wait ticks, PFC pause frames by direction (priorities summed). The PFC counters are the
// Ethernet device's (ethtool statistics of the netdev behind the port), named after it.
func (s *store) portCounter(n *node, name string, a pcommon.Map, dp pmetric.NumberDataPoint) {
	dev := attr(a, "device")
	owner := "RNIC(" + portName(dev) + ")"
	var what, key string
	switch name {
	case nodestate.MetricCNP:
		what = strings.ReplaceAll(attr(a, "counter"), "_", " ")
		key = attr(a, "counter")
	case nodestate.MetricECN:
		what, key = "ECN marked", "ecn_marked"
	case nodestate.MetricXmitWait:
		what, key = "xmit_wait", "xmit_wait"
	case nodestate.MetricPFCFrames:
		dir := attr(a, "direction")
		what, key = "PFC pause["+directionTag(dir)+"]", "pfc_pause_"+dir
		owner = "NET(" + dev + ")"
	}
	r, ok := s.rate(n, name+"|"+dev+"|"+attr(a, "counter")+"|"+attr(a, "direction")+"|"+attr(a, "priority"), dp)
	if !ok {
		return
	}
	if name != nodestate.MetricPFCFrames {
		if p := s.portFor(n, dev); p != nil {
			p.seen = s.now()
		}
	}
	sr := s.seriesFor(n, series{id: "port/" + dev + "/" + key, label: owner + " " + what, component: "rnic_port",
		direction: key, device: dev, unit: "1/s", axis: axisEvents})
	if sr != nil {
		sr.ring.push(ms(dp.Timestamp()), r)
	}
}

// consumeLogs keeps the diagnosis connector's verdict changes.
func (s *store) consumeLogs(ld plog.Logs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		n := s.node(nodestate.Key(rl.Resource()))
		if n == nil {
			continue
		}
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				a := lr.Attributes()
				which := attr(a, verdict.AttrVerdict)
				if which == "" {
					continue // not a verdict change
				}
				n.lastSeen = now
				ts := lr.Timestamp()
				if ts == 0 {
					ts = lr.ObservedTimestamp()
				}
				key := diagKey{owner: verdictOwner(a), device: attr(a, verdict.AttrDevice)}
				if !room(s, n.diag.sentences, key) {
					continue
				}
				// The evidence is one double attribute per ratio (internal/verdict).
				n.diag.addSentence(sentence{t: ms(ts), verdict: which, previous: attr(a, verdict.AttrPrevious), key: key,
					body: lr.Body().AsString(), evidence: verdict.Evidence(a)})
			}
		}
	}
}
