package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// recGroup is 1 for each group a node belongs to (nodestate.State.Groups), label iclens_group
// (job:4711, comm:0x7f8c).
const recGroup = "iclens_diagnosis:group_member"

// peerRules appends the recording rule of the nodes' groups and sets waits_on_peer's expression
// (peers.go): a node with no fault of its own, in a group with a node that has one, waits on
// that peer. A rule engine that evaluates these rules over every node's series (Prometheus,
// Thanos or Mimir rulers) is the cross-node evaluator beyond one gateway.
func peerRules(rules *[]Rule, exprs map[string]string) {
	node := nodeLabel
	nccl := make([]string, 0, 3)
	for _, m := range []string{nodestate.MetricCollSamples, nodestate.MetricRASRanks, nodestate.MetricRASOperations} {
		nccl = append(nccl, promNames[m])
	}
	*rules = append(*rules, Rule{Record: recGroup, Expr: fmt.Sprintf("max by (%[1]s, iclens_group) (\n"+
		"  label_replace(group by (%[1]s, job_id) (%[2]s{owner_kind=\"job\",job_id!=\"\"} == 1), \"iclens_group\", \"job:$1\", \"job_id\", \"(.+)\")\n"+
		"  or\n"+
		"  label_replace(group by (%[1]s, nccl_comm_id) ({__name__=~%[3]q,nccl_comm_id!=\"\"}), \"iclens_group\", \"comm:$1\", \"nccl_comm_id\", \"(.+)\"))",
		node, promOwner, strings.Join(nccl, "|"))})
	// The peers' faults are their alerts' conditions in this evaluation (pending from the first
	// evaluation their condition holds: the alerts before this one in the group are evaluated
	// first), the node's own alerts only (owner alerts carry owner_kind).
	fault := fmt.Sprintf("max by (%s) (ALERTS{alertstate=~\"pending|firing\",owner_kind=\"\",verdict=~%q})",
		node, strings.Join(verdict.PeerFaults(), "|"))
	// One faulty peer per group: PromQL joins one to many, not many to many, so where a group
	// holds several faulty nodes the rule names one of them (topk keeps the series it met first,
	// in the order of storage; the connector the first by name); each of those has its own
	// fault alert. A node in two groups with different faulty peers gets an alert per peer.
	peer := fmt.Sprintf("topk by (iclens_group) (1, max by (iclens_group, peer) (label_replace(%s * on (%s) group_left () %s, \"peer\", \"$1\", \"%s\", \"(.*)\")))",
		recGroup, node, fault, node)
	// Every member of the group, the faulty ones (the peer among them) left out.
	exprs[verdict.WaitsOnPeer] = fmt.Sprintf("max by (%s, device) (label_replace(%s * on (iclens_group) group_left (peer) %s, \"device\", \"$1\", \"peer\", \"(.*)\"))\nunless on (%s)\n%s",
		node, recGroup, peer, node, fault)
}
