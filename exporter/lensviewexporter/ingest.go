package lensviewexporter

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Metrics the view reads; everything else in the pipeline is ignored.
const (
	metricIO          = "interconnect.io"
	metricDRAMActive  = "gpu.dram.active"
	metricPortRate    = "rnic.port.rate"
	metricPortWidth   = "rnic.port.width"
	metricPortState   = "rnic.port.state"
	metricPortInfo    = "rnic.port.info"
	metricSaturated   = "rnic.counter.saturated"
	metricCNP         = "rnic.roce.cnp"
	metricECN         = "rnic.roce.ecn_marked"
	metricXmitWait    = "rnic.port.xmit_wait"
	metricPFCPause    = "rnic.pfc.pause_frames"
	metricTopoDist    = "rnic.topology.gpu_distance"
	metricTopoNearest = "rnic.topology.nearest_rnic"
	metricTopoReady   = "rnic.topology.gpudirect_ready"
	metricTopoACS     = "rnic.topology.acs_redirect"
	metricTopoIOMMU   = "rnic.topology.iommu"
	metricTopoDegrade = "rnic.topology.link.degraded"
	metricTopoPeerMem = "rnic.topology.peer_memory"
	metricGPUInfo     = "gpu.info"
	metricGPUWidth    = "gpu.pcie.link.width"
	metricGPUMaxWidth = "gpu.pcie.link.max_width"
)

// hostName is the node a resource belongs to.
func hostName(res pcommon.Resource) string {
	if v, ok := res.Attributes().Get("host.name"); ok {
		return v.AsString()
	}
	return ""
}

