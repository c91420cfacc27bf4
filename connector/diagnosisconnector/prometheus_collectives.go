package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// Recorded series of the communicator verdicts.
const (
	recPathCapacity = "iclens_diagnosis:path_capacity_bytes"
	recCollBusBw    = "iclens_diagnosis:collective_bus_bandwidth_bytes"
)

// collectiveRules appends the recording rules of the communicator verdicts (collectives.go) and
// sets their alerts' expressions; present is the expression of the ports that report.
func collectiveRules(cfg *Config, rules *[]Rule, exprs map[string]string, present string) {
	node := nodeLabel
	f := promFloat
	comm := node + ", nccl_comm_id"
	stall := promDuration(cfg.CollectiveStallAfter)
	ops := promNames[nodestate.MetricRASOperations] + `{bound="max"}`
	*rules = append(*rules,
		// What the node's path carries: its fastest present port's highest rate within
		// port_rate_memory (collectiveView.capacity).
		Rule{Record: recPathCapacity, Expr: fmt.Sprintf("max by (%s) (max_over_time(%s[%s]) and on (%s, device) %s)",
			node, promNames[nodestate.MetricPortRate], promDuration(cfg.PortRateMemory), node, present)},
		// Per collective type, the best bus bandwidth of its large messages over the node's
		// ranks (nodestate.CollectiveOp.BusBandwidth), by device <comm>/<collective>; not of a
		// communicator within the node (nccl_comm_nodes 1: NVLink or PCIe carry it, no NIC).
		Rule{Record: recCollBusBw, Expr: fmt.Sprintf(`label_join(max by (%s, nccl_collective) (%s{nccl_message_size=~%q,nccl_comm_nodes!="1"}) * 1e9, "device", "/", "nccl_comm_id", "nccl_collective")`,
			comm, promNames[nodestate.MetricCollBusBandwidth], strings.Join(nodestate.LargeMessageBuckets, "|"))},
		Rule{Record: recordedRatio(verdict.CollectivePathShare), Expr: fmt.Sprintf("%s / on (%s) group_left () %s", recCollBusBw, node, recPathCapacity)},
	)
	// Only where another verdict's condition holds in the same evaluation (collectiveConditions):
	// the alerts before this one in the group are evaluated first, their ALERTS samples (pending
	// from the first evaluation their condition holds) stamped with this evaluation's time.
	// The cross-node verdicts come after this alert in the group and are decided after the
	// communicators' in the connector too (connector.go): they explain nothing here.
	var others []string
	for _, v := range verdict.Names() {
		switch v {
		case verdict.CollectiveSlow, verdict.CollectiveStalled, verdict.Straggler, verdict.WaitsOnPeer:
		default:
			others = append(others, v)
		}
	}
	exprs[verdict.CollectiveSlow] = fmt.Sprintf("max by (%s, device) (%s < %s)\nand on (%s)\ncount by (%s) (ALERTS{alertstate=~\"pending|firing\", verdict=~%q})",
		node, recordedRatio(verdict.CollectivePathShare), f(cfg.Thresholds.CollectiveSlowMaxPathShare), node, node, strings.Join(others, "|"))
	// Failed ranks, or a count that stood still for collective_stall_after, on a communicator
	// seen that long, while another's moved.
	exprs[verdict.CollectiveStalled] = fmt.Sprintf("max by (%[6]s, device) (label_replace(\n"+
		"  (sum by (%[1]s) (%[2]s{rank_state=~%[3]q}) > 0)\n"+
		"  or\n"+
		"  ((max by (%[1]s) (changes(%[4]s[%[5]s])) == 0)\n"+
		"    and on (%[1]s) max by (%[1]s) (%[4]s offset %[5]s)\n"+
		"    and on (%[6]s) (max by (%[6]s) (changes(%[4]s[%[5]s])) > 0)),\n"+
		"  \"device\", \"$1\", \"nccl_comm_id\", \"(.*)\"))",
		comm, promNames[nodestate.MetricRASRanks], strings.Join(nodestate.FailedRankStates, "|"), ops, stall, node)
}
