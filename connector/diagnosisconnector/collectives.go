package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// The verdicts on NCCL communicators (README.md#collective-slow, #collective-stalled), from the
// nccl receiver's series as nodestate reads them (State.Collectives).

// collectiveView is what one evaluation knows of a node's communicators beyond its State.
type collectiveView struct {
	// node is what the node's fastest port carries: a communicator's path where the topology
	// does not say which NIC its GPUs use. paths: communicator -> what its path carries
	// (pathCapacity), communicators within the node left out.
	node  pathCapacity
	paths map[string]pathCapacity
	// idle: communicator -> its operation count has not moved for collective_stall_after (and
	// it has been seen that long); moving: some communicator's count moved within it.
	idle   map[string]bool
	moving bool
	// holding are the verdicts that hold after this evaluation (set before the logs are
	// written): the node's verdict that explains a slow collective.
	holding map[verdictKey]bool
	// enabled reports whether a verdict is evaluated (Config.Verdicts): only those can explain a
	// slow collective, as only their alerts exist for the rules.
	enabled func(string) bool
}

// pathCapacity is what a path carries in one direction (By/s), and the component that limits it:
// a port (mlx5_0/1) or a GPU's PCIe link; NaN where nothing is known.
type pathCapacity struct {
	bytes float64
	limit string
}

// opsPoint is what the connector remembers of a communicator's RAS operation count.
type opsPoint struct {
	value float64
	// first is when it was first seen, at its newest sample; since is the last sample before
	// its newest change (ns), changed whether it ever changed.
	first, at, since int64
	changed          bool
}

// observeCollectives fills v.coll: the path's capacity from the ports' remembered peaks, and which
// communicators' operation counts stopped moving. As PromQL's changes(x[collective_stall_after])
// in Prometheus 2 (a range selector holds the samples at both of its ends; Prometheus 3 leaves out
// the oldest, which reads a stall one sample sooner): a count is idle once the sample before its
// last change is older than the range, and moving while both samples of a change are in it.
func (n *node) observeCollectives(v *nodeView, cfg *Config) {
	c := collectiveView{node: v.fastestPort(v.Ports), paths: map[string]pathCapacity{}, idle: map[string]bool{}, enabled: cfg.enabled}
	for _, col := range v.Collectives {
		if !col.WithinNode() {
			c.paths[col.Comm] = v.communicatorPath(col, c.node)
		}
	}
	stall := cfg.CollectiveStallAfter.Nanoseconds()
	seen := map[string]bool{}
	for _, col := range v.Collectives {
		if col.Operations < 0 {
			continue
		}
		seen[col.Comm] = true
		m, ok := n.ops[col.Comm]
		switch {
		case !ok:
			m = opsPoint{value: col.Operations, first: col.OperationsAt, at: col.OperationsAt, since: col.OperationsAt}
		case col.OperationsAt > m.at:
			if col.Operations != m.value {
				m.value, m.since, m.changed = col.Operations, m.at, true
			}
			m.at = col.OperationsAt
		}
		n.ops[col.Comm] = m
		// Relative to its newest sample, as a rule evaluated at the scrape reads it.
		if ref := m.at - stall; m.changed && m.since >= ref {
			c.moving = true
		} else if m.first <= ref && m.since < ref {
			c.idle[col.Comm] = true
		}
	}
	for comm := range n.ops {
		if !seen[comm] {
			delete(n.ops, comm)
		}
	}
	v.coll = c
}

// fastestPort is what the fastest of ports can carry, and that port: a port can carry the highest
// rate it reached within port_rate_memory, or that another port of its model on the node trained
// to (Port.PeerRate), as link_degraded reads it: one that trained down, at boot or since, still
// could carry that rate.
func (v *nodeView) fastestPort(ports []nodestate.Port) pathCapacity {
	best := pathCapacity{bytes: math.NaN()}
	for _, p := range ports {
		if can := math.Max(v.peaks[p.Device], p.PeerRate); !(can <= best.bytes) {
			best = pathCapacity{can, p.Device}
		}
	}
	return best
}

