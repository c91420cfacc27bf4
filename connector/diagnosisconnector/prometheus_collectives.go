package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// Recorded series of the communicator verdicts.
const (
	recPathCapacity     = "iclens_diagnosis:path_capacity_bytes"
	recGPUNICCapacity   = "iclens_diagnosis:gpu_nic_capacity_bytes"
	recGPULinkCapacity  = "iclens_diagnosis:gpu_link_capacity_bytes"
	recGPUPathCapacity  = "iclens_diagnosis:gpu_path_capacity_bytes"
	recCommPathCapacity = "iclens_diagnosis:collective_path_capacity_bytes"
	recCollBusBw        = "iclens_diagnosis:collective_bus_bandwidth_bytes"
)

// laneBandwidth is pci.LaneBandwidth of the generation gen (an instant vector) as PromQL: 8b/10b
// at Gen1 and Gen2, 128b/130b at Gen3 to Gen5, 1/1 at Gen6; absent for another.
func laneBandwidth(gen string) string {
	return fmt.Sprintf("(2.5e8 * (%[1]s <= 2)) or (1e9 * 128 / 130 * 2 ^ ((%[1]s >= 3 <= 5) - 3)) or (8e9 * (%[1]s == 6) / 6)", gen)
}

// collectiveRules appends the recording rules of the communicator verdicts (collectives.go) and
// sets their alerts' expressions; present is the expression of the ports that report.
func collectiveRules(cfg *Config, rules *[]Rule, exprs map[string]string, present string) {
	node := nodeLabel
	f := promFloat
	comm := node + ", nccl_comm_id"
	stall := promDuration(cfg.CollectiveStallAfter)
	ops := promNames[nodestate.MetricRASOperations] + `{bound="max"}`
	peaks := fmt.Sprintf("(max_over_time(%s[%s]) and on (%s, device) %s)", promNames[nodestate.MetricPortRate], promDuration(cfg.PortRateMemory), node, present)
	gpu := node + ", pci_bus_id"
	maxGen := fmt.Sprintf("max by (%s) (%s)", gpu, promNames[nodestate.MetricGPUMaxGen])
	// The GPUs of each communicator's ranks on the node, "" for a rank not joined to one
	// (nodestate.Collective.Buses).
	commGPUs := fmt.Sprintf(`group by (%s, pci_bus_id) (%s{nccl_comm_nodes!="1"})`, comm, promNames[nodestate.MetricCollBusBandwidth])
	*rules = append(*rules,
		// What the node's fastest present port carries: its highest rate within port_rate_memory
		// (collectiveView.node), the path of a GPU without one of its own.
		Rule{Record: recPathCapacity, Expr: fmt.Sprintf("max by (%s) %s", node, peaks)},
		// Per GPU, its nearest NIC's fastest present port (the ports of NIC mlx5_0 are mlx5_0/<n>):
		// what a port can carry is its highest rate within port_rate_memory, or its model's
		// highest on the node (fastestPort).
		Rule{Record: recGPUNICCapacity, Expr: fmt.Sprintf("label_replace(max by (%[1]s, gpu_pci_bus_id) (\n"+
			"  max by (%[1]s, iclens_nic) (label_replace(%[2]s or label_replace(%[4]s, \"iclens_peer\", \"1\", \"\", \"\"), \"iclens_nic\", \"$1\", \"device\", \"(.+)/[^/]+\"))\n"+
			"  * on (%[1]s, iclens_nic) group_right ()\n"+
			"  (0 * label_replace(%[3]s, \"iclens_nic\", \"$1\", \"device\", \"(.+)\") + 1)\n"+
			"), \"pci_bus_id\", \"$1\", \"gpu_pci_bus_id\", \"(.+)\")",
			node, peaks, promNames[nodestate.MetricTopoNearest],
			fmt.Sprintf("max by (%[1]s, hca_type) (%[2]s) * on (%[1]s, hca_type) group_right () (0 * %[2]s + 1)", node, recModelRate))},
		// Per GPU, what its PCIe link carries at its highest generation and width (GPU.LinkCapacity).
		Rule{Record: recGPULinkCapacity, Expr: fmt.Sprintf("(%s) * on (%s) max by (%s) (%s)",
			laneBandwidth(maxGen), gpu, gpu, promNames[nodestate.MetricGPUMaxWidth])},
		// A GPU's path: its NIC's, capped by its link (collectiveView communicatorPath).
		Rule{Record: recGPUPathCapacity, Expr: fmt.Sprintf("min by (%[1]s) (\n"+
			"  label_replace(max by (%[1]s) (%[2]s), \"iclens_limit\", \"nic\", \"\", \"\")\n"+
			"  or label_replace(%[3]s and on (%[1]s) %[2]s, \"iclens_limit\", \"link\", \"\", \"\")\n)",
			gpu, recGPUNICCapacity, recGPULinkCapacity)},
		// A communicator's path: the best of its GPUs' paths, the node's fastest port for a GPU
		// with no path of its own.
		Rule{Record: recCommPathCapacity, Expr: fmt.Sprintf("max by (%[1]s) (\n"+
			"  (%[2]s * on (%[3]s) group_right () %[4]s)\n"+
			"  or (%[5]s * on (%[6]s) group_right () %[4]s)\n)",
			comm, recGPUPathCapacity, gpu, commGPUs, recPathCapacity, node)},
		// Per collective type, the best bus bandwidth of its large messages over the node's
		// ranks (nodestate.CollectiveOp.BusBandwidth), by device <comm>/<collective>; not of a
		// communicator within the node (nccl_comm_nodes 1: NVLink or PCIe carry it, no NIC).
		Rule{Record: recCollBusBw, Expr: fmt.Sprintf(`label_join(max by (%s, nccl_collective) (%s{nccl_message_size=~%q,nccl_comm_nodes!="1"}) * 1e9, "device", "/", "nccl_comm_id", "nccl_collective")`,
			comm, promNames[nodestate.MetricCollBusBandwidth], strings.Join(nodestate.LargeMessageBuckets, "|"))},
		Rule{Record: recordedRatio(verdict.CollectivePathShare), Expr: fmt.Sprintf("%s / on (%s) group_left () %s", recCollBusBw, comm, recCommPathCapacity)},
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