func attr(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func pointValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
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
		n := s.node(hostName(rm.Resource()))
		if n == nil {
			continue
		}
		n.lastSeen = now
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

func (s *store) consumeMetric(n *node, m pmetric.Metric) {
	name := m.Name()
	if name != metricIO && name != metricDRAMActive && name != metricGPUInfo && name != metricGPUWidth && name != metricGPUMaxWidth &&
		!strings.HasPrefix(name, "rnic.") && !strings.HasPrefix(name, "diagnosis.") {
		return
	}
	dps, cumulative := numberPoints(m)
	for i := range dps.Len() {
		dp := dps.At(i)
		a := dp.Attributes()
		t := ms(dp.Timestamp())
		switch name {
		case metricIO:
			if !cumulative {
				continue
			}
			comp, dir, dev := attr(a, "component"), attr(a, "direction"), attr(a, "device")
			r, ok := s.rate(n, name+"|"+comp+"|"+dir+"|"+dev, dp)
			if !ok {
				continue
			}
			id, label, summed := bandwidthSeries(comp, dir, dev)
			if summed {
				dev = ""
			}
			sr := s.seriesFor(n, series{id: id, label: label, component: comp, direction: dir, device: dev, unit: "By/s", axis: axisBytes})
			if sr != nil {
				sr.ring.push(t, r)
			}
		case metricDRAMActive:
			dev := attr(a, "device")
			sr := s.seriesFor(n, series{id: "gpu_dram_active/" + dev, label: gpuName(dev) + " MEM BW[RD/WR]", component: "gpu_dram_active",
				device: dev, unit: "1", axis: axisRatio})
			if sr != nil && s.stepped(sr.ring, t) {
				sr.ring.set(t, pointValue(dp))
			}
		case metricPortRate, metricPortWidth, metricPortState:
			p := s.portFor(n, attr(a, "device"))
			if p == nil {
				continue
			}
			p.seen = s.now()
			v := pointValue(dp)
			switch name {
			case metricPortRate:
				p.rate = v
			case metricPortWidth:
				p.width = int64(v)
			case metricPortState:
				p.state = int64(v)
			}
		case metricPortInfo:
			// The port's Ethernet device, whose ethtool statistics carry the PFC counters.
			if p := s.portFor(n, attr(a, "device")); p != nil && attr(a, "netdev") != "" {
				p.netdev = attr(a, "netdev")
			}
		case metricSaturated:
			if p := s.portFor(n, attr(a, "device")); p != nil && pointValue(dp) == 1 && room(s, p.saturated, attr(a, "counter")) {
				p.saturated[attr(a, "counter")] = dp.Timestamp().AsTime()
			}
		case metricCNP, metricECN, metricXmitWait, metricPFCPause:
			if cumulative {
				s.portCounter(n, name, a, dp)
			}
		case metricTopoDist, metricTopoNearest, metricTopoReady, metricTopoACS:
			gpu := attr(a, "gpu.pci.bus_id")
			if !room(s, n.topo.pairs, gpu+"|"+attr(a, "device")) {
				continue
			}
			p := n.topo.pair(gpu, attr(a, "device"), t)
			v := fact{v: int64(pointValue(dp)), t: t}
			switch name {
			case metricTopoDist:
				p.distance = v
				p.path = attr(a, "pcie.path")
			case metricTopoNearest:
				p.nearest = true
				p.path = attr(a, "pcie.path")
			case metricTopoReady:
				p.ready = v
				p.reason = attr(a, "gpudirect.reason")
			case metricTopoACS:
				p.acs = v
			}
		case metricTopoIOMMU:
			if k := attr(a, "device"); room(s, n.topo.iommu, k) {
				n.topo.iommu[k] = factString{v: attr(a, "iommu.mode"), t: t}
			}
		case metricTopoDegrade:
			if k := attr(a, "device"); room(s, n.topo.degraded, k) {
				n.topo.degraded[k] = fact{v: int64(pointValue(dp)), t: t}
			}
		case metricGPUInfo:
			if k := attr(a, "pci.bus_id"); k != "" && room(s, n.topo.gpuNames, k) {
				n.topo.gpuNames[k] = factString{v: attr(a, "device"), t: t}
			}
		case metricGPUWidth, metricGPUMaxWidth:
			if k := attr(a, "device"); room(s, n.topo.gpuWidth, k) {
				l, v := n.topo.gpuLinkFor(k), fact{v: int64(pointValue(dp)), t: t}
				if name == metricGPUWidth {
					l.width = v
				} else {
					l.maxWidth = v
				}
			}
		case metricTopoPeerMem:
			if k := attr(a, "mechanism"); room(s, n.topo.peerMem, k) {
				n.topo.peerMem[k] = fact{v: int64(pointValue(dp)), t: t}
			}
		case metricVerdict:
			dev, verdict := attr(a, "device"), attr(a, "verdict")
			if pointValue(dp) != 1 {
				// The verdict that held stopped holding (a port came back to full rate).
				n.diag.clearVerdict(dev, verdict, t)
				continue
			}
			if !room(s, n.diag.verdicts, dev) {
				continue
			}
			n.diag.setVerdict(dev, verdict, t)
			if dev == "" {
				if code := s.verdictIndex(verdict); code >= 0 && s.stepped(n.diag.history, t) {
					n.diag.history.set(t, float64(code))
				}
			}
		case metricEvidence:
			dev, ratio := attr(a, "device"), attr(a, "ratio")
			if room(s, n.diag.evidence, dev) && room(s, n.diag.evidence[dev], ratio) {
				n.diag.setEvidence(dev, ratio, pointValue(dp), t)
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
	return c.rate(dp.StartTimestamp(), dp.Timestamp(), pointValue(dp), int64(s.minStep()))
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
	case metricCNP:
		what = strings.ReplaceAll(attr(a, "counter"), "_", " ")
		key = attr(a, "counter")
	case metricECN:
		what, key = "ECN marked", "ecn_marked"
	case metricXmitWait:
		what, key = "xmit_wait", "xmit_wait"
	case metricPFCPause:
		dir := attr(a, "direction")
		what, key = "PFC pause["+directionTag(dir)+"]", "pfc_pause_"+dir
		owner = "NET(" + dev + ")"
	}
	r, ok := s.rate(n, name+"|"+dev+"|"+attr(a, "counter")+"|"+attr(a, "direction")+"|"+attr(a, "priority"), dp)
	if !ok {
		return
	}
	if name != metricPFCPause {
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
		n := s.node(hostName(rl.Resource()))
		if n == nil {
			continue
		}
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				a := lr.Attributes()
				verdict := attr(a, "verdict")
				if verdict == "" {
					continue // not a verdict change
				}
				n.lastSeen = now
				ts := lr.Timestamp()
				if ts == 0 {
					ts = lr.ObservedTimestamp()
				}
				if !room(s, n.diag.sentences, attr(a, "device")) {
					continue
				}
				n.diag.addSentence(sentence{t: ms(ts), verdict: verdict, previous: attr(a, "previous_verdict"), device: attr(a, "device"),
					body: lr.Body().AsString(), evidence: attr(a, "evidence")})
			}
		}
	}
}
