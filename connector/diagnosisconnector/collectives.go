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
	// capacity is what the node's path carries, one direction (By/s): the highest rate its
	// fastest port reached within port_rate_memory (a port that trained down still could carry
	// its old rate); port names it. NaN without a port.
	capacity float64
	port     string
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
	c := collectiveView{capacity: math.NaN(), idle: map[string]bool{}, enabled: cfg.enabled}
	for _, p := range v.Ports {
		if peak := v.peaks[p.Device]; !(peak <= c.capacity) {
			c.capacity, c.port = peak, p.Device
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

// pathShare is a collective type's bus bandwidth over the path's capacity.
func (v *nodeView) pathShare(op nodestate.CollectiveOp) float64 {
	return op.BusBandwidth / v.coll.capacity
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
			out[verdictKey{verdict.CollectiveSlow, verdict.CollectiveDevice(c.Comm, op.Name)}] = named && v.pathShare(op) < t.CollectiveSlowMaxPathShare
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
			put(verdict.CollectivePathShare, verdict.CollectiveDevice(c.Comm, op.Name), v.pathShare(op))
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
		name, opName, comm, gpu, bps(op.BusBandwidth), 100*v.pathShare(op), v.coll.port, bps(v.coll.capacity), slowCause(v))
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
				return fmt.Sprintf("%s runs at %s, below the %s it can reach", k.device, gbps(p.Rate), gbps(v.coll.capacity))
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
