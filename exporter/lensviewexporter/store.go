package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// store is everything the view shows: per node, a ring per series and the latest facts. All of
// it is bounded: a ring holds at most window/resolution points (plus a quarter for the jitter
// of collection), a node at most maxSeries series, the store at most maxNodes nodes; nodes that
// stop reporting and series that stop moving are forgotten.
type store struct {
	mu sync.RWMutex

	window      time.Duration
	resolution  time.Duration
	nodeTimeout time.Duration
	maxNodes    int
	maxSeries   int
	ringPoints  int

	nodes     map[string]*node
	lastSweep time.Time
	// now is the wall clock (a test replaces it).
	now func() time.Time

	logger       *zap.Logger
	evictions    *nodestate.Evictions
	telemetry    storeTelemetry
	warnedSeries bool
	// maxSkew refuses points stamped further than this from now (config max_clock_skew);
	// warnedSkew says it once.
	maxSkew             time.Duration
	warnedSkew          bool
	unnamed             string // node name for resources without host.name: this host's name
	verdictNames        []string
	verdictCode         map[string]int
	warnedVerdictsLimit bool
}

func newStore(cfg *Config, logger *zap.Logger, unnamed string) *store {
	points := int(cfg.Window / cfg.Resolution)
	return &store{
		window: cfg.Window, resolution: cfg.Resolution, nodeTimeout: cfg.NodeTimeout,
		maxNodes: cfg.MaxNodes, maxSeries: cfg.MaxSeriesPerNode,
		// Rates are taken over at least 0.8 x resolution (counters.go), so a window holds up to
		// 1.25 x window/resolution points.
		ringPoints: points + points/4 + 1,
		nodes:      map[string]*node{}, now: time.Now, logger: logger, unnamed: unnamed,
		evictions: nodestate.NewEvictions(logger), maxSkew: cfg.MaxClockSkew, telemetry: nopTelemetry{},
		verdictCode: map[string]int{},
	}
}

// node is one host.name's state.
type node struct {
	name     string
	lastSeen time.Time

	series   map[string]*series
	counters map[string]*counterState
	ports    map[string]*port
	// state is the node's state as the diagnosis connector reads it (ports, GPUs, topology).
	state *nodestate.Node
	diag  diagnosis
}

// series is one line of a chart.
type series struct {
	id        string
	label     string
	component string
	direction string
	device    string
	// kind is what a line beside an average is (bursts.go: kindPeak, kindAbove), "" for the
	// rest.
	kind string
	// bus is the PCI address of the device an interconnect.io line is of (its pci.bus_id), which
	// the owner receiver keys ownership by; "" for the per-node sums and the other lines.
	bus  string
	unit string
	axis string
	ring *ring
}

// port is an RDMA port's link and the ids of its congestion series.
type port struct {
	device string
	netdev string  // its Ethernet device (rnic.port.info), whose PFC counters the row shows
	rate   float64 // bytes/s of the trained link (rnic.port.rate)
	width  int64   // lanes
	state  int64   // 4 ACTIVE
	seen   time.Time
	// saturated: counters the receiver reported stuck at all ones (rnic.counter.saturated), by
	// kernel counter name, and when; their series stop meanwhile.
	saturated map[string]time.Time
}

func (s *store) node(name string) *node {
	if name == "" {
		name = s.unnamed
	}
	n := s.nodes[name]
	if n != nil {
		return n
	}
	for len(s.nodes) >= s.maxNodes {
		// The least recently seen node makes room: a fleet larger than max_nodes shows the nodes
		// that report now, not the first max_nodes that ever did.
		var oldest *node
		for _, o := range s.nodes {
			if oldest == nil || o.lastSeen.Before(oldest.lastSeen) {
				oldest = o
			}
		}
		delete(s.nodes, oldest.name)
		s.evictions.Evicted(s.now(), oldest.name, s.maxNodes)
		s.telemetry.evicted(1)
	}
	n = &node{name: name, series: map[string]*series{}, counters: map[string]*counterState{}, ports: map[string]*port{}}
	// The state's series are a node's gauges and counters, bounded as its counters are.
	n.state = nodestate.New(name, nodestate.Limits{MaxSeries: 4 * s.maxSeries, MaxSkew: s.maxSkew})
	n.diag.init(s.ringPoints)
	s.nodes[name] = n
	return n
}

// seriesFor returns the node's series id, creating it from proto; nil once the node has
// maxSeries series.
func (s *store) seriesFor(n *node, proto series) *series {
	if sr := n.series[proto.id]; sr != nil {
		return sr
	}
	if len(n.series) >= s.maxSeries {
		if !s.warnedSeries {
			s.warnedSeries = true
			s.logger.Warn("lensview keeps no more series for a node; raise max_series_per_node", zap.Int("max_series_per_node", s.maxSeries),
				zap.String("node", n.name), zap.String("series", proto.label))
		}
		return nil
	}
	sr := proto
	sr.ring = newRing(s.ringPoints)
	n.series[sr.id] = &sr
	return &sr
}

// room reports whether one of a node's tables (ports, topology facts, verdicts by device) may
// take the key: each is bounded like the node's series, whatever the pipeline sends.
func room[K comparable, V any](s *store, m map[K]V, k K) bool {
	_, ok := m[k]
	return ok || len(m) < s.maxSeries
}

// portFor returns the node's port, creating it; nil when the node has max_series_per_node ports.
func (s *store) portFor(n *node, device string) *port {
	p := n.ports[device]
	if p == nil && room(s, n.ports, device) {
		p = &port{device: device, width: -1, state: -1, saturated: map[string]time.Time{}}
		n.ports[device] = p
	}
	return p
}

// sweep forgets nodes that stopped reporting and series, counters, ports and topology facts
// older than the window. It runs at most every few seconds, under the write lock.
func (s *store) sweep(now time.Time) {
	if now.Sub(s.lastSweep) < 5*time.Second {
		return
	}
	s.lastSweep = now
	oldest := now.Add(-s.window).UnixMilli()
	for name, n := range s.nodes {
		if now.Sub(n.lastSeen) > s.nodeTimeout {
			delete(s.nodes, name)
			continue
		}
		for id, sr := range n.series {
			if t, _, ok := sr.ring.last(); !ok || t < oldest {
				delete(n.series, id)
			}
		}
		for k, c := range n.counters {
			if c.t < oldest {
				delete(n.counters, k)
			}
		}
		for k, p := range n.ports {
			if p.seen.UnixMilli() < oldest {
				delete(n.ports, k)
			}
		}
		n.state.Forget(now.UnixNano(), s.window)
		n.diag.forget(oldest)
	}
}

// verdictIndex is the code a verdict name is kept under in the history ring (a small table,
// so that the ring holds numbers); -1 once 64 different names were seen.
func (s *store) verdictIndex(name string) int {
	if i, ok := s.verdictCode[name]; ok {
		return i
	}
	if len(s.verdictNames) >= 64 {
		if !s.warnedVerdictsLimit {
			s.warnedVerdictsLimit = true
			s.logger.Warn("lensview: more than 64 different verdicts; further ones are not drawn in the history", zap.String("verdict", name))
		}
		return -1
	}
	s.verdictCode[name] = len(s.verdictNames)
	s.verdictNames = append(s.verdictNames, name)
	return s.verdictCode[name]
}
