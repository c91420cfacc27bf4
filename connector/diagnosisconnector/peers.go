package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// The cross-node verdict (README.md#waits-on-peer). A job's collectives synchronise its nodes:
// every step waits for the slowest member, so when one node of a ring falls back to TCP or
// bounces through host memory, the others' RDMA throughput drops with no cause of their own, and
// on their own they look healthy at a lower rate, or idle. A node with no fault of its own whose
// group (the same job, or the same NCCL communicator) holds a node with one waits on that peer.

// evaluation is one node's evaluation in an evaluation pass: its view and its verdicts'
// conditions, which the cross-node pass reads across nodes before any is decided.
type evaluation struct {
	n    *node
	v    *nodeView
	cond map[verdictKey]bool
}

// peerFault is the fault a waiting node's peer has, and the group they share.
type peerFault struct {
	fault verdictKey
	group nodestate.Group
}

// ownFault returns the first of a node's conditions a peer would wait on (verdict.PeerFaults in
// order, a device's in natural order), and whether any holds: enabled verdicts only, as only
// those have alerts in the rules and are reported at all.
func ownFault(cond map[verdictKey]bool, enabled func(string) bool) (verdictKey, bool) {
	best, found := verdictKey{}, false
	rank := map[string]int{}
	for i, f := range verdict.PeerFaults() {
		rank[f] = i + 1
	}
	for k, holds := range cond {
		r := rank[k.verdict]
		if !holds || r == 0 || !enabled(k.verdict) {
			continue
		}
		if !found || r < rank[best.verdict] || r == rank[best.verdict] && natorder.Compare(k.device, best.device) < 0 {
			best, found = k, true
		}
	}
	return best, found
}

// peerConditions adds waits_on_peer to each node's conditions: on a node with no fault of its
// own, for the peer it waited on at the last evaluation while that one is still faulty and in a
// group with it (a second faulty peer does not move the wait and restart its hold), else for the
// first faulty peer (in natural order of names) of any of its groups; the peer's fault is kept on
// the view for the sentence. A node that waited before and no longer does gets the condition
// false once, so that its verdict's series ends with a 0 and its clearing is logged.
func peerConditions(enabled func(string) bool, evals []evaluation) {
	groups := make([][]nodestate.Group, len(evals))
	faults := make([]verdictKey, len(evals))
	faulty := make([]bool, len(evals))
	byName := make(map[string]int, len(evals))
	for i, ev := range evals {
		groups[i] = ev.v.Groups()
		faults[i], faulty[i] = ownFault(ev.cond, enabled)
		byName[ev.n.Name] = i
	}
	// Each group's first faulty member: one pass over the memberships, not one per member (a
	// communicator of a 2048-node job has 2048).
	first := map[nodestate.Group]int{}
	before := func(i, j int) bool { return natorder.Compare(evals[i].n.Name, evals[j].n.Name) < 0 }
	for i := range evals {
		if !faulty[i] {
			continue
		}
		for _, g := range groups[i] {
			if j, ok := first[g]; !ok || before(i, j) {
				first[g] = i
			}
		}
	}
	for i, ev := range evals {
		peer := -1
		var group nodestate.Group
		if !faulty[i] {
			for _, g := range groups[i] {
				if j, ok := first[g]; ok && (peer < 0 || before(j, peer)) {
					peer, group = j, g
				}
			}
		}
		for k, c := range ev.n.streak {
			if k.verdict != verdict.WaitsOnPeer || c == 0 && !ev.n.deviceHeld[k] {
				continue
			}
			ev.cond[k] = false
			// Still faulty and still in a group with this node: the wait stays on it.
			if j, ok := byName[k.device]; ok && peer >= 0 && j != peer && faulty[j] {
				if g, shared := sharedGroup(groups[i], groups[j]); shared {
					peer, group = j, g
				}
			}
		}
		if peer >= 0 {
			name := evals[peer].n.Name
			ev.cond[verdictKey{verdict.WaitsOnPeer, name}] = true
			ev.v.peers = map[string]peerFault{name: {fault: faults[peer], group: group}}
		}
	}
}

// sharedGroup returns the first group of a that b belongs to too.
func sharedGroup(a, b []nodestate.Group) (nodestate.Group, bool) {
	for _, g := range a {
		for _, h := range b {
			if g == h {
				return g, true
			}
		}
	}
	return nodestate.Group{}, false
}

// peerSentence says whom the node waits on and why: "node2 waits on node1 (job 4711): node1 is on
// TCP (tcp_fallback)".
func peerSentence(name, peer string, v *nodeView) string {
	pf, ok := v.peers[peer]
	if !ok {
		return fmt.Sprintf("%s waits on %s", name, peer)
	}
	var what string
	switch pf.fault.verdict {
	case verdict.TCPFallback:
		what = peer + " is on TCP"
	case verdict.GPUDirectBounce:
		what = peer + "'s GPUDirect RDMA bounces through host memory"
	case verdict.FabricCongestion:
		what = peer + "'s ports are congested"
	case verdict.PFCStorm:
		what = peer + "'s " + pf.fault.device + " is in a PFC pause storm"
	case verdict.LinkDegraded:
		what = peer + "'s " + pf.fault.device + " runs below its capability"
	case verdict.Straggler:
		comm, op, _ := strings.Cut(pf.fault.device, "/")
		what = peer + " is the straggler of NCCL communicator " + comm + " in " + op
	default:
		what = peer + ": " + strings.ReplaceAll(pf.fault.verdict, "_", " ")
	}
	return fmt.Sprintf("%s waits on %s (%s): %s (%s); this node shows no fault of its own (RDMA %s, GPU PCIe %s): the %s's collectives run at its slowest member's pace, fix %s first",
		name, peer, pf.group, what, pf.fault.verdict, bps(v.rdma), bps(v.gpu), groupWord(pf.group), peer)
}

func groupWord(g nodestate.Group) string {
	if g.Kind == nodestate.GroupComm {
		return "communicator"
	}
	return "job"
}