// communicatorPath is what a communicator's path carries: the best of its GPUs' paths on this
// node (its bus bandwidth is its best rank's, CollectiveOp.BusBandwidth). A GPU's path is its
// nearest NIC's fastest port (the NIC NCCL gives its rank, rnic.topology.nearest_rnic), capped by
// the GPU's own PCIe link, which GPUDirect RDMA crosses (GPU.LinkCapacity); a GPU the topology
// names no NIC for, or a rank not joined to a GPU, has the node's fastest port.
func (v *nodeView) communicatorPath(c nodestate.Collective, node pathCapacity) pathCapacity {
	best := pathCapacity{bytes: math.NaN()}
	for _, bus := range c.Buses {
		path := node
		if nic, ok := v.NearestNIC(bus); ok {
			if p := v.fastestPort(v.PortsOf(nic)); !math.IsNaN(p.bytes) {
				path = p
				if g, ok := v.GPUAt(bus); ok && g.LinkCapacity() < path.bytes {
					path = pathCapacity{g.LinkCapacity(), "the PCIe link of " + g.Name}
				}
			}
		}
		if !(path.bytes <= best.bytes) {
			best = path
		}
	}
	if len(c.Buses) == 0 {
		return node
	}
	return best
}

// pathShare is a collective type's bus bandwidth over what its communicator's path carries.
func (v *nodeView) pathShare(c nodestate.Collective, op nodestate.CollectiveOp) float64 {
	return op.BusBandwidth / v.coll.paths[c.Comm].bytes
}

// collectiveConditions adds the communicators' verdicts to out, which holds the conditions of
// every other verdict: a collective is slow only where the node's traffic, or a device's fault,
// has a name in the same evaluation, so that the verdict is raised with (never before) the one
// that explains it, and its sentence names that one.
func collectiveConditions(t Thresholds, v *nodeView, out map[verdictKey]bool) {
	if len(v.Collectives) == 0 {
		return // an owner's share of the node, or a node without NCCL
	}
	named := false
	for k, holds := range out {
		named = named || holds && k.verdict != verdict.CollectiveSlow && k.verdict != verdict.CollectiveStalled && v.coll.enabled(k.verdict)
	}
	for _, c := range v.Collectives {
		for _, op := range c.Ops {
			if math.IsNaN(op.BusBandwidth) || c.WithinNode() {
				// No large message: its bus bandwidth says nothing of the links. Within the node:
				// NVLink or PCIe carries it, not the NIC the path's capacity is.
				continue
			}
			out[verdictKey{verdict.CollectiveSlow, verdict.CollectiveDevice(c.Comm, op.Name)}] = named && v.pathShare(c, op) < t.CollectiveSlowMaxPathShare
		}
		if c.Ranks != nil || c.Operations >= 0 {
			out[verdictKey{verdict.CollectiveStalled, c.Comm}] = c.Failed() > 0 || v.coll.idle[c.Comm] && v.coll.moving
		}
	}
}

// collectiveEvidence adds each collective type's path share.
func collectiveEvidence(v *nodeView, put func(ratio, dev string, x float64)) {
	for _, c := range v.Collectives {
		if c.WithinNode() {
			continue
		}
		for _, op := range c.Ops {
			put(verdict.CollectivePathShare, verdict.CollectiveDevice(c.Comm, op.Name), v.pathShare(c, op))
		}
	}
}

