package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"sort"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// nodeSummary is one entry of /api/nodes.
type nodeSummary struct {
	Name     string `json:"name"`
	LastSeen int64  `json:"last_seen"`
	Series   int    `json:"series"`
	Verdict  string `json:"verdict,omitempty"`
}

// nodeJSON is /api/node: everything the page draws for one node. Times are unix milliseconds.
type nodeJSON struct {
	Node      string         `json:"node"`
	Now       int64          `json:"now"`
	WindowMs  int64          `json:"window_ms"`
	RefreshMs int64          `json:"refresh_ms"`
	Series    []seriesJSON   `json:"series"`
	Ports     []portRow      `json:"ports"`
	Topology  topology       `json:"topology"`
	Diagnosis diagnosisJSON  `json:"diagnosis"`
	Observed  observedRatios `json:"observed"`
	// Owners are the pods and jobs owning a device of the node now (the owner receiver's
	// interconnect.owner), empty without one; Owner is the one the view is filtered by
	// (ownerview.go), "" for the whole node.
	Owners []ownerJSON `json:"owners"`
	Owner  string      `json:"owner,omitempty"`
}

// seriesJSON is one line: its points after the request's since, oldest first.
type seriesJSON struct {
	ID        string    `json:"id"`
	Label     string    `json:"label"`
	Component string    `json:"component"`
	Direction string    `json:"direction"`
	Device    string    `json:"device"`
	Kind      string    `json:"kind,omitempty"`
	Unit      string    `json:"unit"`
	Axis      string    `json:"axis"`
	T         []int64   `json:"t"`
	V         []float64 `json:"v"`
}

// portRow is an RDMA port's row: its link and the latest per-second congestion counters.
type portRow struct {
	Device       string  `json:"device"`
	RateBytes    float64 `json:"rate_bytes_per_second"`
	Width        int64   `json:"width"`
	State        int64   `json:"state"`
	TransmitRate float64 `json:"transmit_bytes_per_second"`
	LineShare    float64 `json:"transmit_line_share"`
	// Counters are the per-second rates of the counters that still move, over their newest
	// recentIntervals intervals.
	Counters map[string]float64 `json:"counters_per_second"`
	// Saturated are the port's counters stuck at their maximum (kernel names, port_xmit_wait).
	Saturated []string `json:"saturated"`
	// TransmitPeak is the highest transmit rate the rnic receiver's fast sampler saw over one
	// window (PeakWindow) in the newest interval, TimeAbove the share of time the port transmitted
	// at or above each share of its line rate (by burst.share), as the node's state reads them
	// (internal/nodestate); absent without bursts.period.
	TransmitPeak float64            `json:"transmit_peak_bytes_per_second,omitempty"`
	PeakWindow   string             `json:"peak_window,omitempty"`
	TimeAbove    map[string]float64 `json:"transmit_time_above,omitempty"`
}

// recentIntervals is how many of a series' newest intervals the port table's rates average
// (ring.recent).
const recentIntervals = 3

// fresh reports whether a point at t (unix ms) is recent: within three of its series' steps,
// and at least three resolutions or 30 s. A counter the receiver stopped reporting (saturated,
// gone) then shows no rate instead of its last one.
func (s *store) fresh(now time.Time, t, step int64) bool {
	limit := max(3*step, 3*s.resolution.Milliseconds(), 30_000)
	return now.UnixMilli()-t <= limit
}

func (s *store) nodeList() []nodeSummary {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []nodeSummary{}
	for _, n := range s.nodes {
		ns := nodeSummary{Name: n.name, LastSeen: n.lastSeen.UnixMilli(), Series: len(n.series)}
		if v, ok := n.diag.verdicts[diagKey{}]; ok {
			ns.Verdict = v.verdict
		}
		out = append(out, ns)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nodeView returns the node's view with the points newer than since (unix ms; 0 for the whole
// window), the whole node's or, for an owner other than the zero one, that pod's or job's
// (ownerview.go); ok is false for a node the store does not know.
func (s *store) nodeView(name string, since int64, refresh time.Duration, owner nodestate.OwnerID) (nodeJSON, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[name]
	if n == nil {
		return nodeJSON{}, false
	}
	now := s.now()
	oldest := now.Add(-s.window).UnixMilli()
	after := max(since, oldest)
	v := nodeJSON{Node: n.name, Now: now.UnixMilli(), WindowMs: s.window.Milliseconds(), RefreshMs: refresh.Milliseconds(),
		Series: []seriesJSON{}, Ports: []portRow{}, Owner: ownerRef(owner)}
	st := n.state.At(now.UnixNano(), s.window, s.window)
	v.Owners = nodeOwners(st)
	var f *ownerFilter
	if owner.Owns() {
		f = newOwnerFilter(owner, st, n)
	}
	for _, sr := range n.series {
		if !f.keepsDevice(sr.device) {
			continue
		}
		out := seriesJSON{ID: sr.id, Label: sr.label, Component: sr.component, Direction: sr.direction, Device: sr.device,
			Kind: sr.kind, Unit: sr.unit, Axis: sr.axis, T: []int64{}, V: []float64{}}
		sr.ring.since(after, func(t int64, val float64) {
			out.T = append(out.T, t)
			out.V = append(out.V, val)
		})
		v.Series = append(v.Series, out)
	}
	sort.Slice(v.Series, func(i, j int) bool { return seriesLess(v.Series[i], v.Series[j]) })
	for _, p := range n.ports {
		if !f.keepsDevice(p.device) {
			continue
		}
		row := portRow{Device: p.device, RateBytes: p.rate, Width: p.width, State: p.state, Counters: map[string]float64{}, Saturated: []string{}}
		if sr := n.series["rnic/transmit/"+p.device]; sr != nil {
			if _, tx, ok := sr.ring.recent(recentIntervals); ok {
				row.TransmitRate = tx
				if p.rate > 0 {
					row.LineShare = tx / p.rate
				}
			}
		}
		for _, sr := range n.series {
			if sr.axis == axisEvents && (sr.device == p.device || p.netdev != "" && sr.device == p.netdev) {
				if t, val, ok := sr.ring.recent(recentIntervals); ok && s.fresh(now, t, sr.ring.step()) {
					row.Counters[sr.direction] = val
				}
			}
		}
		for counter, at := range p.saturated {
			if s.fresh(now, at.UnixMilli(), 0) {
				row.Saturated = append(row.Saturated, counter)
			}
		}
		sort.Strings(row.Saturated)
		if sp, ok := st.Port(p.device); ok && sp.PeakWindow != "" {
			row.TransmitPeak, row.PeakWindow, row.TimeAbove = sp.TxPeak, sp.PeakWindow, sp.TxAbove
		}
		v.Ports = append(v.Ports, row)
	}
	sort.Slice(v.Ports, func(i, j int) bool { return v.Ports[i].Device < v.Ports[j].Device })
	v.Topology = exportTopology(st, f)
	v.Diagnosis = n.diag.export(s.verdictNames, oldest, f)
	v.Observed = observe(n, now.Add(-observeSpan).UnixMilli(), v.Ports, f)
	return v, true
}

// seriesLess orders the legend along the data path (naming.go), transmit before receive.
func seriesLess(a, b seriesJSON) bool {
	if oa, ob := componentOrder(a.Component), componentOrder(b.Component); oa != ob {
		return oa < ob
	}
	if a.Device != b.Device {
		return a.Device < b.Device
	}
	return directionOrder(a.Direction) < directionOrder(b.Direction)
}

func directionOrder(d string) int {
	switch d {
	case "transmit", "read":
		return 0
	case "receive", "write":
		return 1
	}
	return 2
}