// collectiveSentence says what a communicator verdict means, and for a slow collective which
// component explains it: the node's verdict or a port's, or that the hardware looks healthy.
func collectiveSentence(which, device, name string, v *nodeView) string {
	comm, opName, _ := strings.Cut(device, "/")
	c, _ := v.Collective(comm)
	if which == verdict.CollectiveStalled {
		var failed []string
		for _, s := range nodestate.FailedRankStates {
			if c.Ranks[s] > 0 {
				failed = append(failed, fmt.Sprintf("%.0f %s", c.Ranks[s], s))
			}
		}
		if len(failed) > 0 {
			return fmt.Sprintf("%s: NCCL communicator %s is stalled: RAS reports %s of its %d ranks; its collectives cannot complete: find the rank's process (NCCL RAS: ncclras -v), its GPU's XID errors and its node's kernel log, then restart the job",
				name, comm, strings.Join(failed, ", "), c.Size)
		}
		return fmt.Sprintf("%s: NCCL communicator %s is stalled: its operation count has stood at %.0f for at least %s while another communicator of this node advances; look for a rank stuck in a collective (NCCL RAS, ncclras -v; py-spy dump of the rank's process)",
			name, comm, c.Operations, "collective_stall_after")
	}
	op, _ := c.Op(opName)
	gpu := ""
	if c.GPU != "" {
		gpu = " (" + c.GPU + ")"
	}
	return fmt.Sprintf("%s: %s on comm %s%s at %s bus bandwidth, %.0f %% of what %s can carry (%s): %s",
		name, opName, comm, gpu, bps(op.BusBandwidth), 100*v.pathShare(c, op), v.coll.paths[comm].limit, bps(v.coll.paths[comm].bytes), slowCause(v))
}

// slowCause names the component that explains a slow collective, from what else holds on the node.
func slowCause(v *nodeView) string {
	h := v.coll.holding
	var devices []verdictKey
	for k := range h {
		if k.device != "" {
			devices = append(devices, k)
		}
	}
	sort.Slice(devices, func(i, j int) bool {
		return devices[i].device+devices[i].verdict < devices[j].device+devices[j].verdict
	})
	switch {
	case h[verdictKey{verdict.TCPFallback, ""}]:
		nd, rate := busiest(v.Netdevs)
		return fmt.Sprintf("NCCL is on TCP (RDMA %s, %s %s)", bps(v.rdma), nd, bps(rate))
	case h[verdictKey{verdict.GPUDirectBounce, ""}]:
		return fmt.Sprintf("GPUDirect RDMA bounces through host memory (root-port writes %s, %.2f per RDMA byte)", bps(v.PathWrite), v.pathWriteBeyondIP())
	case h[verdictKey{verdict.FabricCongestion, ""}]:
		return fmt.Sprintf("the fabric is congested (RDMA %s, ECN marks and CNPs on the port)", bps(v.rdma))
	}
	for _, k := range devices {
		switch k.verdict {
		case verdict.PFCStorm:
			p, _ := v.Port(k.device)
			return fmt.Sprintf("%s is in a PFC pause storm (paused %s of the time)", k.device, pct(p.PauseTime))
		case verdict.LinkDegraded:
			if p, ok := v.Port(k.device); ok {
				return fmt.Sprintf("%s runs at %s, below the %s it can reach", k.device, gbps(p.Rate), gbps(math.Max(v.peaks[k.device], p.PeerRate)))
			}
			return fmt.Sprintf("the PCIe link of %s trained below its capability", k.device)
		case verdict.GPUDirectNotReady:
			return fmt.Sprintf("GPUDirect RDMA cannot work for %s", k.device)
		}
	}
	// No fault of its own: the collective waits on a peer (a gateway's cross-node verdict).
	for _, k := range devices {
		if k.verdict == verdict.WaitsOnPeer {
			return fmt.Sprintf("the hardware of this node looks healthy (RDMA %s, GPU PCIe %s); it waits on %s (waits_on_peer), whose fault slows the whole communicator",
				bps(v.rdma), bps(v.gpu), k.device)
		}
	}
	return fmt.Sprintf("the hardware looks healthy (RDMA %s, GPU PCIe %s, no fault verdict on this node): look at the job: a straggling rank, NCCL_MAX_NCHANNELS / NCCL_ALGO / NCCL_PROTO, the proxy threads' CPU binding",
		bps(v.rdma), bps(v.gpu))
}
